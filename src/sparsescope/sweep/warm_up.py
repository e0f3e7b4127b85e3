"""A sweep worker's warm-up: its first use before its cases, the kernels compiled once per host.

Every worker of a sweep of GPU backends runs one warm-up task (:func:`warm_up_task`) before its
cases: its device context (``sweep.first_use``: the client's ceilings, or one measurement per
GPU kind and host), its share of the host's *warm cases*, and the background load of its first
matrix. What it cost comes back as a :class:`FirstUse` record (seconds, stage by stage, where
the ceilings came from, the warm cases run, the SASS compiled), so a sweep's JSON shows each
worker's first use apart from its cases' work.

The warm cases compile the sweep's kernels once per host, not once per worker. What one worker
compiles lands in caches on disk that every process of the host reads: the SASS the model reads
(``sass.sass_cache``, ``$SPARSESCOPE_CACHE/sass``) and CuPy's kernel cache
(``$CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``; a module compiled with name
expressions, as ours are, CuPy reads back from it only from 14.1 on, and compiles again in
each process before: :func:`kernels_shared_on_disk`, with CuPy from 14.1 on a sweep runs no
warm cases, only each worker's context and first load). :func:`warm_cases`
takes each GPU backend and parameter set of the sweep once, on its smallest matrix, run through
the same runner with one timed call and the result dropped; :func:`shares` deals them out over
a host's workers, so each is compiled once there and the workers' first real cases read the
caches. A host of one worker warms nothing: its first cases compile what they need, as before,
and a one-GPU sweep does no added work. Every worker of a host shares the same cache folders
when it inherits one environment (a cluster the sweep starts); each record names the folders
its worker used (:func:`cache_dirs`), so a split shows.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sparsescope.sweep import first_use, prefetch, worker
from sparsescope.sweep.sources import MatrixSource
from sparsescope.sweep.tasks import SweepTask, params_key


@dataclass(frozen=True)
class FirstUse:
    """What one worker's first use cost (one warm-up task)."""

    worker: str
    """The Dask worker's address (empty in process)."""
    host: str
    seconds: float
    """Wall time of the warm-up on the worker (part of its busy time)."""
    stages: dict[str, float] = field(default_factory=dict)
    """Stage -> seconds of the warm-up (``stages.STAGES``: ``device`` is the context and its
    ceilings, the others the warm cases'), non-zero ones only."""
    ceilings: str = ""
    """Where the worker's ceilings came from (``first_use.shared_ceilings``): ``client`` (the
    client's measurement), ``shared`` (another worker's of this host), ``measured`` (here),
    ``none`` (no GPU context built)."""
    warm_cases: tuple[str, ...] = ()
    """``backend@matrix`` of each warm case run here."""
    warm_failed: tuple[str, ...] = ()
    """``backend: reason`` of each warm case that did not end ``ok`` (its kernels may still
    have compiled; the sweep's own case reports the same reason)."""
    sass_compiled: int = 0
    """Compiler runs for the model's SASS during the warm-up (``sass.sass_cache`` programs)."""
    cache_dirs: dict[str, str] = field(default_factory=dict)
    """``cupy`` and ``sass``: the kernel cache folders this worker reads and writes."""
    error: str = ""
    """Why the warm-up failed (its worker died), or empty."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


#: The first CuPy release that reads a module compiled with name expressions back from its
#: disk cache in another process (cupy#9801; multi-parameter templates whose expressions are
#: spelt as the demangler spells them, ``spmv_sell<float, 0, 1, ...>`` as ours are, cupy#10173).
CUPY_SHARES_NAMED_MODULES = (14, 1)


def kernels_shared_on_disk(version: str | None = None) -> bool:
    """Whether a worker's kernels compiled by another process of the host are read back from
    CuPy's disk cache (CuPy ``version``, default the installed one; False without CuPy). Then
    warm cases only move the compiles into a barrier that holds every worker for the slowest:
    on two H200s (2026-11-27, ``results/h200/sweep-gpus/``) a sweep with them ran 1.27x one
    GPU against 1.32x without, and ``benchmarks/kernel_cache_probe.py`` found a second
    process's 12 kernels all read from the cache (CuPy 14.2, 0 files written, 2.0 s against
    4.1 s)."""
    if version is None:
        try:
            import cupy
        except ImportError:
            return False
        version = cupy.__version__
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts) >= CUPY_SHARES_NAMED_MODULES


def warm_cases(groups: dict[MatrixSource, Sequence[SweepTask]], size: Callable[[Any], float],
               on_gpu: Callable[[SweepTask], bool]) -> tuple[SweepTask, ...]:
    """One case per GPU backend and parameter set of ``groups`` on its smallest matrix
    (``size``: the engine's size hint): what compiles a backend's kernels, on the matrix that
    loads and runs the fastest. Empty when no GPU backend is swept."""
    sources = [src for src, group in groups.items() if any(on_gpu(t) for t in group)]
    if not sources:
        return ()
    smallest = min(sources, key=size)
    seen: dict[tuple, SweepTask] = {}
    for group in groups.values():
        for task in group:
            key = (task.backend, task.op, params_key(task.params))
            if key not in seen and on_gpu(task):
                seen[key] = replace(task, source=smallest)
    return tuple(seen.values())


def shares(cases: Sequence[SweepTask], workers: int) -> list[tuple[SweepTask, ...]]:
    """``cases`` dealt out to a host's ``workers``, round robin (worker i gets cases i, i + W,
    ...); a host of one worker gets none (nothing to share: its cases compile what they
    need)."""
    if workers < 2:
        return [()] * workers
    return [tuple(cases[i::workers]) for i in range(workers)]


def cache_dirs() -> dict[str, str]:
    """The kernel cache folders this process uses: CuPy's (``$CUPY_CACHE_DIR``, else its
    default) and the SASS cache (``sass.sass_cache.cache_dir``)."""
    from sparsescope.sass.sass_cache import cache_dir

    cupy = os.environ.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache")
    return {"cupy": cupy, "sass": str(cache_dir())}


def warm_timing(timing):
    """The timing of a warm case: one call, no warm-up, no flush (its time is dropped)."""
    return replace(timing, warmups=0, repeats=1, min_total_ms=0.0, flush_l2=False,
                   mode="latency")


def warm_up_task(plan: first_use.FirstUsePlan | None, cases: Sequence[SweepTask], timing, *,
                 case_timeout_s: float | None = None, seed: int = 0,
                 factories: Sequence = (), prefetch_src: MatrixSource | None = None,
                 gpu: bool = True) -> dict:
    """A worker's first use (see the module docstring): begin loading ``prefetch_src`` (its
    first matrix) in the background, build its GPU context (``gpu``), run its share of warm
    ``cases`` (results dropped); the :class:`FirstUse` record as a dict. Never raises."""
    from sparsescope.sass.sass_cache import COUNTS as SASS_COUNTS
    from sparsescope.stages import StageClock

    begin = time.perf_counter()
    programs = SASS_COUNTS["programs"]
    if prefetch_src is not None:
        prefetch.start(prefetch_src)
    first_use.install(plan)
    clock = StageClock()
    ran, failed, error = [], [], ""
    with clock.active():
        try:
            if gpu:
                worker.model_device("gpu")
            for task, factory in zip(cases, list(factories) or [None] * len(cases),
                                     strict=True):
                data = worker.run_task(task, warm_timing(timing), case_timeout_s=case_timeout_s,
                                       factory=factory, seed=seed, plan=plan)
                first_use.COUNTS["warm_cases"] += 1
                ran.append(f"{task.backend}@{task.source.name}")
                case = data["case"]
                if case.get("outcome") != "ok":
                    failed.append(f"{task.backend}: {case.get('reason', '')}")
        except Exception as exc:  # noqa: BLE001 (a warm-up must not stop the sweep)
            error = f"{type(exc).__name__}: {exc}"
    seconds = {n: round(s, 6) for n, s in clock.total().seconds.items() if s > 0}
    record = FirstUse(worker=prefetch._address() or "", host=_host(),
                      seconds=time.perf_counter() - begin, stages=seconds,
                      ceilings=first_use.ceilings_source(plan) if gpu else "none",
                      warm_cases=tuple(ran), warm_failed=tuple(failed),
                      sass_compiled=SASS_COUNTS["programs"] - programs,
                      cache_dirs=cache_dirs(), error=error)
    return record.to_dict()


def _host() -> str:
    import socket

    return socket.gethostname()
