"""What ``sparsescope profile`` hands ncu is a command line of the one target program
(``python -m sparsescope.target case``) for every op: its parser accepts it, and the program,
run in-process on the CPU backends, checks the case once without timing it (the profiled
program's job)."""

from __future__ import annotations

import dataclasses
import sys

import pytest

from sparsescope import target
from sparsescope.ops.registry import get_op
from sparsescope.profile.collect import target_command


def _target_args(command: list[str]) -> list[str]:
    assert command[:3] == [sys.executable, "-m", "sparsescope.target"]
    assert command[3] == "case"
    return command[3:]


@pytest.mark.parametrize("op, backend, params, expected", [
    ("spmm", "spmm-cuda-rowwarp", {"k": 64, "layout": "col"}, {"k": 64, "layout": "col"}),
    ("spmm", "spmm-torch-i64", None, {"k": 8, "layout": "row"}),
    ("slice", "slice-cuda-gather", {"rows_selected": 5000, "weights": "scalar"},
     {"rows_selected": 5000, "rows": None, "weights": "scalar", "out_of_range": "error"}),
    ("slice", "slice-torch", {"rows": (7, 0, 7), "out_of_range": "zero"},
     {"rows_selected": 64, "rows": (7, 0, 7), "weights": "per-nnz", "out_of_range": "zero"}),
    ("spmv", "torch-cusparse-i64", None, {}),
])
def test_the_target_parses_what_profile_passes(op, backend, params, expected):
    command = target_command("dlmc3", "dlmc-512x1024", backend, op=op, scale=0.25,
                             params=params)
    args = target.build_parser().parse_args(_target_args(command))
    assert (args.mode, args.op, args.suite, args.matrix, args.backend) == (
        "case", op, "dlmc3", "dlmc-512x1024", backend)
    assert args.scale == 0.25 and args.seed == 0
    assert args.check_only is True                     # one checked call, no timing protocol
    # the parameters reach the op as the values profile resolved, defaults included
    resolved = get_op(op).resolve_params(target.parse_params(args.param))
    assert dataclasses.asdict(resolved) == expected


@pytest.mark.parametrize("op, suite, matrix, backend, params, line", [
    ("spmm", "dlmc3", "dlmc-128x256", "spmm-scipy-cpu", {"k": 4, "layout": "col"},
     "sparsescope-target: dlmc-128x256 spmm-scipy-cpu spmm: ok (checked only, not timed)"),
    ("slice", "slice003", "slice-1000", "slice-scipy-cpu", {"rows_selected": 16},
     "sparsescope-target: slice-1000 slice-scipy-cpu slice: ok (checked only, not timed)"),
    ("spmv", "seed6", "cant", "scipy-cpu", None,
     "sparsescope-target: cant scipy-cpu spmv: ok (checked only, not timed)"),
])
def test_the_target_runs_the_profiled_case_once(op, suite, matrix, backend, params, line,
                                                capsys):
    scale = 0.001 if suite == "seed6" else 0.1
    command = target_command(suite, matrix, backend, op=op, scale=scale, params=params)
    assert target.main(_target_args(command)) == 0
    assert capsys.readouterr().out.strip() == line


def test_the_target_exit_code_for_a_skipped_case(capsys):
    # a GPU backend on a machine without its library: skipped, exit 3, the reason on stderr
    command = target_command("dlmc3", "dlmc-128x256", "spmm-ginkgo", op="spmm", scale=0.1)
    rc = target.main(_target_args(command))
    err = capsys.readouterr().err
    if rc == 0:  # pragma: no cover - only where pyGinkgo and a GPU are present
        pytest.skip("spmm-ginkgo is available here")
    assert rc == 3
    assert err.startswith("sparsescope-target: dlmc-128x256 spmm-ginkgo spmm: skipped (")


def test_the_target_exit_code_for_a_bad_parameter(capsys):
    # a value the op refuses (an index outside the 100-row matrix) exits 2 with the reason
    command = target_command("slice003", "slice-1000", "slice-scipy-cpu", op="slice",
                             scale=0.1, params={"rows": (3, 100)})
    assert target.main(_target_args(command)) == 2
    err = capsys.readouterr().err
    assert err.startswith("sparsescope-target: error: row index 100 at position 1 is out "
                          "of range for a matrix with 100 rows (valid: 0 to 99)")


def test_the_target_exit_code_for_a_failed_case(monkeypatch, capsys):
    # a backend whose output is wrong: failed, exit 1 (ncu: "The application returned an
    # error code (1)")
    from sparsescope import registry
    from sparsescope.backends.spmm_scipy import SpmmScipyCpu

    class Wrong(SpmmScipyCpu):
        name = "spmm-wrong"

        def run(self, prepared):
            return super().run(prepared) * 2.0

    monkeypatch.setitem(registry.BACKENDS, ("spmm", "spmm-wrong"), Wrong)
    rc = target.main(["case", "--op", "spmm", "--suite", "dlmc3", "--matrix", "dlmc-128x256",
                      "--backend", "spmm-wrong", "--scale", "0.1", "--check-only"])
    assert rc == 1
    err = capsys.readouterr().err
    assert err.startswith("sparsescope-target: dlmc-128x256 spmm-wrong spmm: failed (rel_err ")


def test_the_target_program_runs_as_ncu_starts_it(tmp_path):
    """As a separate ``python -m`` process (what ncu runs), not in-process: the module then
    runs as ``__main__``, and its backends' classes must still be recognised."""
    import os
    import subprocess
    from pathlib import Path

    command = target_command("dlmc3", "dlmc-128x256", "spmm-scipy-cpu", op="spmm",
                             params={"k": 4})
    src = Path(target.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "dlmc-128x256 spmm-scipy-cpu spmm: ok" in done.stdout + done.stderr
