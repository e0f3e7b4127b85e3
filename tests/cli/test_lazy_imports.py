"""``import sparsescope`` and ``sparsescope --help`` load no GPU library, nor matplotlib
(checked in a fresh interpreter, so nothing imported by other tests can hide an import)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY_MODULES = ("torch", "cupy", "cupyx", "cuda", "triton", "ncu_report", "matplotlib")

PROBE = """
import json, sys
{body}
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {mods})))
"""


def loaded_after(body: str) -> list[str]:
    code = PROBE.format(body=body, mods=set(HEAVY_MODULES))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_loads_no_gpu_library():
    assert loaded_after("import sparsescope, sparsescope.model, sparsescope.errors") == []


def test_help_loads_no_gpu_library():
    body = (
        "from sparsescope.cli import build_parser\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()) as buf:\n"
        "    try:\n"
        "        build_parser().parse_args(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'run' in buf.getvalue() and 'model' in buf.getvalue()\n"
    )
    assert loaded_after(body) == []


def test_console_script_help_runs():
    out = subprocess.run([sys.executable, "-m", "sparsescope", "--help"], capture_output=True,
                         text=True)
    assert out.returncode == 0
    for command in ("run", "model", "matrices", "specs", "report"):
        assert command in out.stdout
