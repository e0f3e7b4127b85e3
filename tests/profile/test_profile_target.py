"""The profiled program: argument handling, the case it runs, its exit codes. The matrices and
backends stages are replaced by stand-ins recording how they were called."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import pytest

from sparsescope.profile import target
from sparsescope.timing.types import TimingConfig


@dataclass
class _Case:
    outcome: str
    reason: str = ""


@pytest.fixture
def stages(monkeypatch):
    calls = {}

    def run_case(matrix, backend, *, config):
        calls["case"] = (matrix.name, backend, config)
        return _Case(*calls.get("outcome", ("ok",)))

    runner = types.ModuleType("sparsescope.backends.runner")
    runner.run_case = run_case
    monkeypatch.setitem(sys.modules, "sparsescope.backends.runner", runner)
    return calls


def test_runs_the_case(stages, capsys):
    rc = target.main(["--suite", "seed6", "--matrix", "ldoor", "--backend", "torch",
                      "--scale", "0.001", "--warmups", "2", "--repeats", "4"])
    assert rc == 0
    assert stages["case"] == ("ldoor", "torch", TimingConfig(warmups=2, repeats=4))
    assert "sparsescope-target: ldoor torch spmv: ok" in capsys.readouterr().out


@pytest.mark.parametrize("outcome, code", [(("failed", "rel_err 1e-2 > 1e-5"), 1),
                                           (("skipped", "no INT64 support"), 3)])
def test_exit_code_follows_the_outcome(stages, capsys, outcome, code):
    stages["outcome"] = outcome
    rc = target.main(["--suite", "seed6", "--scale", "0.001", "--matrix", "cant",
                      "--backend", "cupy"])
    assert rc == code
    assert f"{outcome[0]} ({outcome[1]})" in capsys.readouterr().err


def test_unknown_matrix(stages, capsys):
    rc = target.main(["--suite", "seed6", "--scale", "0.001", "--matrix", "bcsstk",
                      "--backend", "torch"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "unknown entry of suite 'seed6' 'bcsstk'; known: cage15, cant, circuit5M, ldoor" in err


def test_arguments_are_required(capsys):
    with pytest.raises(SystemExit) as exit_:
        target.main(["--suite", "seed"])
    assert exit_.value.code == 2
