"""Where a run's time goes (issue 35, point 1): ``sparsescope run`` records each case's stages
and the run's, in results.json, in ``--json`` and in the report's line; ``sparsescope results
show --stages [--per-case]`` prints them; a results file written before stage times still
reads.

The first test injects a fake time source into the run's stage clock: the clock moves only
where a stage is known to spend (the ceilings, a matrix read, the float64 reference, the
backend's prepare / run / timing, the report), by hand-picked seconds, so every stage's value
is exact and the stages add up to the wall time by construction of the clock, not by luck of
the machine's timing."""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from sparsescope import registry
from sparsescope.backends.scipy_cpu import ScipyCpuBackend
from sparsescope.cli import main
from sparsescope.results.io import read_runset
from sparsescope.stages import OTHER, STAGES, StageClock

MODULES = ["sparsescope.cli.run_cmd", "sparsescope.cli.results_cmd"]
FAST = ["--warmups", "1", "--repeats", "3", "--flush", "off"]
LABELS = ("device ceilings", "load or generate", "float64 reference", "prepare / pack",
          "SASS and plan", "prediction", "first run + check", "timing", "profile", "report",
          "other")


class FakeTime:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.t = 50.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


NOW = FakeTime()


class SlowFakeCpu(ScipyCpuBackend):
    """SciPy, whose prepare, checked run and timing each take a known (fake) time."""

    name = "slow-fake-cpu"

    def prepare(self, matrix_csr, value_dtype, index_bytes):
        NOW.advance(0.5)
        return super().prepare(matrix_csr, value_dtype, index_bytes)

    def run(self, prepared, x):
        NOW.advance(0.25)
        return super().run(prepared, x)

    def time(self, prepared, x, config):
        NOW.advance(1.0)
        return super().time(prepared, x, config)


def _slow(fn, seconds: float):
    @functools.wraps(fn)
    def slow(*args, **kwargs):
        NOW.advance(seconds)
        return fn(*args, **kwargs)
    return slow


@pytest.fixture
def matrix_files(tmp_path):
    files = []
    for i, n in enumerate((40, 60)):
        csr = sp.random(n, n, density=0.1, format="csr", random_state=i, dtype=np.float64)
        path = tmp_path / f"m{i}.mtx"
        scipy.io.mmwrite(path, csr)
        files.append(str(path))
    return files


@pytest.fixture
def fast_ceilings(monkeypatch):
    """The CPU's ceilings as a fixed record that takes 2 fake seconds to 'measure'."""
    from sparsescope.hardware import cpu_ceilings
    from sparsescope.hardware.types import MeasuredCeilings

    def measure(*args, **kwargs):
        NOW.advance(2.0)
        return MeasuredCeilings(device="test CPU", copy_bw_gb_s=20.0, read_bw_gb_s=25.0,
                                fp32_gflops=200.0)

    monkeypatch.setattr(cpu_ceilings, "measure_cpu_ceilings", measure)


@pytest.fixture
def fake_clock(monkeypatch, fast_ceilings):
    """The run's stage clock on :data:`NOW`, which moves only inside the known stages."""
    import sparsescope.api.runs as runs
    import sparsescope.matrices as matrices
    import sparsescope.report.write as write
    from sparsescope.ops.spmv import SpmvOp

    monkeypatch.setattr(runs, "StageClock", lambda: StageClock(NOW))
    monkeypatch.setitem(registry.BACKENDS, ("spmv", SlowFakeCpu.name), SlowFakeCpu)
    monkeypatch.setattr(matrices, "read_matrix", _slow(matrices.read_matrix, 0.125))
    monkeypatch.setattr(SpmvOp, "make_case", _slow(SpmvOp.make_case, 0.75))
    monkeypatch.setattr(write, "write_report", _slow(write.write_report, 1.5))


def test_stages_add_up_to_the_wall_time_on_an_injected_clock(
        fake_clock, figures_not_drawn, matrix_files, tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["run", "--matrix", matrix_files[0], "--matrix", matrix_files[1], "--backend",
               SlowFakeCpu.name, "--out", str(out), "--no-store", "--json", *FAST],
              modules=MODULES)
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    # each case: its matrix read, its float64 reference, prepare, one checked run, timing
    case = {"load": 0.125, "reference": 0.75, "prepare": 0.5, "check": 0.25, "timing": 1.0}
    run = {"device": 2.0, **{k: 2 * v for k, v in case.items()}, "report": 1.5}
    for times in [c["stages"] for c in doc["cases"]]:
        assert {k: v for k, v in times["seconds"].items() if v} == case
        assert times["wall_s"] == 2.625 == math.fsum(times["seconds"].values())
    assert list(doc["stages"]["seconds"]) == [*STAGES, OTHER]
    assert {k: v for k, v in doc["stages"]["seconds"].items() if v} == run
    assert doc["stages"]["wall_s"] == 8.75 == math.fsum(run.values())

    stored = read_runset(out / "results.json")  # written again with the report's time
    assert stored.stages.of("report") == 1.5 and stored.stages.wall_s == 8.75
    assert [c.stages.wall_s for c in stored.cases] == [2.625, 2.625]
    # the report was written before its own time was known: its line says so
    line = next(x for x in (out / "report.md").read_text().splitlines()
                if "Where the time went" in x)
    assert line == (
        "> Where the time went (7.25 s): timing 2.00 s (28 %), device ceilings 2.00 s (28 %), "
        "float64 reference 1.50 s (21 %), prepare / pack 1.00 s (14 %), first run + check "
        "0.500 s (7 %), load or generate 0.250 s (3 %); this report's own time is added to "
        "results.json after it is written (`sparsescope results show results.json "
        "--stages`)")


def test_results_show_stages_on_a_real_cpu_run(fast_ceilings, figures_not_drawn, matrix_files,
                                               tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "--matrix", matrix_files[0], "--matrix", matrix_files[1],
                 "--backend", "scipy-cpu", "--out", str(out), "--no-store", *FAST],
                modules=MODULES) == 0
    text = capsys.readouterr().out
    assert "Where the time went (" in text  # the run's own summary line
    results = str(out / "results.json")

    assert main(["results", "show", results, "--stages"], modules=MODULES) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("run ") and "the run's own clock" in lines[0]
    table = {line[:17].strip(): line[17:].split() for line in lines[3:]}
    assert list(table) == list(LABELS)  # every stage, even those that took no time
    assert table["profile"] == ["0", "0.0%"]
    assert float(table["timing"][0]) > 0 and float(table["report"][0]) > 0
    shares = [float(v[1].rstrip("%")) for v in table.values()]
    assert sum(shares) == pytest.approx(100, abs=0.1 * len(shares))

    assert main(["results", "show", results, "--stages", "--per-case"], modules=MODULES) == 0
    per_case = capsys.readouterr().out.splitlines()
    rows = per_case[per_case.index(next(x for x in per_case if x.startswith("per case"))) + 3:]
    assert [r.split()[:2] for r in rows] == [["m0", "scipy-cpu"], ["m1", "scipy-cpu"]]

    assert main(["results", "show", results, "--stages", "--json"], modules=MODULES) == 0
    doc = json.loads(capsys.readouterr().out)["stages"]
    assert doc["basis"] == "run"
    assert [r["stage"] for r in doc["rows"]] == [*STAGES, OTHER]
    assert math.fsum(r["seconds"] for r in doc["rows"]) == pytest.approx(doc["wall_s"],
                                                                         rel=1e-9)
    assert len(doc["cases"]) == 2
    for case in doc["cases"]:
        assert math.fsum(r["seconds"] for r in case["rows"]) == pytest.approx(case["wall_s"],
                                                                              rel=1e-9)
