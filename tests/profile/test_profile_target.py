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
from sparsescope.backends import variants  # noqa: F401  (bound to the real runner before the stand-in)
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


# ----------------------------------------------------------------------------- --profile-call

class _Recorder:
    """A backend's ``run_case`` and a profiler's (start, stop, synchronize), into one log."""

    def __init__(self, device: str = "gpu", fail: bool = False) -> None:
        self.log: list[str] = []
        self.capability = types.SimpleNamespace(device=device)
        self.name = "fake-gpu"
        self.fail = fail

    def run_case(self, prepared):
        self.log.append(f"run {prepared}")
        if self.fail:
            raise RuntimeError("launch failed")
        return prepared

    def profiler(self):
        self.log.append("profiler asked")
        return (lambda: self.log.append("start"), lambda: self.log.append("stop"),
                lambda: self.log.append("sync"))


def test_only_the_first_call_runs_inside_the_profiler_range():
    fake = _Recorder()
    backend = target.profile_first_call(fake, fake.profiler)
    assert backend is fake and isinstance(fake.run_case, target.FirstCallRange)
    assert fake.run_case("checked") == "checked"
    assert fake.run_case("again") == "again"
    # asked for at the first call (the library is loaded by then); synchronized on both sides
    assert fake.log == ["profiler asked", "sync", "start", "run checked", "sync", "stop",
                        "run again"]
    assert fake.run_case.calls == 2


def test_the_range_closes_when_the_call_fails():
    fake = _Recorder(fail=True)
    target.profile_first_call(fake, fake.profiler)
    with pytest.raises(RuntimeError, match="launch failed"):
        fake.run_case("checked")
    assert fake.log[-2:] == ["run checked", "stop"]


def test_a_cpu_backend_gets_no_range():
    fake = _Recorder(device="cpu")
    original = fake.run_case
    assert target.profile_first_call(fake, fake.profiler).run_case == original
    fake.run_case("x")
    assert fake.log == ["run x"]


def test_profile_call_wraps_the_backend_the_runner_gets(monkeypatch, capsys):
    fake = _Recorder()
    seen = {}

    def run_case(matrix, backend, op="spmv", params=None, *, config, seed=0, timed=True):
        seen["backend"], seen["timed"] = backend, timed
        backend.run_case("poisoned-then-checked")          # the runner's one checked call
        return _Case("ok")

    runner = types.ModuleType("sparsescope.backends.runner")
    runner.run_case = run_case
    runner.report_case_exit = real_runner.report_case_exit
    monkeypatch.setitem(sys.modules, "sparsescope.backends.runner", runner)
    monkeypatch.setattr(BackendChoice, "create", lambda self: fake)
    monkeypatch.setattr(target, "loaded_profiler", fake.profiler)
    rc = target.main(["case", "--suite", "seed6", "--matrix", "cant", "--scale", "0.001",
                      "--backend", "cuda-spmv-sell", "--check-only", "--profile-call"])
    assert rc == 0
    assert seen == {"backend": fake, "timed": False}
    assert fake.log == ["profiler asked", "sync", "start", "run poisoned-then-checked", "sync",
                        "stop"]


def test_without_profile_call_the_runner_gets_the_choice(stages, capsys):
    assert target.main(["case", "--suite", "seed6", "--matrix", "cant", "--scale", "0.001",
                        "--backend", "cuda-spmv-sell", "--check-only"]) == 0
    assert stages["case"][1] == BackendChoice("cuda-spmv-sell")


@pytest.mark.parametrize("loaded, library", [(("cupy", "torch"), "cupy"), (("torch",), "torch"),
                                             ((), "cupy")])
def test_the_profiler_comes_from_the_library_the_case_loaded(monkeypatch, loaded, library):
    for name in ("cupy", "torch"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    for name in loaded:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    asked = []
    monkeypatch.setattr(target, "_profiler", lambda lib: asked.append(lib) or ("a", "b", "c"))
    assert target.loaded_profiler() == ("a", "b", "c")
    assert asked == [library]
