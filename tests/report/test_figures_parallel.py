"""Figures drawn side by side in forked processes: the same files, byte for byte, as drawn in a
row; valid PNGs; a plot's exception still stops the report; a pool that cannot run draws in a
row."""

from __future__ import annotations

import os
import struct
import sys
import zlib

import pytest
from report_builders import make_cpu_runset, make_gpu_runset

from sparsescope.report import figure_pool
from sparsescope.report.context import build_context
from sparsescope.report.figures import _png, render_figures
from sparsescope.report.spmv_layout import FIGURE_FUNCS, FIGURE_TABLE
from sparsescope.report.tables import build_tables

fork_only = pytest.mark.skipif(not figure_pool.can_fork(), reason="no fork start method")


@pytest.fixture(autouse=True)
def _threads_left_by_other_tests_ignored(monkeypatch):
    """``can_fork`` refuses a multi-threaded process (its rule is checked on its own in
    ``test_no_fork_in_a_multi_threaded_or_gpu_process``). Tests that ran before in this
    process may have left threads behind (the format cache's idle builders wait on their queue
    for good; a sweep leaves a timed-out case's thread running), which made the forked drawing
    here fall back to a row and fail, depending on which tests a worker ran first. So the
    threads counted are the main thread and those started during the test."""
    import threading

    before = {thread.ident for thread in threading.enumerate()
              if thread is not threading.main_thread()}
    monkeypatch.setattr(figure_pool.threading, "active_count", lambda: sum(
        1 for thread in threading.enumerate() if thread.ident not in before))


def report_inputs(runset):
    ctx = build_context(runset)
    tables = {t.name: t for t in build_tables(runset, ctx=ctx)}
    plots = {n: p for n, p in FIGURE_FUNCS.items() if FIGURE_TABLE.get(n) in tables}
    return ctx, tables, plots


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk, after checking the signature and its CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    body = data[16:29]
    (crc,) = struct.unpack(">I", data[29:33])
    assert crc == zlib.crc32(b"IHDR" + body)
    assert data.endswith(b"IEND\xaeB`\x82")
    return struct.unpack(">II", body[:8])


@fork_only
def test_forked_figures_are_the_serial_ones_byte_for_byte():
    ctx, tables, plots = report_inputs(make_cpu_runset())
    some = {n: plots[n] for n in ("bw_efficiency", "roofline")}
    serial = render_figures(ctx, tables, some, progress=False, workers=1)
    forked = render_figures(ctx, tables, some, progress=False, workers=2)
    assert [f.name for f in forked] == [f.name for f in serial] == list(some)
    assert forked == serial  # titles, captions and PNG bytes alike
    for figure in forked:
        width, height = png_size(figure.png)
        assert width > 400 and height > 200


@fork_only
@pytest.mark.slow
def test_a_report_written_with_forked_figures_has_the_same_files(tmp_path, monkeypatch):
    """A GPU run's report (every SpMV figure drawn) written twice, in a row and forked."""
    from sparsescope.report.write import write_report

    written = {}
    for workers in ("1", "2"):
        monkeypatch.setenv(figure_pool.WORKERS_ENV, workers)
        out = tmp_path / workers
        paths = write_report(make_gpu_runset(), out, progress=False)
        written[workers] = {p.name: p.read_bytes() for p in sorted((out / "figures").iterdir())}
        assert {p.name for p in paths.figures} == set(written[workers])
    assert written["1"] == written["2"] and len(written["1"]) >= 4
    for data in written["2"].values():
        png_size(data)


def tiny_plot(ctx, tables):
    """A one-line figure titled with the drawing process's id."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1), dpi=20)
    fig.subplots().set_title(str(os.getpid()))
    return fig, "tiny"


def failing_plot(ctx, tables):
    raise ValueError("this plot cannot be drawn")


@fork_only
def test_figures_are_drawn_in_child_processes_in_report_order():
    plots = {f"fig{i}": tiny_plot for i in range(4)}
    plots["skipped"] = lambda ctx, tables: "nothing to draw"
    out = render_figures(None, {}, plots, progress=False, workers=2)
    assert [f.name for f in out] == ["fig0", "fig1", "fig2", "fig3", "skipped"]
    pids = {int(f.title) for f in out[:4]}
    assert os.getpid() not in pids and len(pids) <= 2
    assert out[4].png is None and out[4].skipped_reason == "nothing to draw"
    serial = render_figures(None, {}, plots, progress=False, workers=1)
    assert {int(f.title) for f in serial[:4]} == {os.getpid()}


@fork_only
def test_a_plot_that_raises_stops_the_forked_drawing_too():
    plots = {"good": tiny_plot, "bad": failing_plot}
    with pytest.raises(ValueError, match="this plot cannot be drawn"):
        render_figures(None, {}, plots, progress=False, workers=2)
    assert figure_pool._SHARED is None


def test_without_fork_the_figures_are_drawn_in_a_row(monkeypatch):
    monkeypatch.setattr(figure_pool, "can_fork", lambda: False)
    out = render_figures(None, {}, {"a": tiny_plot, "b": tiny_plot}, progress=False,
                         workers=2)
    assert {int(f.title) for f in out} == {os.getpid()}


@fork_only
def test_a_broken_pool_falls_back_to_drawing_in_a_row(monkeypatch):
    def broken(*args, **kwargs):
        return None  # what _draw_forked returns when the pool broke

    monkeypatch.setattr(figure_pool, "_draw_forked", broken)
    out = figure_pool.draw_figures(None, {}, {"a": tiny_plot, "b": tiny_plot}, png=_png,
                                   progress=False, workers=2)
    assert [f.name for f in out] == ["a", "b"] and all(f.png for f in out)


def test_a_refused_fork_falls_back_to_drawing_in_a_row(monkeypatch):
    """``fork`` refused (EAGAIN on a machine out of processes or memory): drawn in a row."""

    class Refused:
        def __init__(self, *args, **kwargs):
            raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(figure_pool, "ProcessPoolExecutor", Refused)
    monkeypatch.setattr(figure_pool, "can_fork", lambda: True)
    out = render_figures(None, {}, {"a": tiny_plot, "b": tiny_plot}, progress=False,
                         workers=2)
    assert {int(f.title) for f in out} == {os.getpid()} and figure_pool._SHARED is None


def test_a_killed_worker_is_reported_as_a_broken_pool(monkeypatch):
    """A child that dies (os._exit) breaks the pool: the caller gets None and draws again."""
    if not figure_pool.can_fork():
        pytest.skip("no fork start method")

    def dies(ctx, tables):
        os._exit(3)

    assert figure_pool._draw_forked(None, {}, {"a": dies, "b": dies}, _png, 2,
                                    lambda: None) is None
    assert figure_pool._SHARED is None


@pytest.mark.parametrize("count, cores, busy, env, expected", [
    (8, 2, 0.0, {}, 2),                                  # the 2-core machine, idle
    (8, 2, 0.2, {}, 2),                                  # ... daemons and ticks
    (8, 2, 0.7, {}, 1),                                  # ... a core mostly taken
    (8, 2, 3.5, {}, 1),                                  # ... loaded: draw in a row
    (1, 16, 0.0, {}, 1),                                 # one figure: nothing to share
    (8, 16, 3.0, {}, figure_pool.MAX_WORKERS),           # capped
    (8, 16, 0.0, {figure_pool.WORKERS_ENV: "1"}, 1),     # forced into a row
    (8, 1, 5.0, {figure_pool.WORKERS_ENV: "3"}, 3),      # forced, whatever the load
    (8, 2, 0.0, {figure_pool.WORKERS_ENV: "many"}, 2),   # not a number: ignored
])
def test_figure_workers(count, cores, busy, env, expected):
    assert figure_pool.figure_workers(count, cores=cores, busy=busy, env=env) == expected


def test_others_load_leaves_this_process_out(monkeypatch):
    monkeypatch.setattr(figure_pool.os, "getloadavg", lambda: (2.5, 1.0, 0.5))
    assert figure_pool.others_load() == 1.5
    monkeypatch.setattr(figure_pool.os, "getloadavg", lambda: (0.4, 0.1, 0.0))
    assert figure_pool.others_load() == 0.0


def test_no_fork_in_a_multi_threaded_or_gpu_process(monkeypatch):
    # a sweep's Dask client runs threads, and CUDA does not survive fork: a 2-GPU sweep whose
    # client forked figure workers printed "double free or corruption" from a child
    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("no fork start method")
    monkeypatch.setattr(figure_pool.threading, "active_count", lambda: 1)
    for name in figure_pool.GPU_MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert figure_pool.can_fork()
    monkeypatch.setattr(figure_pool.threading, "active_count", lambda: 3)
    assert not figure_pool.can_fork()
    monkeypatch.setattr(figure_pool.threading, "active_count", lambda: 1)
    monkeypatch.setitem(sys.modules, "cupy", object())
    assert not figure_pool.can_fork()
