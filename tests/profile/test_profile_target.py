"""The profiled program (``python -m sparsescope.target case``): argument handling, the case it
runs, its exit codes. The runner is replaced by a stand-in recording how it was called (its
``report_case_exit`` is the real one)."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import pytest

from sparsescope import target
from sparsescope.backends import runner as real_runner
from sparsescope.backends.runner import BackendChoice
from sparsescope.timing.types import TimingConfig


@dataclass
class _Case:
    outcome: str
    reason: str = ""


@pytest.fixture
def stages(monkeypatch):
    calls = {}

    def run_case(matrix, backend, op="spmv", params=None, *, config, seed=0, timed=True):
        calls["case"] = (matrix.name, backend, op, params, config, seed, timed)
        return _Case(*calls.get("outcome", ("ok",)))

    runner = types.ModuleType("sparsescope.backends.runner")
    runner.run_case = run_case
    runner.report_case_exit = real_runner.report_case_exit
    monkeypatch.setitem(sys.modules, "sparsescope.backends.runner", runner)
    return calls


def test_runs_the_case(stages, capsys):
    rc = target.main(["case", "--suite", "seed6", "--matrix", "ldoor", "--backend", "torch",
                      "--scale", "0.001", "--warmups", "2", "--repeats", "4"])
    assert rc == 0
    assert stages["case"] == ("ldoor", BackendChoice("torch"), "spmv", {},
                              TimingConfig(warmups=2, repeats=4), 0, True)
    assert "sparsescope-target: ldoor torch spmv: ok" in capsys.readouterr().out


def test_check_only_and_parameters_reach_the_runner(stages, capsys):
    rc = target.main(["case", "--op", "spmm", "--suite", "dlmc3", "--matrix", "dlmc-128x256",
                      "--backend", "spmm-torch-i32", "--param", "k=16", "--param",
                      "layout=col", "--seed", "3", "--check-only"])
    assert rc == 0
    assert stages["case"] == ("dlmc-128x256", BackendChoice("spmm-torch-i32"), "spmm",
                              {"k": "16", "layout": "col"}, TimingConfig(warmups=1, repeats=3),
                              3, False)
    assert "sparsescope-target: dlmc-128x256 spmm-torch-i32 spmm: ok" in capsys.readouterr().out


def test_a_kernel_variant_reaches_the_runner_with_its_options(stages, capsys):
    rc = target.main(["case", "--suite", "seed6", "--matrix", "cant", "--scale", "0.001",
                      "--backend", "cuda-spmv-adaptive[hub=8192,iters=1]", "--check-only"])
    assert rc == 0
    assert stages["case"][1] == BackendChoice("cuda-spmv-adaptive",
                                              (("hub", 8192), ("iters", 1)),
                                              "cuda-spmv-adaptive[hub=8192,iters=1]")


@pytest.mark.parametrize("outcome, code", [(("failed", "rel_err 1e-2 > 1e-5"), 1),
                                           (("skipped", "no INT64 support"), 3)])
def test_exit_code_follows_the_outcome(stages, capsys, outcome, code):
    stages["outcome"] = outcome
    rc = target.main(["case", "--suite", "seed6", "--scale", "0.001", "--matrix", "cant",
                      "--backend", "cupy"])
    assert rc == code
    assert f"{outcome[0]} ({outcome[1]})" in capsys.readouterr().err


def test_unknown_matrix(stages, capsys):
    rc = target.main(["case", "--suite", "seed6", "--scale", "0.001", "--matrix", "bcsstk",
                      "--backend", "torch"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("sparsescope-target: error: ")
    assert "unknown entry of suite 'seed6' 'bcsstk'; known: cage15, cant, circuit5M, ldoor" in err
    assert "case" not in stages                                  # the runner never started


def test_arguments_are_required(capsys):
    with pytest.raises(SystemExit) as exit_:
        target.main(["case", "--suite", "seed"])
    assert exit_.value.code == 2
    with pytest.raises(SystemExit) as exit_:
        target.main([])                                           # a mode is required
    assert exit_.value.code == 2


@pytest.mark.parametrize("text, pair", [("k=8", ("k", "8")), (" rows = 3,1 ", ("rows", "3,1")),
                                        ("weights=", ("weights", ""))])
def test_parse_param(text, pair):
    assert target.parse_param(text) == pair


@pytest.mark.parametrize("text", ["k", "=8", ""])
def test_parse_param_refuses_what_is_not_a_pair(text):
    from sparsescope.errors import UsageError

    with pytest.raises(UsageError, match="--param wants NAME=VALUE"):
        target.parse_param(text)
