"""Keeping GPUs fed (issue 35): the largest matrices first, each matrix loaded once per worker
(also while a background thread prefetches it), the next matrix loaded while the current one's
cases time on a GPU, never beside a CPU timing. Work is counted, never timed."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sweep_builders import TIMING, write_collection

from sparsescope import api, matrices, registry
from sparsescope.sweep import host_cores, matrix_cache, prefetch, sources
from sparsescope.sweep.source_facts import largest_first, size_hint, source_identity
from sparsescope.sweep.sources import MatrixSource, expand_sources

HERE = Path(__file__).parent


@pytest.fixture
def sleep_gpu(monkeypatch):
    """The stand-in GPU backend (``fake_backends.SleepGpuBackend``), 10 ms a case."""
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "sleep-gpu"),
                        "fake_backends:SleepGpuBackend")
    monkeypatch.setenv("SPARSESCOPE_TEST_GPU_S", "0.01")
    matrix_cache.clear()


def test_the_largest_matrices_come_first(tmp_path):
    for name, nnz in (("small", 100), ("large", 4000), ("middle", 900)):
        matrices.write_matrix(matrices.generate("uniform", 200, nnz, seed=1),
                              tmp_path / f"{name}.mtx")
    found = expand_sources([str(tmp_path), "suite:awkward#heavy-row"])
    assert [s.name for s in found] == ["large", "middle", "small", "heavy-row"]  # plan order
    ordered = largest_first(found)
    hints = [size_hint(s) for s in ordered]
    assert hints == sorted(hints, reverse=True) and hints[-1] > 0
    names = [s.name for s in ordered]
    assert names.index("large") < names.index("middle") < names.index("small")


def test_an_identity_is_the_same_while_the_file_is_and_changes_with_it(tmp_path):
    path = tmp_path / "a.mtx"
    matrices.write_matrix(matrices.generate("banded", 20, 60, seed=1), path)
    (src,) = expand_sources([str(path)])
    first = source_identity(src)
    assert first is not None and source_identity(src) == first
    matrices.write_matrix(matrices.generate("banded", 20, 61, seed=1), path)
    assert source_identity(src) not in (None, first)
    assert source_identity(MatrixSource(str(tmp_path / "gone.mtx"), "gone", "file")) is None
    suite = expand_sources(["suite:awkward#heavy-row"])[0]
    assert source_identity(suite) == source_identity(suite) is not None


def _slow_loads(monkeypatch, seconds: float) -> list[str]:
    loads: list[str] = []
    original = sources.load_source

    def slow(src):
        loads.append(src.name)
        time.sleep(seconds)
        return original(src)

    monkeypatch.setattr(matrix_cache, "load_source", slow)
    return loads


def test_a_matrix_loading_in_one_thread_is_waited_for_by_another(tmp_path, monkeypatch):
    matrix_cache.clear()
    loads = _slow_loads(monkeypatch, 0.1)
    (src,) = expand_sources([str(write_collection(tmp_path / "c", 1))])
    got: list = []
    threads = [threading.Thread(target=lambda: got.append(matrix_cache.loaded(src)[1]))
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == [src.name] and len(set(got)) == 1 and len(got) == 3


def test_a_prefetched_probe_is_used_by_the_probe_task(tmp_path, monkeypatch):
    matrix_cache.clear()
    loads = _slow_loads(monkeypatch, 0.05)
    one, two = expand_sources([str(write_collection(tmp_path / "c", 2))])
    assert prefetch.start(two) is True and prefetch.start(two) is False
    first = prefetch.probe(one)
    second = prefetch.probe(two)
    assert loads == [two.name, one.name] or loads == [one.name, two.name]
    assert len(loads) == 2  # each loaded once: the probe took the prefetched one
    assert first["matrix"]["name"] == one.name and second["matrix"]["name"] == two.name
    assert second["hash"] == matrix_cache.loaded(two)[1]


def test_in_process_a_gpu_sweep_loads_the_next_matrix_while_a_cpu_sweep_does_not(
        tmp_path, store, sleep_gpu):
    folder = write_collection(tmp_path / "c", 4)
    gpu = api.sweep([str(folder)], out_dir=tmp_path / "g", backends=["sleep-gpu"],
                    timing=TIMING)
    assert gpu.ran == 4 and {c.outcome for c in gpu.runset.cases} == {"ok"}
    assert gpu.engine.prefetched == (3 if host_cores.physical_cores() >= 2 else 0)
    assert matrix_cache.COUNTS["loads"] == 4  # each matrix once, prefetched or not
    cpu = api.sweep([str(folder)], out_dir=tmp_path / "c2", backends=["scipy-cpu"],
                    timing=TIMING)
    assert cpu.ran == 4 and cpu.engine.prefetched == 0


@pytest.mark.slow
def test_on_a_cluster_each_worker_gets_its_next_matrix_while_its_cases_run(tmp_path, store,
                                                                          sleep_gpu,
                                                                          monkeypatch):
    from sparsescope.sweep import host_cores

    # as on a GPU host, where each worker has a core to spare (this one may have 2 in all)
    monkeypatch.setattr(host_cores, "room_to_prefetch", lambda load: True)
    folder = write_collection(tmp_path / "c", 6)
    out = api.sweep([str(folder)], out_dir=tmp_path / "o", timing=TIMING, cluster="local",
                    workers=2, quiet=True, backends=["sleep-gpu"])
    assert out.ran == 6 and {c.outcome for c in out.runset.cases} == {"ok"}
    e = out.engine
    assert (e.cluster, e.workers, e.probes) == ("local", 2, 6)
    assert e.prefetched == 6 - 2  # every matrix after each worker's first, loaded ahead
    cpu = api.sweep([str(folder)], out_dir=tmp_path / "c", timing=TIMING, cluster="local",
                    workers=2, quiet=True, backends=["scipy-cpu"])
    assert cpu.ran == 6 and cpu.engine.prefetched == 0  # never beside a CPU timing
