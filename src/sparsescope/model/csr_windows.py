"""A CSR kernel's loop time per block, counted the way its compiled loops read a row.

NVRTC compiles the CSR loop ``for j in row: sum += val[j] * x[col[j]]`` (``csr_scalar``,
``csr_vector``: ``KernelShape.row_windows = (u, w, p1, p2, ...)``, from their SASS) into: the
first ``n mod u`` entries of a lane one at a time, then ``w`` at a time while ``w`` remain
(the main loop, whose iteration the issue schedule times: ``t_iter``), then one peeled copy of
``p1``, ``p2``, ... entries, each while that many remain. A lane of a row with ``L`` entries
and ``tpr`` lanes has ``n = ceil(L / tpr)`` of them. The main loop's iteration is the long
one (``w`` = 16 entries: several stops); a single step or a peeled copy loads its columns
and values together, then its gathers, and adds: one stream round and one x round::

    singles = n mod u
    main    = (n - singles) // w
    peeled  = the copies p1, p2, ... taken greedily from (n - singles) mod w
    t_short = stream round trip + x round                      (iteration_ns's two rounds)
    row     = main + (singles + peeled) x t_short / t_iter     (in main-loop iterations)

A warp runs its rows' lanes in lock step (its longest row's time), a block its longest warp's
(``iterations._group_max``). Counting each of those windows as a main-loop iteration
(``iterations.row_iterations`` with a remainder step of 1) charged a 13-entry row thirteen
16-entry iterations where the kernel runs three short windows: the CSR kernels on the real
development set were predicted 2.4-2.5x too slow (issue 36).

Hand check (u 4, w 16, peeled (8, 4); t_iter 1,000 ns, t_short 500 ns): a lane of 13 entries:
1 single, no main iteration, 12 left -> peeled 8 and 4: 0 + 3 x 0.5 = 1.5 iterations; 37
entries: 1 single, 2 main, 4 left -> peeled 4: 2 + 2 x 0.5 = 3.0.
"""

from __future__ import annotations

import numpy as np

from sparsescope.model.iterations import block_maxima


def window_counts(entries: np.ndarray, windows: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(main-loop iterations, short windows: singles and peeled copies) of lanes of
    ``entries`` entries read in ``windows = (u, w, p1, ...)`` (module docstring)."""
    n = np.asarray(entries, dtype=np.int64)
    u, w, *peeled = windows
    singles = n % u if u > 1 else np.zeros_like(n)
    rest = n - singles
    main = rest // w
    left = rest % w
    short = singles.copy()
    for p in peeled:
        take = left >= p
        short += take
        left = left - p * take
    # what no peeled copy takes runs one at a time (a layout the windows do not cover)
    return main, short + left


def window_block_iterations(indptr: np.ndarray, shape, short_share: float) -> np.ndarray:
    """Per block of ``shape`` (a CSR kernel with ``row_windows``), its loop time in main-loop
    iterations: ``main + short x short_share`` of its longest lane, ``short_share = t_short /
    t_iter`` (module docstring); above the work budget, of the matrix's work sample
    (``iterations.block_maxima``)."""
    tpr = max(1, shape.threads_per_row)

    def per_row(lengths: np.ndarray) -> np.ndarray:
        main, short = window_counts(-(-lengths // tpr), tuple(shape.row_windows))
        return main + short * float(short_share)

    return block_maxima(indptr, shape, per_row)
