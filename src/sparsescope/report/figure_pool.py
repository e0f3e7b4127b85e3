"""Draw a report's figures side by side in forked worker processes, or one after another.

Drawing is matplotlib's text layout and PNG encoding, all Python and all one core: the eight
SpMV figures of a CPU run took 2.3-2.8 s in a row on a 2-core machine, a fifth of the main job.
Each figure is independent of the others, so :func:`draw_figures` hands them to a pool of
``fork``-ed processes: a child starts with the parent's memory (the report context, the tables,
matplotlib already imported and its fonts loaded), draws the figures it is given and sends back
only the PNG bytes and captions. Nothing is pickled on the way in, and the figures come back in
report order, byte for byte what drawing them in a row gives (the PNG metadata carries no date).

Where forking cannot help or is not safe it draws in a row: one figure or one usable core, no
``fork`` start method (Windows, macOS's default), a daemonic process (a Dask worker may not
have children), a multi-threaded process (a sweep's Dask client), a GPU process (CUDA does
not survive ``fork``), ``SPARSESCOPE_FIGURE_WORKERS=1``, or a pool that breaks (a child killed): the
figures are then drawn again here. An exception raised by a plot function propagates as it
does in a row: a half-made report is never written.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from sparsescope.report.context import ReportContext
from sparsescope.report.figure_types import FigureResult, PlotFn
from sparsescope.report.table_types import Table

#: Most worker processes: beyond the machine's cores a worker only waits; beyond four the
#: eight SpMV figures give a worker two or fewer, and forking costs more than it saves.
MAX_WORKERS = 4
#: Environment variable naming the worker count (1: draw in a row).
WORKERS_ENV = "SPARSESCOPE_FIGURE_WORKERS"

PngFn = Callable[[object], bytes]

#: What a forked worker draws from: (context, tables, plots, png), set only while a pool runs.
_SHARED: tuple | None = None


def usable_cores() -> int:
    """Logical CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def others_load() -> float:
    """Runnable processes besides this one, on average over the last minute: the 1-minute
    load average less this process's own 1 (0 where the OS has no load average)."""
    try:
        return max(0.0, os.getloadavg()[0] - 1.0)
    except (AttributeError, OSError):
        return 0.0


def figure_workers(count: int, *, cores: int | None = None, busy: float | None = None,
                   env: Mapping[str, str] = os.environ) -> int:
    """Processes to draw ``count`` figures in::

        free    = round(cores - busy)                  (busy: :func:`others_load`)
        workers = max(1, min(count, free, MAX_WORKERS))  (1: draw in a row)

    Cores other processes keep busy give a forked worker nothing but a wait: on the 2-core
    machine with one core taken, six figures took 1.3-1.5 s in a row and 1.5-1.7 s forked;
    with both cores free 1.5 s and 1.2-1.4 s; on 16 free cores 1.5 s and 0.9-1.0 s with 4.
    ``$SPARSESCOPE_FIGURE_WORKERS`` (a whole number >= 1) replaces the rule.
    A core counts as taken when others keep it busy more than half the time. Hand check:
    8 figures, 2 cores, busy 0.2 -> 2; busy 0.7 -> 1; 16 cores, busy 3 -> 4; 1 figure -> 1."""
    wanted = env.get(WORKERS_ENV, "").strip()
    if wanted.isdigit() and int(wanted) >= 1:
        return max(1, min(count, int(wanted)))
    cores = usable_cores() if cores is None else cores
    busy = others_load() if busy is None else busy
    return max(1, min(count, round(cores - busy), MAX_WORKERS))


#: GPU libraries whose CUDA state a forked child must not inherit: CUDA does not support
#: ``fork`` after it is initialised. A 2-GPU sweep whose client forked figure workers printed
#: "double free or corruption (out)" from a child (H100 x2, 2026-11-27; none with the figures
#: drawn in a row).
GPU_MODULES = ("cupy", "torch", "nvmath")


def can_fork() -> bool:
    """Whether this process may fork workers: the ``fork`` start method exists; this is not a
    daemonic process (which multiprocessing forbids children); it runs one thread (a child of
    a multi-threaded process starts with the other threads' locks held, and Python warns); and
    no GPU library is loaded (:data:`GPU_MODULES`)."""
    return ("fork" in multiprocessing.get_all_start_methods()
            and not multiprocessing.current_process().daemon
            and threading.active_count() == 1
            and not any(name in sys.modules for name in GPU_MODULES))


def draw_one(ctx: ReportContext, tables: Mapping[str, Table], name: str, fn: PlotFn,
             png: PngFn) -> FigureResult:
    """One figure drawn: its PNG bytes and caption, or skipped with the plot's reason. The
    title is the figure's suptitle, else its first axes' title, else the name."""
    out = fn(ctx, tables)
    title = name.replace("_", " ")
    if isinstance(out, str):
        return FigureResult(name, title, "", None, out)
    fig, caption = out
    if fig.get_suptitle():
        title = fig.get_suptitle()
    elif fig.axes and fig.axes[0].get_title():
        title = fig.axes[0].get_title()
    return FigureResult(name, title, caption, png(fig))


def _draw_shared(name: str) -> FigureResult:
    """In a forked worker: draw ``name`` from what the parent left in :data:`_SHARED`."""
    ctx, tables, plots, png = _SHARED
    return draw_one(ctx, tables, name, plots[name], png)


def _warm_matplotlib(png: PngFn) -> None:
    """Import matplotlib's figure and Agg canvas and draw one small figure here, once, so that
    every child starts with what a first figure sets up (the imports, 0.8 s; the font files
    and the mathtext parser a log axis's labels need, 0.4 s) instead of each paying for it."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1), dpi=20)
    ax = fig.subplots()
    ax.set_yscale("log")
    ax.plot([1, 10], [1, 100], label="warm")
    ax.set_title("warm")
    ax.legend()
    png(fig)


def _draw_forked(ctx, tables, plots, png, workers: int, advance) -> list[FigureResult] | None:
    """The figures drawn by ``workers`` forked processes, in ``plots`` order; None when the
    pool could not start (``fork`` refused: no memory or too many processes) or broke (a child
    killed): the caller draws them in a row. A plot function's own exception propagates."""
    global _SHARED
    _warm_matplotlib(png)
    _SHARED = (ctx, tables, plots, png)
    try:
        pool = None
        try:
            pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
            futures = [pool.submit(_draw_shared, name) for name in plots]
        except (OSError, BrokenProcessPool):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            return None
        with pool:
            results = []
            for future in futures:
                try:
                    results.append(future.result())
                except BrokenProcessPool:
                    return None
                advance()
            return results
    finally:
        _SHARED = None


def draw_figures(ctx: ReportContext, tables: Mapping[str, Table], plots: Mapping[str, PlotFn],
                 *, png: PngFn, progress: bool = True,
                 workers: int | None = None) -> list[FigureResult]:
    """Each of ``plots`` (figure name -> plot function, in report order) drawn with ``png`` as
    :class:`FigureResult`, in order; in ``workers`` forked processes (None:
    :func:`figure_workers`) where :func:`can_fork`, else in a row; a tqdm bar on stderr."""
    from sparsescope.progress import quiet_tqdm

    tqdm = quiet_tqdm()

    names = list(plots)
    workers = figure_workers(len(names)) if workers is None else max(1, min(workers,
                                                                            len(names)))
    with tqdm(total=len(names), desc="figures", unit="fig", file=sys.stderr,
              disable=not progress, leave=False) as bar:
        if workers > 1 and can_fork():
            results = _draw_forked(ctx, tables, plots, png, workers, bar.update)
            if results is not None:
                return results
            bar.reset()
        results = []
        for name in names:
            results.append(draw_one(ctx, tables, name, plots[name], png))
            bar.update()
        return results
