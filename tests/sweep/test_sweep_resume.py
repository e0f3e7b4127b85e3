"""Content de-duplication that keeps every file's name and path (issue 33), and a resume that
loads nothing and starts no cluster when every case is stored (issue 35). Work is counted
(matrices loaded, clusters started, cases built), never timed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from sweep_builders import TIMING, write_collection

from sparsescope import api, matrices
from sparsescope.sweep import cluster, matrix_cache, sources

HERE = Path(__file__).parent


def _same_content_folder(folder: Path) -> Path:
    """``a.mtx`` and ``b.mtx`` with one content, ``c.npz`` another."""
    folder.mkdir(parents=True)
    first = matrices.generate("banded", 30, 120, seed=1)
    matrices.write_matrix(first, folder / "a.mtx")
    shutil.copy(folder / "a.mtx", folder / "b.mtx")
    matrices.write_matrix(matrices.generate("rmat", 32, 150, seed=2), folder / "c.npz")
    return folder


def _results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def test_two_files_with_one_content_are_measured_once_and_each_keeps_its_name(tmp_path,
                                                                             store):
    folder = _same_content_folder(tmp_path / "m")
    out = api.sweep([str(folder)], out_dir=tmp_path / "o", backends=["scipy-cpu"],
                    timing=TIMING)
    assert (out.ran, out.stored) == (2, 1)  # a and c measured; b is a's measurement
    assert [c.matrix for c in out.runset.cases] == ["a", "b", "c"]
    assert all(c.outcome == "ok" for c in out.runset.cases)
    a, b = out.runset.cases[:2]
    assert a.time_ms == b.time_ms  # one measurement, two names
    by_name = {m.name: m for m in out.runset.matrices}
    assert by_name["a"].source == str(folder / "a.mtx")
    assert by_name["b"].source == str(folder / "b.mtx")
    assert by_name["b"].stats == by_name["a"].stats
    written = _results(tmp_path / "o")
    assert [c["matrix"] for c in written["cases"]] == ["a", "b", "c"]
    assert {m["name"]: m["source"] for m in written["matrices"]}["b"] == str(folder / "b.mtx")


def test_a_renamed_copy_swept_later_is_reported_under_its_own_name_and_path(tmp_path, store):
    folder = _same_content_folder(tmp_path / "m")
    api.sweep([str(folder / "a.mtx")], out_dir=tmp_path / "o1", backends=["scipy-cpu"],
              timing=TIMING)
    copy = tmp_path / "elsewhere" / "renamed.mtx"
    copy.parent.mkdir()
    shutil.copy(folder / "a.mtx", copy)
    out = api.sweep([str(copy)], out_dir=tmp_path / "o2", backends=["scipy-cpu"],
                    timing=TIMING)
    assert (out.ran, out.stored) == (0, 1)  # the store's case, by content
    (case,) = out.runset.cases
    (record,) = out.runset.matrices
    assert case.matrix == record.name == "renamed"
    assert record.source == str(copy)


def _no_cluster_no_load(monkeypatch):
    """Fail the test if a cluster starts or a matrix is loaded."""
    def refuse(*args, **kwargs):
        raise AssertionError("a cluster was started or a matrix loaded")

    monkeypatch.setattr(cluster, "start_cluster", refuse)
    monkeypatch.setattr(sources, "load_source", refuse)
    monkeypatch.setattr(matrix_cache, "load_source", refuse)


@pytest.mark.parametrize("where", [{}, {"cluster": "local", "workers": 2}],
                         ids=["in-process", "local-cluster"])
def test_a_resume_with_every_case_stored_loads_nothing_and_starts_no_cluster(
        tmp_path, store, monkeypatch, where):
    folder = write_collection(tmp_path / "c", 4)
    options = dict(out_dir=tmp_path / "o", backends=["scipy-cpu"], timing=TIMING, quiet=True)
    first = api.sweep([str(folder)], **options)
    assert first.ran == 4
    report = tmp_path / "o" / "report.html"
    before = report.stat().st_mtime_ns
    _no_cluster_no_load(monkeypatch)
    again = api.sweep([str(folder)], **options, **where)
    assert (again.ran, again.stored) == (0, 4)
    engine = again.engine
    assert (engine.cluster, engine.workers, engine.probes) == ("", 0, 0)
    assert again.outputs_kept and report.stat().st_mtime_ns == before  # not written again
    assert again.runset.run_id == first.runset.run_id
    assert [c.matrix for c in again.runset.cases] == [c.matrix for c in first.runset.cases]
    t = again.throughput()
    assert t["cluster"] == "" and t["matrices_loaded"] == 0 and not t["outputs_rewritten"]


def test_a_changed_file_is_loaded_again_and_the_others_are_not(tmp_path, store):
    folder = write_collection(tmp_path / "c", 3)
    options = dict(out_dir=tmp_path / "o", backends=["scipy-cpu"], timing=TIMING)
    api.sweep([str(folder)], **options)
    changed = sorted(folder.rglob("*.mtx"))[0]
    matrices.write_matrix(matrices.generate("uniform", 25, 90, seed=9), changed)
    again = api.sweep([str(folder)], **options)
    assert (again.ran, again.stored, again.engine.probes) == (1, 2, 1)
    assert not again.outputs_kept  # a case changed: results and reports written again
    touched = sorted(folder.rglob("*.npz"))[0]
    os.utime(touched)  # same content, new times: loaded to find out, nothing run
    third = api.sweep([str(folder)], **options)
    assert (third.ran, third.stored, third.engine.probes) == (0, 3, 1)


def test_outputs_are_written_again_when_a_report_file_is_gone(tmp_path, store):
    folder = write_collection(tmp_path / "c", 2)
    options = dict(out_dir=tmp_path / "o", backends=["scipy-cpu"], timing=TIMING)
    api.sweep([str(folder)], **options)
    (tmp_path / "o" / "report.md").unlink()
    again = api.sweep([str(folder)], **options)
    assert not again.outputs_kept and (tmp_path / "o" / "report.md").is_file()
    assert again.engine.probes == 0  # the cases were still found without loading


def test_the_float64_reference_is_built_once_per_matrix_for_all_its_backends(tmp_path, store,
                                                                             monkeypatch):
    from sparsescope import registry
    from sparsescope.ops.spmv import SpmvOp

    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "twin-cpu"), "fake_backends:TwinCpuBackend")
    built: list[int] = []
    original = SpmvOp.make_case

    def counting(self, csr, *args, **kwargs):
        built.append(csr.nnz)
        return original(self, csr, *args, **kwargs)

    monkeypatch.setattr(SpmvOp, "make_case", counting)
    matrix_cache.clear()
    folder = write_collection(tmp_path / "c", 2)
    out = api.sweep([str(folder)], out_dir=tmp_path / "o", timing=TIMING,
                    backends=["scipy-cpu", "twin-cpu"])
    assert out.ran == 4 and {c.outcome for c in out.runset.cases} == {"ok"}
    assert len(built) == 2 == matrix_cache.COUNTS["cases_built"]  # one per matrix, not 4


def test_a_throughput_sweep_never_resumes_from_latency_cases(tmp_path, store):
    # one store, one matrix, one backend: the throughput sweep measures again (another
    # measurement), and its own resume then finds its cases; the latency cases stay as they were
    from dataclasses import replace

    folder = _same_content_folder(tmp_path / "m")
    source = [str(folder / "c.npz")]
    latency = api.sweep(source, out_dir=tmp_path / "lat", backends=["scipy-cpu"], timing=TIMING)
    throughput_timing = replace(TIMING, mode="throughput")
    first = api.sweep(source, out_dir=tmp_path / "thr", backends=["scipy-cpu"],
                      timing=throughput_timing)
    again = api.sweep(source, out_dir=tmp_path / "thr", backends=["scipy-cpu"],
                      timing=throughput_timing)
    assert (latency.ran, first.ran, first.stored, again.ran, again.stored) == (1, 1, 0, 0, 1)
    assert [c.timing_mode for c in first.runset.cases] == ["throughput"]
    resumed = api.sweep(source, out_dir=tmp_path / "lat", backends=["scipy-cpu"], timing=TIMING)
    assert (resumed.ran, resumed.stored) == (0, 1)
    assert [c.timing_mode for c in resumed.runset.cases] == ["latency"]
