"""``sparsescope run`` end to end on the CPU: results, report, store, and bad input."""

from __future__ import annotations

import json

import pytest

from sparsescope.cli import main
from sparsescope.errors import UsageError
from sparsescope.results.io import read_runset
from sparsescope.results.store import ResultsStore

FAST = ["--warmups", "1", "--repeats", "3", "--flush", "off"]

pytestmark = pytest.mark.usefixtures("cpu_ceilings_measured_once")


@pytest.fixture(scope="module")
def seed6_run(tmp_path_factory, cpu_ceilings_measured_once):
    out = tmp_path_factory.mktemp("run") / "seed6"
    rc = main(["run", "--suite", "seed6", "--scale", "0.002", "--out", str(out), "--no-store",
               "--json", *FAST])
    return rc, out


def test_run_writes_everything(seed6_run):
    rc, out = seed6_run
    assert rc == 0
    for name in ("results.json", "report.md", "report.html"):
        assert (out / name).stat().st_size > 1000
    # a CPU run naming no GPU: no warp-model figures (latency sensitivity, gap, DAE)
    assert len(list((out / "figures").glob("*.png"))) >= 5
    assert (out / "tables" / "timing.json").is_file()


def test_results_are_valid_and_checked(seed6_run):
    _, out = seed6_run
    rs = read_runset(out / "results.json")
    assert [m.name for m in rs.matrices] == ["webbase-1M", "cant", "pwtk", "ldoor", "circuit5M",
                                             "cage15"]
    assert all(m.analog_of for m in rs.matrices)
    assert rs.device.kind == "cpu" and rs.reference_gpu == ""  # no GPU named
    assert rs.latency_ns == rs.device.dram_latency_ns  # the CPU's estimate, used by no table
    assert rs.ceilings.copy_bw_gb_s and rs.ceilings.copy_bw_gb_s > 0
    for case in rs.cases:
        assert case.backend == "scipy-cpu" and case.outcome == "ok"
        assert case.correctness.rel_err < 1e-5
        assert len(case.measurement.samples_ms) == 3
    # the ldoor analog at scale 0.002: rows and nnz scale together
    ldoor = next(m for m in rs.matrices if m.name == "ldoor").stats
    assert ldoor.rows == round(952_203 * 0.002)
    assert abs(ldoor.nnz / ldoor.rows - 46_522_475 / 952_203) < 0.5


def test_report_says_cpu_and_analog(seed6_run):
    _, out = seed6_run
    md = (out / "report.md").read_text()
    assert "Generated analogs, not the real matrices" in md
    assert "Measured on a CPU" in md and "`--reference-gpu NAME`" in md
    assert "Little's law: H200" not in md and "DAE what-if per case" not in md


@pytest.mark.usefixtures("figures_not_drawn")
def test_run_appends_to_store(tmp_path, capsys):
    rc = main(["run", "--suite", "awkward", "--out", str(tmp_path / "a"), "--json", *FAST])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    store = ResultsStore()
    assert result["run_id"] in [r.run_id for r in store.runs()]
    assert {c["outcome"] for c in result["cases"]} == {"ok"}


def test_bad_matrix_file_names_line_and_keeps_old_results(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("previous results\n")
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 2 2.0\n")
    rc = main(["run", "--matrix", str(bad), "--out", str(out), "--no-store", *FAST])
    err = capsys.readouterr().err
    assert rc == 3
    assert "bad.mtx, line 4" in err and "Traceback" not in err
    assert (out / "results.json").read_text() == "previous results\n"


@pytest.mark.parametrize("argv, code, message", [
    (["--suite", "nope"], 2, "unknown suite 'nope'"),
    (["--suite", "seed6", "--scale", "0"], 2, "--scale must be in (0, 1]"),
    (["--suite", "seed6", "--backend", "warp-drive"], 2, "unknown backend 'warp-drive'"),
    (["--suite", "seed6", "--repeats", "0"], 2, "--repeats >= 1"),
])
def test_bad_arguments(tmp_path, capsys, argv, code, message):
    rc = main(["run", *argv, "--out", str(tmp_path / "o"), "--no-store"])
    err = capsys.readouterr().err
    assert rc == code and message in err and "Traceback" not in err


@pytest.fixture
def nothing_measured(monkeypatch):
    """Fail the test if a run gets as far as loading a matrix, measuring ceilings or running a
    case: a usage error must come first."""
    from sparsescope.api import runs
    from sparsescope.backends import runner
    from sparsescope.hardware import cpu_ceilings

    def refuse(*args, **kwargs):
        raise AssertionError("measured before the usage error")

    monkeypatch.setattr(cpu_ceilings, "measure_cpu_ceilings", refuse)
    monkeypatch.setattr(runner, "run_matrix", refuse)
    monkeypatch.setattr(runs, "_matrices", refuse)


def test_an_op_option_of_another_op_is_a_usage_error(tmp_path, capsys, nothing_measured):
    out = tmp_path / "o"
    rc = main(["run", "--op", "spmv", "--k", "8", "--suite", "seed6", "--scale", "0.002",
               "--out", str(out), "--no-store", *FAST])
    err = capsys.readouterr().err
    assert rc == UsageError.exit_code == 2
    assert "--k applies to --op spmm" in err and "not --op spmv" in err
    assert "Traceback" not in err and not out.exists()


def test_a_backend_of_another_op_is_a_usage_error_before_measuring(tmp_path, capsys,
                                                                  nothing_measured):
    out = tmp_path / "o"
    rc = main(["run", "--op", "spmm", "--backend", "scipy-cpu", "--suite", "dlmc3",
               "--scale", "0.01", "--out", str(out), "--no-store", *FAST])
    err = capsys.readouterr().err
    assert rc == UsageError.exit_code == 2
    assert "backend 'scipy-cpu' implements op 'spmv', not 'spmm'" in err
    assert "spmm-scipy-cpu" in err  # the backends that do implement spmm are listed
    assert "Traceback" not in err and not out.exists()
