"""The model's work budget: above it, the terms it derives from the matrix's rows run on a
stratified sample of whole rows, scaled to the whole matrix.

The memory budget (``model.plan_sample``) bounds what the plans hold; this one bounds the
model's own passes over the matrix, which grow with it: the loop iterations of every row, warp
and block (the latency, memory, imbalance and issue terms, the spills), the row-window
refetches, the SELL padding of the matrix statistics. At 10^8 nonzeros
``sparsescope model --backend all`` spent 17 s of CPU in its model on a 2-core machine, the
22 predictions asking these of 10^7 rows each. So, with N the budget in nonzeros::

    nnz <= N: every term on the whole matrix (the predictions exactly as without a budget)
    nnz >  N: the row terms on a stratified sample of about N nonzeros of whole rows

**The sample** (:func:`work_sample`, deterministic: seeded by :data:`SEED`): the rows are cut
into windows of :data:`WINDOW_ROWS` consecutive rows (a multiple of every kernel's block of
rows and of the SELL sorting window, so a sampled window's warps and blocks are the matrix's
own). A window's size for the design is the sum, over its groups of 32 rows, of the group's
longest row: what a warp's loop walks, so the loop terms (sums of warp and block maxima)
follow it more closely than the nonzeros do (on the 10^7 power-law matrix, a thread-per-row
kernel's block iterations vary 1.5 % between seeds against 5.2 % by nonzeros). Taken whole
(weight 1): the window holding the longest row (the longest block, the row cut) and every
window larger than a sampled one stands for. The others are ranked by size into as many strata
of equal counts as windows the budget buys, one drawn from each: it stands for its stratum's
N_h windows (0.75 % between seeds, the finest stratification).

**The scaling**: a sum over rows, warps or blocks (iterations, instructions, spills,
refetches, padded slices) is the weighted sum over the sample (Horvitz-Thompson: unbiased); a
maximum is the sample's, which holds the longest row; a per-block or per-warp list (what the
latency, imbalance, memory and issue terms read) is the sample's blocks each repeated by its
weight (:func:`stand_in`, counts rounded so that they add up to the weights' sum): the kernel
the sample stands for. A row cut into pieces keeps its row's weight for each piece (a piece
can start a warp in one window and end it in the next: the edge of a window, not its body).

**The default** (:data:`WORK_BUDGET_NNZ`, 2 x 10^6) is set by the sampling error, measured
against the whole computation on the 10^7-nonzero power-law and banded matrices of the
benchmark (``benchmarks/results/model_speed.md``, 28 predictions each: every GPU backend and
auto's candidates, H100 datasheet, SASS): over seeds 0-3 the largest difference of a
prediction was 0.46 % (power-law) and 0.21 % (banded) at 2 x 10^6, a quarter of the 2 %
allowed; at 5 x 10^5 it was 1.6 % and 0.29 %, too close to it. The error falls as
1 / sqrt(sample) while the work grows with it.

Not sampled by rows: the x gathers (``model.xgather``: their L2 reuse is over the whole trace,
which SHARDS samples by sector, and a row sample would lose the reuse between the rows it
leaves out; their requests are sampled by whole warps or blocks above 4 x 10^6 nonzeros) and
the L1's hits (``model.l1_cache`` follows a few SMs through the kernel's own grid: a row
sample's few blocks an SM would not fill its resident slots); above the budget it follows
:data:`L1_SAMPLED_SMS` SMs instead of :data:`L1_SMS_BELOW_BUDGET`, each as far.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from sparsescope.model.last_matrix import LastMatrixAnswers

#: Nonzeros above which the model's row terms run on a sample of about this many (module
#: docstring): chosen by the sampling error, not by a machine's speed.
WORK_BUDGET_NNZ = 2_000_000
#: The sample's seed: the same rows every run.
SEED = 0
#: Rows of a sampling window: 1,024 threads a block at one thread a row is the most rows a
#: block takes, and the SELL kernels sort rows within 256.
WINDOW_ROWS = 1024
#: Windows a sample holds at least (when the matrix has them), whatever the budget.
MIN_WINDOWS = 32
#: SMs the L1 model follows (``model.l1_cache.l1_hit_share``'s ``sampled_sms``) below the
#: work budget, and above it: the L1 runs on the whole matrix, on the first rounds of the
#: sampled SMs' blocks (block b on SM b mod SMs), so every sampled SM sees the same rows of the
#: matrix; each is followed through as many gathers either way (``sample_nnz / 8``), only
#: fewer SMs are. On the 10^7 power-law matrix of the benchmark, 2 SMs read the L1's share of
#: 9 launches within 0.25 points of 8 SMs (0.1320 against 0.1345 at the most apart), in a
#: quarter of the time.
L1_SMS_BELOW_BUDGET = 8
L1_SAMPLED_SMS = 2
#: What the sample's rows stand in for, named in the prediction's assumptions.
SAMPLED_TERMS = ("block iterations (latency, memory, imbalance; a CSR kernel's windows too)",
                 "warp iterations (issue, spills)", "row-window refetches",
                 "the SELL padding of the matrix statistics (auto's rules and candidates)",
                 f"the L1's hits on {L1_SAMPLED_SMS} SMs' first rounds (of "
                 f"{L1_SMS_BELOW_BUDGET} below the budget)")

_BUDGET: list = [WORK_BUDGET_NNZ]


@contextlib.contextmanager
def work_budget(nnz: int | None):
    """Within the block, the model's row terms run on a sample of any matrix of more than
    ``nnz`` nonzeros; None: every term on the whole matrix."""
    before = _BUDGET[0]
    _BUDGET[0] = None if nnz is None else int(nnz)
    try:
        yield
    finally:
        _BUDGET[0] = before


def current_budget() -> int | None:
    """The work budget in force (:func:`work_budget`; :data:`WORK_BUDGET_NNZ` outside)."""
    return _BUDGET[0]


@dataclass(frozen=True)
class WorkSample:
    """Whole rows of a matrix standing in for it (module docstring)."""

    rows: np.ndarray
    """Row indices of the sample, ascending (whole windows)."""
    row_weight: np.ndarray
    """Rows of the matrix each sampled row stands for (its window's weight, >= 1)."""
    indptr: np.ndarray
    """The sample's own row pointers (int64), ``rows.size + 1``."""
    starts: np.ndarray
    """Each sampled row's first entry in the matrix."""
    windows: int
    """Windows in the sample, those taken whole included."""
    certain_windows: int
    """Windows taken whole (weight 1): the longest row's and the heaviest."""
    strata: int
    """Strata the other windows were drawn from."""
    total_windows: int
    """Windows of the matrix."""
    total_rows: int
    total_nnz: int
    seed: int
    budget_nnz: int
    """The work budget the sample was drawn for."""
    window_rows: int = WINDOW_ROWS

    @property
    def sample_nnz(self) -> int:
        """Nonzeros of the sampled rows."""
        return int(self.indptr[-1])

    def describe(self) -> str:
        """The sample in words, for an assumption line."""
        return (f"{self.sample_nnz:,} of {self.total_nnz:,} nonzeros ({self.rows.size:,} of "
                f"{self.total_rows:,} rows: {self.windows:,} of {self.total_windows:,} windows "
                f"of {self.window_rows:,} rows, {self.certain_windows} taken whole, the others "
                f"drawn from {self.strata} strata by the rows their warps walk, seed "
                f"{self.seed}); work "
                f"budget {self.budget_nnz:,} nonzeros")

    def as_dict(self) -> dict:
        """The JSON record: the sample's size, its design, and the terms it stands in for."""
        return {"sample_nnz": self.sample_nnz, "total_nnz": self.total_nnz,
                "sample_rows": int(self.rows.size), "total_rows": self.total_rows,
                "windows": self.windows, "total_windows": self.total_windows,
                "window_rows": self.window_rows, "certain_windows": self.certain_windows,
                "strata": self.strata, "seed": self.seed, "budget_nnz": self.budget_nnz,
                "terms": list(SAMPLED_TERMS)}


def work_sample(indptr: np.ndarray, budget_nnz: int, *, seed: int = 0,
                window_rows: int = WINDOW_ROWS, strata: int | None = None,
                min_windows: int = MIN_WINDOWS) -> WorkSample:
    """About ``budget_nnz`` nonzeros of whole rows of the matrix of ``indptr`` (module
    docstring)::

        s_k     = sum over window k's groups of 32 rows of the group's longest row
        n       = max(min_windows, round(budget x windows / nnz))    windows the budget buys
        certain = the longest row's window, and every window with s_k > sum(s) / n
        n'      = round((budget - their nonzeros) / another window's mean nonzeros),
                  at least min_windows
        strata  = the others ranked by s_k into n' (``strata``) groups of equal counts
        n_h     = n' x S_h / S (largest remainders, >= 1, <= N_h), drawn without replacement,
                  each standing for w_h = N_h / n_h windows

    Hand check (windows of 32 rows, ``min_windows`` 1): nine windows of rows of 1 nonzero
    (s = 1), the tenth of 31 such and one of 68 (s = 68, 99 nonzeros), budget 150: n =
    round(150 x 10 / 387) = 4; the tenth taken whole (68 > 77 / 4); n' = round(51 / 32) = 2,
    from strata of 5 and 4 windows: weights 5 and 4, with the whole one's 1 adding up to 10."""
    indptr = np.asarray(indptr)
    rows = indptr.size - 1
    count = -(-rows // window_rows)
    bounds = np.minimum(np.arange(count + 1, dtype=np.int64) * window_rows, rows)
    nnz_of = indptr[bounds[1:]].astype(np.int64) - indptr[bounds[:-1]]
    total = int(indptr[-1])
    sizes, longest = _warp_maxima(indptr, window_rows)
    longest //= window_rows
    n = max(min_windows, round(budget_nnz * count / max(total, 1)))
    certain = sizes > sizes.sum() / max(1, n)
    certain[longest] = True
    rest = np.flatnonzero(~certain)
    n_rest = 0
    if rest.size:
        left = budget_nnz - int(nnz_of[certain].sum())
        n_rest = min(rest.size, max(min_windows, round(left / max(nnz_of[rest].mean(), 1e-9))))
    rng = np.random.default_rng([seed, 0x3A7E5])
    picked, weights, used = [np.flatnonzero(certain)], [np.ones(int(certain.sum()))], 0
    if n_rest:
        ranked = rest[np.argsort(sizes[rest], kind="stable")]
        layers = np.array_split(ranked, min(strata or n_rest, n_rest))
        used = len(layers)
        mass = np.array([sizes[layer].sum() for layer in layers], dtype=np.float64)
        share = mass / mass.sum() if mass.sum() > 0 else np.full(used, 1.0 / used)
        take = _allocate(share, n_rest, np.array([layer.size for layer in layers]))
        for layer, k in zip(layers, take.tolist(), strict=True):
            picked.append(layer[np.sort(rng.choice(layer.size, size=k, replace=False))])
            weights.append(np.full(k, layer.size / k))
    order = np.concatenate(picked)
    keep = np.argsort(order)
    order, weight = order[keep], np.concatenate(weights)[keep]
    lo, hi = bounds[order], bounds[order + 1]
    counts = hi - lo
    sample_rows = np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(
        int(counts.sum()), dtype=np.int64)
    starts = indptr[sample_rows].astype(np.int64)
    own = np.zeros(sample_rows.size + 1, dtype=np.int64)
    np.cumsum(indptr[sample_rows + 1] - starts, out=own[1:])
    return WorkSample(rows=sample_rows, row_weight=np.repeat(weight, counts), indptr=own,
                      starts=starts, windows=int(order.size),
                      certain_windows=int(certain.sum()), strata=used, total_windows=count,
                      total_rows=rows, total_nnz=total, seed=seed, budget_nnz=int(budget_nnz),
                      window_rows=window_rows)


def _warp_maxima(indptr: np.ndarray, window_rows: int, chunk: int = 1 << 20
                 ) -> tuple[np.ndarray, int]:
    """(each window's sum over its groups of 32 rows of the group's longest row, the first
    longest row), a chunk of rows at a time (no array of every row's length)."""
    rows = indptr.size - 1
    chunk -= chunk % window_rows
    sums, best, where = [], -1, 0
    for lo in range(0, rows, chunk):
        lengths = np.diff(indptr[lo:min(rows, lo + chunk) + 1])
        k = int(np.argmax(lengths))
        if lengths[k] > best:
            best, where = int(lengths[k]), lo + k
        pad = (-lengths.size) % window_rows
        groups = np.concatenate([lengths, np.zeros(pad, lengths.dtype)]).reshape(-1, 32)
        sums.append(groups.max(axis=1).astype(np.int64).reshape(-1, window_rows // 32)
                    .sum(axis=1))
    return np.concatenate(sums), where


def _allocate(share: np.ndarray, n: int, room: np.ndarray) -> np.ndarray:
    """Integer draws per stratum: ``n x share`` rounded by largest remainders, at least one,
    at most the stratum's windows."""
    exact = share * n
    take = np.maximum(1, np.floor(exact).astype(np.int64))
    left = n - int(take.sum())
    if left > 0:
        order = np.argsort(-(exact - np.floor(exact)), kind="stable")
        take[order[:left]] += 1
    return np.minimum(take, room)


def stand_in(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per-unit ``values`` of the sample, each repeated by its unit's weight (counts rounded
    so that their running sum follows the weights' running sum: ``c_k = round(W_k) -
    round(W_{k-1})``): the units of the kernel the sample stands for, in the sample's order.
    Every unit appears at least once (weights >= 1). Hand check: values [5, 7], weights
    [1, 2.5] -> counts [1, 3] (running sums 1, 3.5 -> 1, 4): [5, 7, 7, 7]."""
    edges = np.floor(np.cumsum(np.asarray(weights, dtype=np.float64)) + 0.5).astype(np.int64)
    return np.repeat(values, np.diff(edges, prepend=0))


SAMPLES = LastMatrixAnswers()
"""The work sample of the last matrix, by budget."""


def sample_for(indptr: np.ndarray) -> WorkSample | None:
    """The work sample the model's row terms of this matrix run on under the budget in force,
    or None (the whole matrix: at or below the budget, or no budget)."""
    budget = _BUDGET[0]
    if budget is None or len(indptr) < 2 or int(indptr[-1]) <= budget:
        return None
    if -(-(len(indptr) - 1) // WINDOW_ROWS) <= MIN_WINDOWS:
        return None  # too few windows to sample: the matrix is its own sample
    return SAMPLES.get((indptr,), ("sample", budget, SEED),
                       lambda: work_sample(indptr, budget, seed=SEED))


def sample_key(indptr: np.ndarray) -> tuple[int, int] | None:
    """What an answer kept for a matrix depends on besides its arrays: the work budget when
    its terms run on a sample, None when on the whole matrix."""
    sample = sample_for(indptr)
    return None if sample is None else (sample.budget_nnz, sample.seed)


def unit_weights(row_weight: np.ndarray, group: int) -> np.ndarray:
    """The weight of each unit of ``group`` consecutive rows: its first row's (a unit lies in
    one window: windows are a multiple of every unit)."""
    return np.asarray(row_weight)[:: max(1, int(group))]


__all__ = ["SAMPLED_TERMS", "WINDOW_ROWS", "WORK_BUDGET_NNZ", "WorkSample", "current_budget",
           "sample_for", "sample_key", "stand_in", "unit_weights", "work_budget", "work_sample"]
