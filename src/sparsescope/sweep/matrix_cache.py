"""What a sweep worker keeps loaded: its last matrices and the op case their backends share.

* :func:`loaded`: the matrix of a source and its content hash, loaded once per worker and kept
  for the next calls (:data:`KEEP_LOADED`, most recent last) while the source's identity
  (``source_facts.source_identity``: its file's size, times, inode) stays the same: a file
  changed between two sweeps of one process, or of a long-lived worker, is loaded again.
  Thread-safe: a matrix loading in
  the background (``sweep.prefetch``, while the cases of the one before it run) is waited for,
  never loaded twice, and a load never holds the lock, so the cases of the current matrix go on
  meanwhile.
* :func:`shared_case`: the op's case (inputs and float64 reference) of one matrix, parameters,
  index width and seed, built once for all the backends that run it on this worker, as
  ``runner.run_matrix`` does for ``run`` (the sweep built it again for every backend: five
  float64 references per matrix for five backends). The last :data:`KEEP_CASES` are kept;
  a matrix dropped from :func:`loaded` drops its cases.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any

from sparsescope.sweep.source_facts import source_identity
from sparsescope.sweep.sources import MatrixSource, load_source, matrix_hash

#: Matrices kept loaded per worker: the one whose cases run, the next one (prefetched or
#: probed), and one more, so a matrix is loaded once per worker.
KEEP_LOADED = 3
#: Op cases kept per worker: a matrix's tasks come parameters outermost, backends innermost,
#: so consecutive cases share one; two cover backends of two index widths taking turns.
KEEP_CASES = 2

_LOCK = threading.Lock()
_LOADED: OrderedDict[str, tuple[str | None, tuple[Any, str]]] = OrderedDict()
_LOADING: dict[str, Future] = {}
_CASES: OrderedDict[tuple, Any] = OrderedDict()
#: Loads done here (not found loaded, nor loading): what tests count.
COUNTS = {"loads": 0, "cases_built": 0}


def loaded(src: MatrixSource) -> tuple[Any, str]:
    """``(Matrix, content hash)`` of ``src``: kept, being loaded by another thread (waited
    for), or loaded now. A load that raises raises in every thread waiting for it."""
    identity = source_identity(src)
    with _LOCK:
        kept = _LOADED.get(src.ref)
        if kept is not None and kept[0] == identity and identity is not None:
            _LOADED.move_to_end(src.ref)
            return kept[1]
        pending = _LOADING.get(src.ref)
        mine = pending is None
        if mine:
            pending = _LOADING[src.ref] = Future()
            COUNTS["loads"] += 1
    if not mine:
        return pending.result()
    try:
        matrix = load_source(src)
        entry = (matrix, matrix_hash(matrix.csr))
        identity = identity or source_identity(src)  # a SuiteSparse matrix cached just now
    except BaseException as exc:
        with _LOCK:
            _LOADING.pop(src.ref, None)
        pending.set_exception(exc)
        raise
    with _LOCK:
        _LOADED[src.ref] = (identity, entry)
        _LOADED.move_to_end(src.ref)
        for key in [k for k in _CASES if k[0] == src.ref]:  # of an earlier content
            del _CASES[key]
        while len(_LOADED) > KEEP_LOADED:
            gone, _ = _LOADED.popitem(last=False)
            for key in [k for k in _CASES if k[0] == gone]:
                del _CASES[key]
        _LOADING.pop(src.ref, None)
    pending.set_result(entry)
    return entry


def shared_case(src: MatrixSource, matrix, op: str, params, index_bytes: int, seed: int):
    """The op case of ``matrix`` (``src``'s) for ``params`` at ``index_bytes``-byte indices
    and ``seed``: built once (stage ``reference``), then the same object for every backend
    that asks (the runner reads a case's inputs and reference; it never writes them)."""
    from sparsescope.ops.registry import get_op
    from sparsescope.stages import stage
    from sparsescope.sweep.tasks import params_key

    key = (src.ref, op, params_key(params), index_bytes, seed)
    with _LOCK:
        if key in _CASES:
            _CASES.move_to_end(key)
            return _CASES[key]
    with stage("reference"):
        case = get_op(op).make_case(matrix.csr, params, index_bytes=index_bytes, seed=seed)
    with _LOCK:
        COUNTS["cases_built"] += 1
        _CASES[key] = case
        while len(_CASES) > KEEP_CASES:
            _CASES.popitem(last=False)
    return case


def clear() -> None:
    """Forget every matrix and case (tests; a worker keeps them for its lifetime)."""
    with _LOCK:
        _LOADED.clear()
        _CASES.clear()
        COUNTS.update(loads=0, cases_built=0)
