"""Shared test fixtures: the real H200 recordings in ``tests/fixtures/h200`` and a GPU probe.

Everything a test reads lives in this repository. Large recordings are committed compressed
(``NAME.xz``, a few ``NAME.gz``); the ``h200_fixtures`` fixture lays them out once per
session, decompressed, under their recorded names, beside the seed report they are checked against
(``tests/fixtures/seeds``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sparsescope._compressed import COMPRESSED_SUFFIXES, read_bytes, without_compression

# One OpenBLAS thread a test process (before NumPy loads; xdist's workers and every subprocess
# inherit it): the README's command runs a worker more than the cores, and OpenBLAS's own
# threads (one a core by default) oversubscribe the machine and spin waiting for work -- the
# model and backends tests took 8-12 % less CPU time with one (2 cores, 2026-11-28). A value
# set outside the tests wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT / "tests" / "fixtures"
H200_FIXTURES = FIXTURES / "h200"
SEED_TEXTS = FIXTURES / "seeds"


def _lay_out(source: Path, target: Path) -> None:
    """Copy ``source``'s files into ``target``, decompressing ``NAME.gz`` and ``NAME.xz`` to
    ``NAME``; a
    subfolder (``profile_check/``) likewise into its own."""
    target.mkdir(parents=True)
    for path in sorted(source.iterdir()):
        if path.is_dir():
            _lay_out(path, target / path.name)
        elif path.suffix in COMPRESSED_SUFFIXES:
            (target / without_compression(path.name)).write_bytes(read_bytes(path))
        else:
            shutil.copy2(path, target / path.name)


@pytest.fixture(scope="session")
def h200_fixtures(tmp_path_factory) -> Path:
    """Folder of real H200 profiler outputs, SASS listings and timings, decompressed into a
    session folder (``<session>/fixtures/h200``; its sibling ``seeds`` holds the seed report)."""
    root = tmp_path_factory.mktemp("recorded") / "fixtures"
    _lay_out(H200_FIXTURES, root / "h200")
    _lay_out(SEED_TEXTS, root / "seeds")
    return root / "h200"


@pytest.fixture(scope="session")
def committed():
    """``committed("results/...")``: a file or folder committed in this repository, compressed
    or not (``X``, ``X.xz`` as ``sparsescope results compact`` keeps results files, or
    ``X.gz``); a test that reads one fails, naming it, when it is gone."""

    def find(rel: str) -> Path:
        for path in (REPO_ROOT / rel, REPO_ROOT / f"{rel}.xz", REPO_ROOT / f"{rel}.gz"):
            if path.exists():
                return path
        raise AssertionError(f"{rel}: not committed (a test reads it)")

    return find


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory) -> Path:
    """The cache folder (``SPARSESCOPE_CACHE``) of this test session, shared by its xdist
    workers (their base folders' parent is the session's): its entries are keyed by content
    and written atomically (generated matrices, SASS of own kernels), so a worker reads what
    another built instead of running nvcc or a generator again. Without xdist, the base folder's
    ``cache``."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "cache"


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path_factory, session_cache, monkeypatch):
    """Keep every test's results store and caches out of the user's home."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("SPARSESCOPE_CACHE", str(session_cache))
    monkeypatch.setenv("SPARSESCOPE_STORE", str(base / "store.sqlite"))


@pytest.fixture
def figures_not_drawn(monkeypatch):
    """Each SpMV figure "not drawn" (a reason, the report's own skip path): for tests about exit
    codes, outputs, stored values or a report's text, where drawing the PNGs is most of a small
    run's time and says nothing of what is checked."""
    from sparsescope.report import spmv_layout

    monkeypatch.setattr(spmv_layout, "FIGURE_FUNCS", {
        name: (lambda ctx, tables: "not drawn in this test") for name in spmv_layout.FIGURE_FUNCS})


#: The CPU ceilings this test process measured, once (:func:`_ceilings_once`).
_MEASURED_CEILINGS: list = []


def _ceilings_once(measure=None):
    """This machine's CPU ceilings as this test process first measured them."""
    if not _MEASURED_CEILINGS:
        from sparsescope.hardware import cpu_ceilings

        _MEASURED_CEILINGS.append((measure or cpu_ceilings.measure_cpu_ceilings)())
    return _MEASURED_CEILINGS[0]


@pytest.fixture(scope="module")
def cpu_ceilings_measured_once():
    """For the module: ``hardware.cpu_ceilings.measure_cpu_ceilings`` measures for real the
    first time a test of this process calls it with its default settings, and hands the same
    record to every later call. For modules about what a CPU run writes and how it exits, not
    about the ceilings: a ``--no-store`` run (or one with a store of its own) measures every
    time, 1.1-1.3 s of copies and multi-threaded SGEMMs, which was most of those modules' time.
    A call with explicit settings still measures as asked; a test that patches the function
    itself wins for its duration."""
    from sparsescope.hardware import cpu_ceilings

    real = cpu_ceilings.measure_cpu_ceilings

    def measure_once(**settings):
        return real(**settings) if settings else _ceilings_once(real)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cpu_ceilings, "measure_cpu_ceilings", measure_once)
        yield


def cache_cpu_ceilings(store_path: Path) -> Path:
    """Cache this machine's CPU ceilings (as this test process measured them, once) in the
    results store at ``store_path``, as a first run would leave it; the path back."""
    from sparsescope.hardware import cpu_ceilings
    from sparsescope.results.store import ResultsStore

    store = ResultsStore(store_path)
    key = cpu_ceilings.machine_key()
    if store.load_ceilings(key) is None:
        store.save_ceilings(key, _ceilings_once())
    return store.path


@pytest.fixture(scope="session")
def cpu_ceilings_cached():
    """``cache_cpu_ceilings``, for a store a test makes: for CPU runs in a subprocess that are
    about their output, not the ceilings (a run measures them, a second and more, only when
    its store has none)."""
    return cache_cpu_ceilings


@pytest.fixture(scope="session")
def store_with_cpu_ceilings(tmp_path_factory) -> Path:
    """The test process's results store (``_isolated_store``'s ``SPARSESCOPE_STORE``) with this
    machine's CPU ceilings cached (``cache_cpu_ceilings``)."""
    return cache_cpu_ceilings(tmp_path_factory.getbasetemp() / "store.sqlite")


def _gpu_present() -> bool:
    """Probe a real device (not just an importable library)."""
    try:
        from sparsescope.hardware.detect import gpu_available
    except ImportError:
        return False
    return gpu_available()


def pytest_collection_finish(session):
    """Once the tests are collected, the cyclic garbage collector walks less: what the process
    holds by then (the package, NumPy, SciPy, matplotlib, every collected test) is frozen out of
    its full collections, and the youngest generation is collected every 10,000 allocations
    instead of 700. The collector's time in the model, report and analyze tests went from 4.3 to
    2.4 s per worker (2 cores, 2026-11-28). A test that needs garbage gone calls gc.collect()."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def pytest_collection_modifyitems(config, items):
    """Skip tests marked ``gpu`` when no CUDA device answers."""
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    if _gpu_present():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU present (probed with torch/cupy)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture
def plugin_registry(monkeypatch):
    """No plug-in loaded before the test, none left registered after it: the registry's
    tables restored, and neither an installed plug-in (entry points) nor the machine's
    SPARSESCOPE_PLUGINS leaks in (the plug-in tests use it)."""
    from sparsescope import registry
    from sparsescope.backends import plugins

    monkeypatch.setenv(plugins.ENV_PLUGINS, "")
    monkeypatch.setenv(plugins.ENV_NO_AUTOLOAD, "1")
    backends, own = dict(registry.BACKENDS), set(registry.OWN_BACKENDS)
    plugins.forget_plugins()
    yield
    plugins.forget_plugins()
    registry.BACKENDS.clear()
    registry.BACKENDS.update(backends)
    registry.OWN_BACKENDS.clear()
    registry.OWN_BACKENDS.update(own)



def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker more than the cores. A third of the suite's worker time waits
    (local Dask clusters starting, sweeps stopped by their clocks, CLI subprocesses), and a
    worker more overlaps those waits with the others' work: on the 2-core CI machine the README
    command took 3:24 with 3 workers against 3:43-3:50 with 2 (2026-11-28); with 4 it took
    4:07, the CPU-bound tests crowding each other."""
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1
