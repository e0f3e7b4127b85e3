"""``--json`` on every command and subcommand, in a subprocess: exit 0, stdout exactly one strict
JSON document (no NaN/Infinity, nothing before or after it), stderr without a traceback or a
progress bar, and nested records as objects (never a ``repr`` turned into a string).

The commands run once per module in a fixture, one after another in one Python process of their
own (a fresh interpreter, not pytest's: :data:`_HARNESS`), each through ``sparsescope.cli.main``
as ``python -m sparsescope`` calls it, with its stdout and stderr file descriptors on files of
its own: what anything in the process writes there, C libraries included, is the command's.
One process for all: a fresh interpreter importing sparsescope again for each command was
two-fifths of the module's CPU time. Each command is then its own test. Inputs are built with
the CLI itself (a generated .mtx for ``matrices stats``, the CPU run's results.json for
``results show``) or taken from the real H200 fixtures (tests/conftest.py ``h200_fixtures``) and
the committed results files (results/h200/seed6, kernels, resample).

Commands that cannot succeed on a machine without a GPU or Nsight Compute (``profile run``,
``analyze WORKLOAD``/``--cuda``) are checked for their ``--json`` error document instead:
exactly ``{"error", "type", "exit_code"}``, with ``exit_code`` the process's exit code.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results" / "h200"
RESAMPLE = RESULTS / "resample"
FAST = ["--warmups", "1", "--repeats", "3", "--flush", "off"]
#: Longest a command may take before the module fails (a hang, not a slow machine).
COMMAND_TIMEOUT_S = 180


def _cmds(tmp: Path, fx: Path) -> dict[str, tuple[str | None, list[str]]]:
    """name -> (names of the commands whose outputs it reads, comma-separated, or None;
    argv without --json)."""
    run_dir = tmp / "run"
    gen = tmp / "gen"
    # In order: a command comes after the one whose outputs it reads.
    return {
        "run": (None, ["run", "--suite", "seed6", "--scale", "0.005", "--out", str(run_dir),
                       *FAST]),
        "report": (None, ["report", str(RESULTS / "seed6/results.json"), "--out",
                          str(tmp / "rep"), "--sass",
                          str(fx / "spmv_kernels_sm90.cuobjdump.sass")]),
        "ceilings": (None, ["ceilings"]),
        "sweep": (None, ["sweep", "suite:awkward", "--out", str(tmp / "sweep"), "--backend",
                         "scipy-cpu", *FAST]),
        # results: the CPU run's file (null times and bandwidths) and the committed H200 files
        "results show (cpu run)": ("run", ["results", "show", str(run_dir / "results.json")]),
        "results show": (None, ["results", "show", str(RESULTS / "seed6/results.json")]),
        "results compare": (None, ["results", "compare", str(RESULTS / "seed6/results.json"),
                                   str(RESULTS / "kernels/results.json.xz")]),
        "results readme": (None, ["results", "readme", str(RESULTS / "seed6"), "--out",
                                  str(tmp / "seed6-readme" / "README.md")]),
        # the sweep's results.json becomes results.json.xz (nothing after reads it)
        "results compact": ("sweep", ["results", "compact", str(tmp / "sweep" / "results.json")]),
        # matrices
        "matrices list": (None, ["matrices", "list", "--scale", "0.01"]),
        "matrices generate": (None, ["matrices", "generate", "banded", "--rows", "200",
                                     "--nnz", "1000", "--param", "halfwidth=8",
                                     "--out", str(gen / "b.mtx")]),
        "matrices generate --suite": (None, ["matrices", "generate", "--suite", "seed6",
                                             "--scale", "0.002", "--format", "npz",
                                             "--out", str(gen / "suite")]),
        "matrices stats": ("matrices generate", ["matrices", "stats", str(gen / "b.mtx")]),
        # model, specs
        "model": (None, ["model", "--gpu", "H100", "--rows", "1000", "--nnz", "10000",
                         "--time-ms", "0.01", "--cpi", "10", "--long-scoreboard", "5"]),
        "specs": (None, ["specs"]),
        "specs h200": (None, ["specs", "h200"]),
        # profile: read and report work on recorded exports (run needs ncu: ERROR_CMDS)
        "profile read csv": (None, ["profile", "read", str(fx / "spmv_full_raw.csv"),
                                    "--details", str(fx / "spmv_full_details.csv")]),
        "profile read ncu-rep": (None, ["profile", "read", str(fx / "spmv_full.ncu-rep")]),
        "profile report": (None, ["profile", "report", str(fx / "ncu_metrics_cant_analog.csv")]),
        # sass
        "sass": (None, ["sass", str(fx / "scalar_device_cuobjdump.sass"),
                        "--stalls", str(fx / "scalar_source_sass.csv"), "--block-size", "256"]),
        "sass --list": (None, ["sass", str(fx / "spmv_kernels_sm90.nvdisasm.txt"), "--list"]),
        # analyze: the modes that need no GPU
        "analyze --sass": (None, ["analyze", "--sass",
                                  str(fx / "spmv_kernels_sm90.cuobjdump.sass"),
                                  "--kernel", "scalar", "--block", "256",
                                  "--grid-blocks", "512"]),
        "analyze --from-profile": (None, ["analyze", "--from-profile",
                                          str(fx / "spmv_full.ncu-rep"), "--kernel",
                                          "spmv_csr_scalar"]),
        "analyze --from-profile --out": (None, [
            "analyze", "spmvw", "--from-profile", str(fx / "scalar_raw.csv"), "--source-csv",
            str(fx / "scalar_source_sass.csv"), "--sass", str(fx / "scalar_device_cuobjdump.sass"),
            "--label", "v2", "--out", str(tmp / "an")]),
        "analyze --compare": (None, ["analyze", "--compare",
                                     *(str(RESAMPLE / v / "analysis.json.xz")
                                       for v in ("naive", "ours", "ours2")),
                                     "--out", str(tmp / "scores")]),
        "analyze --from-measurement": (None, ["analyze", "--from-measurement",
                                              str(RESAMPLE / "ours2")]),
    }


#: Commands that need a GPU or ncu: on this machine they must answer with the error document.
#: name -> (argv without --json, expected exit code).
ERROR_CMDS = {
    # profile run needs Nsight Compute: point it at a binary that does not exist.
    "profile run (no ncu)": (["profile", "run", "--suite", "seed6", "--matrix", "cant",
                              "--backend", "scipy-cpu", "--ncu", "/nonexistent/ncu"], 8),
    "profile (no subcommand, no ncu)": (["profile", "--suite", "seed6", "--matrix", "cant",
                                         "--backend", "scipy-cpu", "--ncu",
                                         "/nonexistent/ncu"], 8),
    # a live analysis needs a CUDA GPU (DeviceError on a machine without one).
    "analyze --cuda (no GPU)": (["analyze", "--cuda", "{fx}/spmv_kernels.cu", "--kernel",
                                 "spmv_csr_scalar", "--grid", "1", "--block", "32", "--args",
                                 "n:i32=32", "--no-profile"], 7),
}
SUCCESS_NAMES = list(_cmds(Path("/t"), Path("/f")))


#: The process the commands run in: each stdin line a JSON job (argv, the files for the
#: command's stdout and stderr), the commands' own stdin /dev/null; fds 1 and 2 are pointed at
#: those files while
#: ``sparsescope.cli.main`` runs (imported inside, so its import is the first command's
#: output), then restored, and the exit code (main's return, or a SystemExit's code as
#: ``python -m sparsescope`` would exit) goes to the harness's own stdout as one JSON line.
_HARNESS = r"""
import json, os, sys, traceback
jobs, report = os.fdopen(os.dup(0), "r"), os.fdopen(os.dup(1), "w")
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
for line in jobs:
    job = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    for fd, path in ((1, job["stdout"]), (2, job["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    try:
        from sparsescope.cli import main
        code = main(job["argv"])
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush(); sys.stderr.flush()
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
    report.write(json.dumps({"exit_code": code}) + "\n")
    report.flush()
"""


class Harness:
    """The one process the module's commands run in (:data:`_HARNESS`), started on first use."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env, self.cwd, self.count = env, cwd, 0
        self.proc: subprocess.Popen | None = None

    def run(self, argv: list[str]) -> subprocess.CompletedProcess:
        """``sparsescope ARGV --json``: its exit code, stdout and stderr."""
        if self.proc is None:
            self.proc = subprocess.Popen([sys.executable, "-c", _HARNESS], env=self.env,
                                         cwd=self.cwd, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True)
        self.count += 1
        out, err = (self.cwd / f".cmd{self.count}.{kind}" for kind in ("out", "err"))
        argv = [*argv, "--json"]
        self.proc.stdin.write(json.dumps({"argv": argv, "stdout": str(out),
                                          "stderr": str(err)}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], COMMAND_TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            raise AssertionError(f"the harness died or hung on {argv}: "
                                 f"{err.read_text()[-2000:] if err.exists() else ''}")
        return subprocess.CompletedProcess(argv, json.loads(line)["exit_code"],
                                           out.read_text(), err.read_text())

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.stdin.close()
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc.stdout.close()
            self.proc = None


@pytest.fixture(scope="module")
def work(tmp_path_factory, cpu_ceilings_cached):
    """The commands' folder and environment: a store of their own, holding this machine's CPU
    ceilings as a first run leaves them (what is checked is the JSON, not the measuring)."""
    tmp = tmp_path_factory.mktemp("json_every_command")
    env = dict(os.environ, SPARSESCOPE_STORE=str(cpu_ceilings_cached(tmp / "store.sqlite")),
               SPARSESCOPE_CACHE=str(tmp / "cache"), COLUMNS="100")
    # the commands run in ``tmp``: a relative PYTHONPATH (``PYTHONPATH=src pytest``) made
    # absolute, so they import the tree under test and not an installed sparsescope
    paths = env.get("PYTHONPATH", "").split(os.pathsep)
    env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in paths if p)
    return tmp, env


@pytest.fixture(scope="module")
def harness(work):
    tmp, env = work
    started = Harness(env, tmp)
    yield started
    started.close()


@pytest.fixture(scope="module")
def outputs(work, harness, h200_fixtures):
    """Every success command run once, in order, each after the commands it reads."""
    tmp, _ = work
    done = {}
    for name, (dep, argv) in _cmds(tmp, h200_fixtures).items():
        missing = [d for d in (dep.split(",") if dep else []) if d not in done]
        assert not missing, f"{name} reads {missing}, which do not come before it"
        done[name] = harness.run(argv)
    return done


def _no_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def strict_single_document(stdout: str) -> object:
    """The one JSON document of ``stdout``; fails on NaN/Infinity or anything around it."""
    text = stdout.strip()
    assert text, "stdout is empty"
    assert text[0] in "{[", f"stdout does not start with a JSON document: {text[:200]!r}"
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    _, end = decoder.raw_decode(text)
    assert end == len(text), f"more than one document on stdout: {text[end:end + 200]!r}"
    return json.loads(stdout, parse_constant=_no_constant)


# A repr that leaked into the document as a string: PosixPath('...'), SomeRecord(field=...),
# SomeRecord('...'), a tuple ('a', 'b') or an object at 0x....
REPR_PATTERNS = (
    re.compile(r"\b(?:Posix|Windows|Pure\w*)Path\("),
    re.compile(r"\b[A-Z][A-Za-z0-9_]*(?:Result|Record|Spec|Ceilings|Paths|Config|Stats|"
               r"Measurement|Evidence|Analysis|Profile|Score)\("),
    re.compile(r"\b[A-Z][A-Za-z0-9_]*\([a-z_][a-z0-9_]*="),
    re.compile(r"\('"),
    re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>"),
)


def reprs_in(value: object, where: str = "$") -> list[str]:
    """Every string (value or key) of the document that looks like a Python repr."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += reprs_in(key, f"{where}.<key {key[:40]!r}>")
            found += reprs_in(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += reprs_in(item, f"{where}[{i}]")
    elif isinstance(value, str):
        if any(p.search(value) for p in REPR_PATTERNS):
            found.append(f"{where} = {value[:160]!r}")
    return found


def test_repr_walker_finds_leaked_reprs():
    leaked = {"a": ["PosixPath('/tmp/x')", {"b": "CaseResult(matrix='cant', backend='x')"}],
              "('k', 1)": 1, "c": "ReportPaths(out_dir=PosixPath('/x'))",
              "d": "<sparsescope.report.write.ReportPaths object at 0x7f00deadbeef>"}
    assert len(reprs_in(leaked)) == 5
    clean = {"command": "sparsescope run --out /tmp/x", "formula": "|a - b| / min(a, b)",
             "reason": "backend unavailable: torch is not installed (pip install 'x[torch]')",
             "n": [1, 2.5, None, True]}
    assert reprs_in(clean) == []


def check_clean_stderr(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "\r" not in stderr, f"a progress bar on stderr: {stderr[-300:]!r}"
    assert "%|" not in stderr, f"a progress bar on stderr: {stderr[-300:]!r}"


def test_every_command_is_covered():
    """A new command or subcommand must be added here (and so get its --json checked)."""
    from sparsescope.cli import build_parser

    parser = build_parser()
    covered = {argv[0] for _, argv in _cmds(Path("/t"), Path("/f")).values()}
    covered |= {argv[0] for argv, _ in ERROR_CMDS.values()}
    sub_covered = {tuple(argv[:2]) for _, argv in _cmds(Path("/t"), Path("/f")).values()}
    sub_covered |= {tuple(argv[:2]) for argv, _ in ERROR_CMDS.values()}
    top = parser._subparsers._group_actions[0]  # the one add_subparsers action
    for name, sub in top.choices.items():
        assert name in covered, f"`sparsescope {name} --json` is not tested"
        nested = [a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction"]
        for action in nested:
            for subname in action.choices:
                assert (name, subname) in sub_covered, \
                    f"`sparsescope {name} {subname} --json` is not tested"


@pytest.mark.parametrize("name", SUCCESS_NAMES)
def test_json_output(name, outputs):
    proc = outputs[name]
    assert proc.returncode == 0, f"exit {proc.returncode}\nstderr:\n{proc.stderr[-2000:]}"
    doc = strict_single_document(proc.stdout)
    check_clean_stderr(proc.stderr)
    assert isinstance(doc, (dict, list))
    leaked = reprs_in(doc)
    assert not leaked, "Python reprs in the JSON document:\n" + "\n".join(leaked[:20])


def test_run_json_records_are_objects(outputs, work):
    tmp, _ = work
    doc = json.loads(outputs["run"].stdout)
    assert doc["exit_code"] == 0 and doc["store_error"] is None
    assert isinstance(doc["report"], dict), f"report is {type(doc['report']).__name__}"
    report = doc["report"]
    for key in ("out_dir", "markdown", "html"):
        assert isinstance(report[key], str) and Path(report[key]).exists(), key
    assert report["figures"] and all(isinstance(p, str) and Path(p).is_file()
                                     for p in report["figures"])
    assert all(isinstance(p, str) and Path(p).is_file() for p in report["tables"])
    assert Path(doc["results"]) == tmp / "run" / "results.json"
    assert doc["store"] == str(tmp / "store.sqlite")  # the env's store, appended to
    assert len(doc["cases"]) == 6
    for case in doc["cases"]:
        assert isinstance(case, dict) and isinstance(case["params"], dict)
        assert case["outcome"] == "ok" and isinstance(case["time_ms"], float)


def test_report_json_paths(outputs, work):
    tmp, _ = work
    doc = json.loads(outputs["report"].stdout)
    assert doc["out_dir"] == str(tmp / "rep") and Path(doc["html"]).is_file()
    assert doc["sections"] == ["SASS analysis"]
    assert all(isinstance(p, str) for p in doc["figures"] + doc["tables"])


def test_generated_matrix_reads_back(outputs, work):
    tmp, _ = work
    gen = json.loads(outputs["matrices generate"].stdout)
    assert gen["path"] == str(tmp / "gen" / "b.mtx") and gen["params"] == {"halfwidth": 8}
    stats = json.loads(outputs["matrices stats"].stdout)
    assert stats["stats"]["rows"] == 200 and stats["stats"]["nnz"] == gen["nnz"]
    suite = json.loads(outputs["matrices generate --suite"].stdout)
    assert isinstance(suite, list) and len(suite) == 6
    assert all(Path(m["path"]).is_file() and m["path"].endswith(".npz") for m in suite)


def test_analyze_json_shapes(outputs, work):
    tmp, _ = work
    written = json.loads(outputs["analyze --from-profile --out"].stdout)
    assert isinstance(written["analysis"], dict) and isinstance(written["written"], dict)
    assert written["analysis"]["version"] == "v2"
    scores = json.loads(outputs["analyze --compare"].stdout)
    assert len(scores["scores"]) == 2 and all(isinstance(s, dict) for s in scores["scores"])
    assert isinstance(scores["written"], dict)
    assert scores["history_mae"] is not None  # recorded in the env's store


@pytest.mark.parametrize("name", list(ERROR_CMDS))
def test_json_error_document(name, harness, h200_fixtures):
    """No GPU / no ncu here: the --json answer is the error document, not a traceback."""
    from sparsescope.hardware.detect import gpu_available

    argv, code = ERROR_CMDS[name]
    if code == 7 and gpu_available():
        pytest.skip("a GPU is present: the live analysis would run")
    proc = harness.run([a.replace("{fx}", str(h200_fixtures)) for a in argv])
    assert proc.returncode == code, proc.stderr
    doc = strict_single_document(proc.stdout)
    assert isinstance(doc, dict) and set(doc) == {"error", "type", "exit_code"}, doc
    assert doc["exit_code"] == proc.returncode
    assert isinstance(doc["error"], str) and doc["error"]
    assert isinstance(doc["type"], str) and doc["type"].endswith("Error")
    check_clean_stderr(proc.stderr)
    assert f"sparsescope: error: {doc['error']}" in proc.stderr
