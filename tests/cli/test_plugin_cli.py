"""Plug-in backends through the command line: an installed plug-in package (entry point) and a
``--plugin`` file run end to end on the CPU (checked, timed, in results.json and the report),
in ``sweep`` too; ``model`` predicts a plug-in's kernel; a bad plug-in is one line, exit 2."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

from sparsescope.backends import plugins
from sparsescope.cli import main
from sparsescope.results.io import read_runset

REPO = Path(__file__).resolve().parents[2]
NUMPY_PACKAGE = REPO / "examples" / "plugin_numpy_spmv"
NUMPY_PLUGIN = NUMPY_PACKAGE / "src" / "sparsescope_numpy_spmv" / "__init__.py"
CUDA_PLUGIN = REPO / "examples" / "plugin_cuda_spmv" / "cuda_spmv.py"
FAST = ["--warmups", "1", "--repeats", "3", "--flush", "off"]
#: 4 x 5, 7 nonzeros, an empty row (row 3).
TINY = ("%%MatrixMarket matrix coordinate real general\n4 5 7\n1 1 1.0\n1 4 2.0\n2 2 3.0\n"
        "2 5 -1.5\n4 1 4.0\n4 3 5.0\n4 5 6.0\n")


# each test starts with no plug-in loaded and leaves the registry as it found it
pytestmark = pytest.mark.usefixtures("plugin_registry")


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.mtx"
    path.write_text(TINY)
    return path


def _wheel(package: Path, out: Path) -> Path:
    """A wheel of ``package`` (its ``src/`` modules; name, version and entry points from its
    pyproject.toml), built here without a build backend, so the test needs no network."""
    project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    dist, version = project["name"].replace("-", "_"), project["version"]
    info = f"{dist}-{version}.dist-info"
    files = {p.relative_to(package / "src").as_posix(): p.read_bytes()
             for p in sorted((package / "src").rglob("*.py"))}
    files[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                 f"Version: {version}\n").encode()
    files[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: sparsescope-tests\n"
                              b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    files[f"{info}/entry_points.txt"] = "".join(
        f"[{group}]\n" + "".join(f"{name} = {ref}\n" for name, ref in entries.items())
        for group, entries in project["entry-points"].items()).encode()
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,", ""]).encode()
    wheel = out / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The NumPy plug-in package pip-installed into a folder of its own (put on sys.path by
    the test), so the environment stays as it was."""
    work = tmp_path_factory.mktemp("plugin-install")
    target = work / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", "--target", str(target), str(_wheel(NUMPY_PACKAGE, work))],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return target


def _case(result: dict, backend: str) -> dict:
    (case,) = [c for c in result["cases"] if c["backend"] == backend]
    return case


@pytest.mark.slow  # pip in a subprocess, then a whole run with its report
def test_an_installed_plugin_runs_end_to_end(installed, tiny, tmp_path, monkeypatch, capsys,
                                            figures_not_drawn):
    entry_points = installed / "sparsescope_numpy_spmv-0.1.0.dist-info" / "entry_points.txt"
    assert "[sparsescope.backends]" in entry_points.read_text()  # what pip laid out
    monkeypatch.syspath_prepend(str(installed))
    monkeypatch.setenv(plugins.ENV_NO_AUTOLOAD, "0")
    out = tmp_path / "out"
    rc = main(["run", "--matrix", str(tiny), "--backend", "scipy-cpu", "--backend",
               "numpy-coo-spmv", "--out", str(out), "--json", *FAST])
    result = json.loads(capsys.readouterr().out)
    assert rc == 0
    case = _case(result, "numpy-coo-spmv")
    assert case["outcome"] == "ok" and case["rel_err"] < 1e-6 and case["time_ms"] > 0
    assert plugins.loaded_plugins()[0].spec == "entry-point:numpy-coo-spmv"

    stored = next(c for c in read_runset(out / "results.json").cases
                  if c.backend == "numpy-coo-spmv")
    assert stored.correctness.rel_err < 1e-6 and len(stored.measurement.samples_ms) == 3
    assert stored.traffic.format == "COO INT32" and stored.traffic.row_meta_bytes == 7 * 4
    assert "time model is the GPU's" in stored.prediction.not_modelled
    rows = [line for line in (out / "report.md").read_text().splitlines()
            if line.startswith("| tiny | numpy-coo-spmv |")]
    assert rows and "not modelled" in rows[0]


@pytest.mark.slow  # a whole run with its report (and the CPU's ceilings, first in a session)
def test_plugin_files_without_installing_and_a_wrong_output_fails_its_case(
        tiny, tmp_path, capsys, figures_not_drawn):
    bad = tmp_path / "short_output.py"
    bad.write_text(textwrap.dedent('''
        from sparsescope.backends.scipy_cpu import ScipyCpuBackend

        class ShortOutput(ScipyCpuBackend):
            name = "short-output-spmv"
            def run(self, prepared, x):
                return (prepared @ x)[:-1]

        def sparsescope_backends():
            return [ShortOutput]
        '''))
    out = tmp_path / "out"
    rc = main(["run", "--matrix", str(tiny), "--plugin", str(NUMPY_PLUGIN), "--plugin",
               str(bad), "--backend", "numpy-coo-spmv", "--backend", "short-output-spmv",
               "--out", str(out), "--json", *FAST])
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert rc == 11  # a case failed its check; the run itself went on
    assert _case(result, "numpy-coo-spmv")["outcome"] == "ok"
    short = _case(result, "short-output-spmv")
    assert short["outcome"] == "failed" and short["reason"] == ("output has shape (3,), "
                                                                "expected (4,)")
    assert "Traceback" not in captured.err
    # the processes the command starts (ncu's target, local Dask workers) load them too
    assert os.environ[plugins.ENV_PLUGINS].split(",") == [str(NUMPY_PLUGIN), str(bad)]
    assert {c.backend for c in read_runset(out / "results.json").cases} == {
        "numpy-coo-spmv", "short-output-spmv"}


@pytest.mark.slow  # a sweep, run twice, and its report
def test_sweep_runs_a_plugin_in_process(tiny, tmp_path, capsys, figures_not_drawn):
    out = tmp_path / "sweep"
    args = ["sweep", str(tiny), "--plugin", str(NUMPY_PLUGIN), "--backend", "numpy-coo-spmv",
            "--out", str(out), "--no-store", "--json", *FAST]
    rc = main(args)
    result = json.loads(capsys.readouterr().out)
    assert rc == 0 and (result["ran"], result["stored"]) == (1, 0)
    case = _case(result, "numpy-coo-spmv")
    assert case["outcome"] == "ok" and case["rel_err"] < 1e-6
    (stored,) = read_runset(out / "results.json").cases
    assert stored.traffic.row_meta_bytes == 7 * 4
    plugins.forget_plugins()
    assert main(args) == 0  # the same command resumes: the plug-in's case is stored
    assert (json.loads(capsys.readouterr().out)["ran"]) == 0


def test_model_predicts_the_cuda_example_on_this_host(tiny, capsys):
    rc = main(["model", str(tiny), "--plugin", str(CUDA_PLUGIN), "--backend", "plugin-cuda-csr",
               "--gpu", "H100", "--no-sass", "--no-store", "--json"])
    assert rc == 0
    (case,) = json.loads(capsys.readouterr().out)
    assert case["backend"] == "plugin-cuda-csr" and case["kernel"] == "spmv_csr"
    assert case["kernel_source"] == "declared by the plug-in" and not case["not_modelled"]
    assert case["predicted_ms"] > 0 and case["limiter"]
    assert case["index_bytes"] == 4 and case["value_dtype"] == "float32"


@pytest.mark.slow  # a Python process importing the whole stack
def test_the_ncu_target_loads_plugins_from_the_environment():
    """``profile`` runs ``python -m sparsescope.target``, which finds the ``--plugin`` modules
    in SPARSESCOPE_PLUGINS (exported by the command)."""
    env = {**os.environ, plugins.ENV_PLUGINS: str(NUMPY_PLUGIN), plugins.ENV_NO_AUTOLOAD: "1"}
    done = subprocess.run(
        [sys.executable, "-m", "sparsescope.target", "case", "--op", "spmv", "--suite", "awkward",
         "--matrix", "empty-rows", "--backend", "numpy-coo-spmv", "--check-only"],
        capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "numpy-coo-spmv spmv: ok (checked only, not timed)" in done.stdout


@pytest.mark.parametrize("command", [
    ["run", "--out", "OUT", "--backend", "scipy-cpu"],
    ["sweep", "SOURCE", "--out", "OUT"],
    ["model", "SOURCE", "--backend", "cuda-csr-scalar"],
    ["profile", "--suite", "seed6", "--matrix", "cant", "--backend", "scipy-cpu"],
])
def test_a_bad_plugin_is_one_line_and_exit_2_in_every_command(command, tiny, tmp_path, capsys):
    argv = [str(tiny) if a == "SOURCE" else str(tmp_path / "o") if a == "OUT" else a
            for a in command]
    if command[0] == "run":
        argv += ["--matrix", str(tiny)]
    rc = main([*argv, "--plugin", "no_such_plugin_xyz"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip().splitlines() == [
        f"sparsescope: error: plug-in module 'no_such_plugin_xyz': no such module on sys.path "
        f"(PYTHONPATH) or in {os.getcwd()}; give its name, or the path of its .py file"]
    assert not (tmp_path / "o").exists()  # nothing ran


def test_a_bad_plugin_under_json_is_an_error_document(tiny, tmp_path, capsys):
    clash = tmp_path / "clash.py"
    clash.write_text("from sparsescope.backends.scipy_cpu import ScipyCpuBackend\n\n\n"
                     "def sparsescope_backends():\n    return [ScipyCpuBackend]\n")
    rc = main(["run", "--matrix", str(tiny), "--out", str(tmp_path / "o"), "--plugin",
               str(clash), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 2 and doc["exit_code"] == 2 and doc["type"] == "PluginError"
    assert doc["error"] == (f"plug-in file {clash}: backend name 'scipy-cpu' is a built-in "
                            "backend's; choose another name")


def test_without_the_plugin_its_backend_is_unknown(tiny, tmp_path, capsys):
    rc = main(["run", "--matrix", str(tiny), "--backend", "numpy-coo-spmv", "--out",
               str(tmp_path / "o")])
    assert rc == 2
    assert "unknown backend 'numpy-coo-spmv'" in capsys.readouterr().err
