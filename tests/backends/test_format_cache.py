"""``backends.format_cache``: each format built once per matrix, some in the background; the
formats of two matrices kept (the matrix and its plans' row sample); failures not cached."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends.format_cache import FormatCache, build_threads


def _csr(n: int = 30, seed: int = 0) -> sp.csr_matrix:
    return sp.random(n, n, density=0.2, format="csr", random_state=seed)


def test_a_prefetched_format_is_built_once_and_waited_for():
    cache, csr = FormatCache(), _csr()
    release, calls = threading.Event(), []

    def build(m):
        calls.append(threading.current_thread().name)
        release.wait(5)
        return ("fmt", m.nnz)

    assert cache.prefetch(csr, ("k",), build)
    assert not cache.prefetch(csr, ("k",), build)  # under way: not started again
    got = []
    waiter = threading.Thread(target=lambda: got.append(cache.get(csr, ("k",), build)))
    waiter.start()
    release.set()
    waiter.join(5)
    assert got == [("fmt", csr.nnz)]
    assert cache.get(csr, ("k",), build) == ("fmt", csr.nnz)
    assert len(calls) == 1 and calls[0].startswith("sparsescope-format-")
    assert cache.builds == 1


def test_a_failed_background_build_is_built_again_in_line():
    cache, csr, tries = FormatCache(), _csr(), []

    def build(m):
        tries.append(threading.current_thread().name)
        if len(tries) == 1:
            raise MemoryError("no room beside the other builds")
        return "fmt"

    cache.prefetch(csr, ("k",), build)
    for _ in range(500):  # the background build fails first
        if tries:
            break
        threading.Event().wait(0.01)
    assert cache.get(csr, ("k",), build) == "fmt"
    assert tries[1] == threading.current_thread().name


def test_an_in_line_error_reaches_the_caller_and_is_not_kept():
    cache, csr = FormatCache(), _csr()

    def broken(m):
        raise ValueError("does not fit INT32")

    with pytest.raises(ValueError, match="INT32"):
        cache.get(csr, ("k",), broken)
    assert cache.get(csr, ("k",), lambda m: "fmt") == "fmt"


def test_two_matrices_are_kept_and_retain_keeps_one():
    cache = FormatCache()
    whole, sample, nxt = _csr(40, 1), _csr(10, 2), _csr(40, 3)
    built = []

    def build(m):
        built.append(m.shape[0])
        return m.shape

    cache.get(whole, ("a",), build)
    cache.get(sample, ("a",), build)  # the row sample sits beside the matrix ...
    cache.get(whole, ("a",), build)   # ... which keeps its format
    assert built == [40, 10]
    cache.get(nxt, ("a",), build)     # a third matrix drops the least recently used
    cache.get(sample, ("a",), build)
    assert built == [40, 10, 40, 10]
    cache.retain(nxt)
    cache.get(sample, ("a",), build)
    assert built[-1] == 10 and len(built) == 5


def test_a_matrix_changed_in_place_gets_new_formats():
    cache, csr = FormatCache(), _csr()
    first = cache.get(csr, ("k",), lambda m: m.nnz)
    csr.data = np.ones(csr.nnz + 0)  # a new buffer: a new identity
    assert cache.get(csr, ("k",), lambda m: -1) == -1 and first == csr.nnz


def test_build_threads_leave_a_core_and_fit_in_half_the_memory():
    assert build_threads(1000, cores=16, memory=128 << 30) == 8
    assert build_threads(1000, cores=2, memory=24 << 30) == 1
    # 10^8 nonzeros at 160 bytes each, two to a half of 64 GiB: 2 builders
    assert build_threads(10**8, cores=16, memory=64 << 30) == 2
    assert build_threads(10**9, cores=16, memory=8 << 30) == 1


def test_a_large_matrix_s_builds_keep_their_bound_in_a_pool_a_small_one_grew():
    """Four threads exist after a small matrix's builds; a large matrix's builds, bounded at
    two, never run three at once."""
    import threading
    import time

    from sparsescope.backends.format_cache import _Builders

    builders = _Builders()
    done = threading.Barrier(5)
    for _ in range(4):  # the small matrix: 4 threads, 4 at once
        builders.submit(lambda: done.wait(timeout=5), 4)
    done.wait(timeout=5)
    assert len(builders._threads) == 4 and builders.most_running == 4
    builders.most_running = 0
    finished = []
    lock = threading.Lock()

    def large():
        time.sleep(0.05)
        with lock:
            finished.append(1)

    for _ in range(6):
        builders.submit(large, 2)
    deadline = time.monotonic() + 5
    while len(finished) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(finished) == 6 and builders.most_running == 2


def test_a_kept_matrix_is_held_so_its_identity_is_never_reused():
    """A matrix whose formats are kept is held by the cache: freed by its caller, it still
    cannot hand its id and buffers to the next matrix of the same shape (which would then get
    its formats). Dropped from the cache, it is freed."""
    import gc
    import weakref

    cache = FormatCache(matrices=2)
    first = _csr(seed=1)
    alive = weakref.ref(first)
    assert cache.get(first, ("k",), lambda m: m.toarray().sum()) == pytest.approx(
        first.toarray().sum())
    del first
    gc.collect()
    assert alive() is not None           # held while its formats are kept
    for seed in range(2, 12):             # same shape and nonzeros, new values each time
        other = _csr(seed=seed)
        assert cache.get(other, ("k",), lambda m: m.toarray().sum()) == pytest.approx(
            other.toarray().sum())
        del other
    gc.collect()
    assert alive() is None                # dropped past the two kept: freed
    cache.clear()
