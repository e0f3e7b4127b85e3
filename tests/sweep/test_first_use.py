"""A sweep worker's first use done once per host or GPU kind, not once per worker (issue 35):
the ceilings measured once per key, the warm cases dealt out over a host's workers, the
first use recorded apart from the cases. Work is counted, never timed."""

from __future__ import annotations

import multiprocessing
from dataclasses import replace
from pathlib import Path

import pytest
from sweep_builders import TIMING, write_collection

from sparsescope import api, registry
from sparsescope.context import DeviceContext
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.ops.params import SpmmParams, SpmvParams
from sparsescope.sweep import first_use, matrix_cache, warm_up, worker
from sparsescope.sweep.sources import MatrixSource, expand_sources
from sparsescope.sweep.tasks import SweepTask

HERE = Path(__file__).parent
H100 = "gpu|NVIDIA H100 80GB HBM3|580.159.04"
H200 = "gpu|NVIDIA H200|580.159.04"


def _ceilings(device: str, read_bw: float) -> MeasuredCeilings:
    return MeasuredCeilings(device=device, read_bw_gb_s=read_bw, method={"read": "test"})


class _Context:
    """What ``build`` returns in these tests: the ceilings it was built with."""

    def __init__(self, ceilings):
        self.ceilings = ceilings


def _measure_in(folder: Path, key: str, log: Path, out: Path) -> None:
    """One 'worker process': its context through the host's share, each measurement a line of
    ``log``, its source and read bandwidth written to ``out``."""
    import time

    def build(ceilings):
        if ceilings is None:  # a measurement: slow enough for the others to wait on the lock
            with open(log, "a") as fh:
                fh.write(key + "\n")
            time.sleep(0.15)
            return _Context(_ceilings(key, 3000.0 + len(key)))
        return _Context(ceilings)

    plan = first_use.FirstUsePlan(sweep_id="t")
    context, source = first_use.shared_ceilings(plan, key, build, folder=folder)
    out.write_text(f"{source} {context.ceilings.read_bw_gb_s}")


def _workers(tmp_path: Path, keys: list[str]) -> tuple[list[str], list[str]]:
    """``keys``' processes started together: (measurements logged, each one's answer)."""
    ctx = multiprocessing.get_context("fork")
    log = tmp_path / "measured.log"
    outs = [tmp_path / f"out{i}" for i in range(len(keys))]
    procs = [ctx.Process(target=_measure_in, args=(tmp_path / "share", key, log, out))
             for key, out in zip(keys, outs, strict=True)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    return log.read_text().splitlines(), [out.read_text() for out in outs]


def test_four_workers_of_one_gpu_model_measure_its_ceilings_once(tmp_path):
    measured, answers = _workers(tmp_path, [H100] * 4)
    assert measured == [H100]
    assert sorted(a.split()[0] for a in answers) == ["measured", "shared", "shared", "shared"]
    assert {a.split()[1] for a in answers} == {str(3000.0 + len(H100))}  # one measurement


def test_two_gpu_models_on_one_host_are_each_measured_once(tmp_path):
    measured, answers = _workers(tmp_path, [H100, H200, H100, H200])
    assert sorted(measured) == sorted([H100, H200])
    by_key = {}
    for key, answer in zip([H100, H200, H100, H200], answers, strict=True):
        by_key.setdefault(key, set()).add(answer.split()[1])
    assert by_key == {H100: {str(3000.0 + len(H100))}, H200: {str(3000.0 + len(H200))}}


def test_the_clients_ceilings_are_used_without_measuring(tmp_path):
    first_use.clear()
    given = _ceilings("NVIDIA H100 80GB HBM3", 3123.0)
    plan = first_use.FirstUsePlan(sweep_id="t", ceilings=((H100, first_use.encode_ceilings(
        given)),))
    built = []

    def build(ceilings):
        built.append(ceilings)
        return _Context(ceilings)

    context, source = first_use.shared_ceilings(plan, H100, build, folder=tmp_path / "s")
    assert source == "client" and built == [given] and context.ceilings == given
    assert not (tmp_path / "s").exists()  # nothing measured, nothing shared
    # another GPU model is not given the client's: it measures
    _, other = first_use.shared_ceilings(plan, H200, build, folder=tmp_path / "s")
    assert other == "measured" and built[-1] is None
    assert first_use.COUNTS == {"ceilings_client": 1, "ceilings_measured": 1}


def test_a_failed_measurement_is_not_shared(tmp_path):
    plan = first_use.FirstUsePlan(sweep_id="t")
    calls = []

    def build(ceilings):
        calls.append(ceilings)
        return _Context(ceilings or MeasuredCeilings(device="x",
                                                     method={"not_measured": "no CuPy"}))

    for _ in range(2):
        assert first_use.shared_ceilings(plan, H100, build, folder=tmp_path)[1] == "measured"
    assert calls == [None, None]  # the second worker tries again


def test_the_plan_keys_the_clients_measured_gpu_and_the_routes_it_needs():
    ceilings = _ceilings("NVIDIA H100 80GB HBM3", 3000.0)
    gpu = DeviceContext(spec=None, ceilings=ceilings, driver="580.159.04",
                        detected="NVIDIA H100 80GB HBM3", rates=object())
    plan = first_use.plan_for(gpu, ["cupy-cusparse-i32", "cuda-csr-vector",
                                    "torch-cusparse-i64"], "abc")
    assert plan.sweep_id == "abc" and [k for k, _ in plan.ceilings] == [H100]
    assert plan.given(H100) == ceilings and plan.given(H200) is None
    assert plan.routes == (("cupy", "cupy-cusparse-i32"), ("torch", "torch-cusparse-i32"))
    failed = replace(gpu, ceilings=MeasuredCeilings(device="x", method={"not_measured": "?"}))
    assert first_use.plan_for(failed, ["cuda-csr-vector"]).ceilings == ()
    assert first_use.plan_for(failed, ["cuda-csr-vector"]).sweep_id  # a new one


def _task(src: MatrixSource, backend: str, k: int = 0) -> SweepTask:
    return SweepTask(source=src, backend=backend, op="spmm" if k else "spmv",
                     params=SpmmParams(k=k) if k else SpmvParams())


def test_warm_cases_are_one_per_gpu_backend_and_parameters_on_the_smallest_matrix():
    big, small, middle = (MatrixSource(f"/m/{n}.mtx", n, "file") for n in ("big", "s", "mid"))
    size = {big: 9e6, small: 1e3, middle: 5e4}
    groups = {src: [_task(src, b, k) for k in (8, 64) for b in ("g1", "g2", "cpu")]
              for src in (big, small, middle)}
    warm = warm_up.warm_cases(groups, size.__getitem__, lambda t: t.backend != "cpu")
    assert [(t.backend, t.params.k, t.source.name) for t in warm] == [
        ("g1", 8, "s"), ("g2", 8, "s"), ("g1", 64, "s"), ("g2", 64, "s")]
    assert warm_up.warm_cases(groups, size.__getitem__, lambda t: False) == ()


def test_warm_cases_are_dealt_out_over_a_hosts_workers_and_none_to_a_lone_worker():
    cases = tuple(range(5))
    assert warm_up.shares(cases, 2) == [(0, 2, 4), (1, 3)]
    assert warm_up.shares(cases, 4) == [(0, 4), (1,), (2,), (3,)]
    assert warm_up.shares(cases, 1) == [()]  # its own cases compile what they need


def test_a_worker_predicts_with_the_clients_ceilings_and_measures_nothing(monkeypatch):
    """On this CPU machine the present device is the CPU: its key is the machine's, and the
    worker's context is the client's measurement (it used to measure the CPU again, 1.3 s
    a worker)."""
    first_use.clear()
    given = _ceilings("this CPU", 12.5)
    key = first_use.device_key()
    plan = first_use.FirstUsePlan(sweep_id="w1", ceilings=(
        (key, first_use.encode_ceilings(given)),))
    monkeypatch.setattr("sparsescope.hardware.cpu_ceilings.measure_cpu_ceilings",
                        lambda **_: pytest.fail("measured"))
    first_use.install(plan)
    context = worker.model_device("gpu")
    assert context.ceilings == given and worker.model_device("gpu") is context
    assert first_use.ceilings_source(plan) == "client"
    assert first_use.COUNTS == {"ceilings_client": 1}
    first_use.clear()


@pytest.fixture
def gpu_fakes(monkeypatch):
    """Two stand-in GPU backends (``fake_backends.SleepGpuBackend``), 10 ms a case."""
    monkeypatch.syspath_prepend(str(HERE))
    for name in ("sleep-gpu", "sleep-gpu-2"):
        monkeypatch.setitem(registry.BACKENDS, ("spmv", name), "fake_backends:SleepGpuBackend")
    monkeypatch.setenv("SPARSESCOPE_TEST_GPU_S", "0.01")
    matrix_cache.clear()
    first_use.clear()


def test_in_process_the_first_use_is_recorded_apart_and_runs_no_warm_case(tmp_path, store,
                                                                          gpu_fakes):
    folder = write_collection(tmp_path / "c", 3)
    out = api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["sleep-gpu"],
                    timing=TIMING)
    assert out.ran == 3 and {c.outcome for c in out.runset.cases} == {"ok"}
    (record,) = out.engine.first_use
    assert record["ceilings"] == "client" and record["warm_cases"] == ()
    assert record["seconds"] > 0 and "device" in record["stages"]
    throughput = out.throughput()
    assert throughput["first_use"] == [record]
    assert throughput["first_use_s"] == round(record["seconds"], 6)
    assert first_use.COUNTS["warm_cases"] == 0 and first_use.COUNTS["ceilings_measured"] == 0
    # no device stage left for the first case: the context was built by the warm-up
    assert all(c.stages.of("device") == 0 for c in out.runset.cases)


def test_a_cpu_sweep_has_no_first_use(tmp_path, store):
    folder = write_collection(tmp_path / "c", 2)
    out = api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["scipy-cpu"],
                    timing=TIMING)
    assert out.ran == 2 and out.engine.first_use == []


@pytest.mark.slow
def test_on_a_cluster_each_warm_case_runs_once_per_host_and_no_worker_measures(
        tmp_path, store, gpu_fakes, monkeypatch):
    # a CuPy that compiles again in every process (before 14.1): the warm cases run
    monkeypatch.setattr(warm_up, "kernels_shared_on_disk", lambda version=None: False)
    folder = write_collection(tmp_path / "c", 5)
    sources = expand_sources([str(folder)])
    out = api.sweep([str(folder)], out_dir=tmp_path / "o", timing=TIMING, cluster="local",
                    workers=2, quiet=True, backends=["sleep-gpu", "sleep-gpu-2"])
    assert out.ran == 10 and {c.outcome for c in out.runset.cases} == {"ok"}
    records = out.engine.first_use
    assert len(records) == 2 and len({r["worker"] for r in records}) == 2
    assert {r["ceilings"] for r in records} == {"client"}  # no worker measured
    warm = sorted(case for r in records for case in r["warm_cases"])
    from sparsescope.sweep.source_facts import size_hint

    smallest = min(sources, key=size_hint).name
    # each GPU backend once on the host (2 workers), on the smallest matrix, one each
    assert warm == [f"sleep-gpu-2@{smallest}", f"sleep-gpu@{smallest}"]
    assert [len(r["warm_cases"]) for r in records] == [1, 1]
    assert {r["host"] for r in records} == {records[0]["host"]}
    assert all(r["cache_dirs"] == records[0]["cache_dirs"] for r in records)
    assert out.engine.busy_s >= out.engine.first_use_s > 0


def test_warm_cases_only_where_cupy_compiles_again_in_every_process(monkeypatch):
    assert warm_up.kernels_shared_on_disk("14.2.0") and warm_up.kernels_shared_on_disk("14.1")
    assert warm_up.kernels_shared_on_disk("15.0.0rc1")
    assert not warm_up.kernels_shared_on_disk("14.0.1")
    assert not warm_up.kernels_shared_on_disk("13.6.0")
    from sparsescope.sweep import engine

    task = SweepTask(source=None, backend="sleep-gpu", op="spmv", params=SpmvParams())
    monkeypatch.setattr(engine, "_backend_device", lambda t: "gpu")
    monkeypatch.setattr("sparsescope.sweep.source_facts.size_hint", lambda src: 1.0)
    groups = {"m": [task]}
    monkeypatch.setattr(warm_up, "kernels_shared_on_disk", lambda version=None: True)
    assert engine._first_use_plan(None, groups).warm == ()
    monkeypatch.setattr(warm_up, "kernels_shared_on_disk", lambda version=None: False)
    assert [t.backend for t in engine._first_use_plan(None, groups).warm] == ["sleep-gpu"]
