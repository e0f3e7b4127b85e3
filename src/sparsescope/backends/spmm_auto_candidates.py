"""The kernels ``spmm-cuda-auto`` chooses among, planned on the host and predicted on a device
(``context.predict_call``: the SpMM op's ``predict``, ``model.own_spmm.predict_own_spmm``).

The candidates of a case, by X's layout (:func:`candidate_names`)::

    row-major X    rowgroup (default slices; balanced slices where they cut more), rowwarp
                   (where it takes k), blocktc (float32, block fill within its limit),
                   paneltc (float32, k a multiple of 4, panel fill within the same limit)
    column-major X each of those between two device transposes (``spmm-cuda-transposed``: X
                   re-laid row-major before the kernel, Y re-laid column-major after it, their
                   time ``model.transpose``'s), and ``spmm-cuda-colmajor`` on X as it is
    either layout  ``spmm-cuda-rowtile`` (X staged in shared memory, either layout as it is)
                   where its staged X is less than the gathers' (:func:`rowtile_candidate`);
                   ``spmm-cuda-ell`` (width-major ELL, a lane a row, either layout as it is)
                   where its padding is within ``spmm_ell_format.MAX_PADDING``
                   (:func:`ell_candidate`)

Column-major X has two strategies, and which is faster depends on the matrix and k, not on the
layout alone: the transposes cost every value of X and Y twice more (about 2,000 warp
instructions a 32 x 32 tile, so ``2 (rows + cols) / 32`` tiles whatever k; 0.14 ms at k = 8
on a graph of a million rows and columns on the H200) while the direct kernel gathers a
sector per value (``nnz x k`` sector requests). Few nonzeros a row and small k favour the
direct kernel (the issue 37 graph at k = 8: colmajor 49.5 us, transposes + row-major 95.8
us), many nonzeros a row or large k the transposes. Both are planned and predicted for every
case, and the trial times those the model cannot rank apart.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import numpy as np

from sparsescope.backends import (
    spmm_blocktc,
    spmm_colmajor,
    spmm_cuda,
    spmm_paneltc,
    spmm_rowgroup,
)
from sparsescope.backends.select_predicted import Candidate, CandidatePrediction
from sparsescope.backends.spmm_blocktc import (
    block_format_of,
    blocktc_launch,
    fill_declined,
    plan_blocktc,
    sampled_fill,
)
from sparsescope.backends.spmm_colmajor import (
    colmajor_launch,
    fitted_slices,
    narrow_tile_cols,
    plan_colmajor,
    round_slices,
    short_slices,
)
from sparsescope.backends.spmm_cuda import (
    MAX_CHUNKS,
    SLICE_UNIT,
    choose_slab,
    launch_shape,
    mean_row_slice,
    plan_rowwarp,
    rowwarp_launch,
)
from sparsescope.backends.spmm_ell_format import ell_declined
from sparsescope.backends.spmm_rowgroup import (
    SPILL_FREE_BATCH,
    WAVE_MINB,
    kernel_minb,
    plan_rowgroup,
    rowgroup_launch,
)
from sparsescope.hardware.specs import SM_LIMITS
from sparsescope.ops.base import OpCase

ROWWARP = "spmm-cuda-rowwarp"
ROWGROUP = "spmm-cuda-rowgroup"
COLMAJOR = "spmm-cuda-colmajor"
TRANSPOSED = "spmm-cuda-transposed"
BLOCKTC = "spmm-cuda-blocktc"
PANELTC = "spmm-cuda-paneltc"
ROWTILE = "spmm-cuda-rowtile"
ELL = "spmm-cuda-ell"
ROW_MAJOR_KERNELS = (ROWGROUP, ROWWARP, BLOCKTC, PANELTC)
"""The row-major kernels: candidates of row-major X, and between the transposes of
column-major X."""
READS_COLUMN_MAJOR = (COLMAJOR, ROWTILE, ELL)
"""The kernels that read column-major X as it is (no transposes around them)."""
BALANCED_MIN_SLICE = SLICE_UNIT
"""rowgroup's balanced candidate: slices cut at the slice rule's own target (nnz / (SMs x 32)),
floored at a warp's width instead of MIN_SLICE_NNZ (1,024). On a power-law graph of 30,000
rows (graph-04 of the tuning part) the default floor leaves slices of 1,024 nonzeros that one
group walks 8 at a time while the other warps are done: the model's imbalance term (and the
H200: rowgroup 140 us against cuSPARSE's 57 us at k = 32). Cutting costs a zero fill of Y and
atomics for the cut rows, which the model leaves out, so the trial decides."""


FALLBACK_SM = SM_LIMITS["9.0"]
"""The per-SM limits (``hardware.specs.SM_LIMITS``) a plan takes where no device rates are
given: compute capability 9.0's (2,048 threads, 32 blocks, 65,536 registers; the same
threads and blocks as 8.0)."""
SM_THREADS = FALLBACK_SM["max_threads_per_sm"]
"""The most threads an SM holds (sm_70, sm_80, sm_90; 1,536 on sm_86 and sm_89): colmajor's
grid of at most ``SMs x SM_THREADS`` lanes runs in one wave, where its longest lane, not its
bytes, sets the time."""


def colmajor_wave_warps(host: Any, sm_count: int, rates: Any = None,
                        registers: int | None = None) -> int:
    """Warps of one full wave of a colmajor plan's kernel: ``SMs x`` the warps an SM holds of
    it (``model.spmm_predict.resident_warps``, as the time model counts them: its registers --
    ``registers``, the compiled kernel's, else the launch bound's cap of 256 -- its block and
    the device's thread, block and register limits: ``rates``', else
    :data:`FALLBACK_SM`'s).

    One-warp blocks of the float32 k = 8 instance (61 registers: 2,048 a warp) on an H200:
    min(32 blocks, 65,536 / 2,048 = 32, 2,048 / 32 = 64) = 32 warps an SM, 4,224 on 132 SMs;
    at the cap (256 registers, 8,192 a warp): 8 an SM, 1,056."""
    from sparsescope.model.spmm_predict import resident_warps

    limits = rates if rates is not None else SimpleNamespace(**FALLBACK_SM)
    per_sm = resident_warps(colmajor_launch(host, registers),
                            max_threads_per_sm=limits.max_threads_per_sm,
                            max_blocks_per_sm=limits.max_blocks_per_sm,
                            registers_per_sm=limits.registers_per_sm)
    return sm_count * per_sm


def colmajor_plans(indptr: np.ndarray, nnz: int, k: int, value_dtype: str, index_bytes: int,
                   sm_count: int, rates: Any = None,
                   registers=None) -> list[tuple[Candidate, Any]]:
    """(candidate, host plan) of colmajor: at the slice rule's S, BATCH and C;

    * with short slices and deep batches, where
      :func:`~sparsescope.backends.spmm_colmajor.short_slices` cuts its lanes' rounds, and
      with :func:`~sparsescope.backends.spmm_colmajor.fitted_slices` where those are shorter
      still (the shortest that keep every row inside one warp: one launch). The warp's scan
      over the rows cut is not in the model: the trial decides (a 13,436-row matrix of 99,000
      nonzeros at k = 8 on an H100: colmajor 18.0 us, cuSPARSE's CSR_ALG3 8.2 us,
      results/h100/real-dev/2026-11-28-spmm). On any grid: short slices were first meant for
      grids of one wave, but with the rows they cut kept inside their warps they paid on
      larger ones too (H200, results/h200/real-dev/2026-11-28-aligned: NotreDame_www, 325,729
      rows, at k = 8 column-major 26.4 us a call in 8-pair slices against 39.6 at the rule's);
    * with slices of one and two deep batches
      (:func:`~sparsescope.backends.spmm_colmajor.round_slices`) where they are shorter than
      all of those and the short slices' grid still runs in one wave (where the longest
      lane's rounds set the time); where it runs in more, with slices of twice the short ones
      (fewer rows cut, fewer lanes and pads: NotreDame_www at k = 8 on an H200 took 26.8 us a
      call in 8-pair slices against 28.1 in auto's 4-pair ones,
      results/h200/real-dev/2026-11-28-round-slices);
    * where the plain grid runs in one wave (``slices x column tiles <= SMs x SM_THREADS``),
      with narrower column tiles (``tile_cols``), where
      :func:`~sparsescope.backends.spmm_colmajor.narrow_tile_cols` gives a C below the rule's:
      the largest C whose grid (blocks x column tiles x warps) still reaches one full wave of
      the plain kernel's resident warps (:func:`colmajor_wave_warps`, on the device of
      ``rates`` with the registers ``registers(source, kernel)`` reads, None: the cap), else
      1. A narrower instance needs fewer registers, so its own wave is at least this one: the
      rule errs toward the wider tile, the one that reads A fewer times. bcspwr06 (1,454 rows,
      ~3.6 nonzeros a row) at k = 8 on an H200: 46 one-warp blocks, a wave of 132 x 32 =
      4,224 warps, C = 1 gives 368 -> ``tile_cols`` 1 (on the H200: 2.9 us of kernel against
      plain colmajor's 4.2 us and cuSPARSE ALG3's 2.1 us, results/h200/real-dev/
      2026-11-28-spmm-narrow). Its launch in the model has C-column slabs, k / C of them
      (``colmajor_launch``), so A's extra passes and the extra warps are both predicted;
    * on ELL rows (``ell``: a lane a row, no slice pointers, one dependent round trip fewer),
      at the rule's tile and at the narrower one, where the padding is within
      ``spmm_ell_format.MAX_PADDING``: the small matrices' calls are a few round trips
      (results/h200/real-dev/2026-11-28-minb; the trial decides)."""
    rows = int(np.asarray(indptr).size - 1)
    plain = plan_colmajor(indptr, nnz, k, value_dtype, index_bytes, sm_count)
    out = [(Candidate(COLMAJOR), plain)]
    short = short_slices(rows, nnz, k)
    longest = int(np.diff(np.asarray(indptr)).max()) if rows else 0
    fitted = fitted_slices(longest, k)
    shorter = [short] + ([fitted] if fitted["slice_nnz"] < short["slice_nnz"] else [])
    wave_lanes = sm_count * SM_THREADS   # a lane a slice and column tile

    def plan(options):
        return plan_colmajor(indptr, nnz, k, value_dtype, index_bytes, sm_count, **options)

    def offered(options):   # shorter slices or deeper batches than the plain kernel's
        return options["slice_nnz"] < plain.plan.slice_nnz or options["batch"] > plain.tile[1]

    extra = []
    if offered(short):
        short_plan = plan(short)
        out.append((Candidate(COLMAJOR, short), short_plan))
        doubled = {"slice_nnz": 2 * short["slice_nnz"], "batch": short["batch"]}
        if short_plan.plan.n_slices * short_plan.tiles <= wave_lanes:
            fewest = min(o["slice_nnz"] for o in shorter)
            extra = [o for o in round_slices(k) if o["slice_nnz"] < fewest]
        elif all(o["slice_nnz"] != doubled["slice_nnz"] for o in shorter):
            extra = [doubled]   # more than a wave: fewer rows cut, fewer lanes
    out += [(Candidate(COLMAJOR, o), plan(o)) for o in shorter[1:] + extra if offered(o)]
    fitted_again = [(Candidate(COLMAJOR, o), plan(o)) for o in fitted_long(out)]
    out += [(c, host) for c, host in fitted_again if not host.plan.split_rows]
    ell = {"ell": 1} if not ell_declined(indptr) else None
    if ell:   # no slice pointers: one round trip fewer a call
        out.append((Candidate(COLMAJOR, ell), plan(ell)))
    if plain.plan.n_slices * plain.tiles > wave_lanes:   # more than one wave
        return out
    regs = registers(spmm_colmajor.SOURCE, plain.kernel) if registers else None
    wave = colmajor_wave_warps(plain, sm_count, rates, regs)
    narrow = narrow_tile_cols(k, plain.blocks * plain.warps, wave)
    if narrow < plain.tile[0]:
        for options in ({"tile_cols": narrow}, *([{**ell, "tile_cols": narrow}] if ell else [])):
            out.append((Candidate(COLMAJOR, options), plan(options)))
    return out


def fitted_long(plans: list[tuple[Candidate, Any]]) -> list[dict]:
    """The options of each colmajor plan whose rows span warps (a row of more than 32 slices:
    the zero fill and atomics) again with ``fit_long`` (those rows cut into a warp of longer
    slices, ``spmm_cuda.warp_fitted_sizes``: one launch, the longest lane walks more):
    the trial weighs the zero fill's launch against the longer lane. ``colmajor_plans``
    keeps those whose rows then all lie inside their warps (not so where more rows are cut
    than the aligned layout takes, ``MAX_ALIGNED_CUT_ROWS``)."""
    return [{**candidate.params, "fit_long": 1} for candidate, host in plans
            if host.plan.split_rows and not candidate.params.get("fit_long")]


def rowwarp_supports(k: int, value_dtype: str) -> bool:
    """Whether rowwarp's default slab gives at most MAX_CHUNKS loads a lane (k = 255: 8, yes;
    k = 4095: 128, no)."""
    return launch_shape(choose_slab(k), value_dtype)[2] <= MAX_CHUNKS


def candidate_names(layout: str) -> tuple[str, ...]:
    """The kernel families auto plans for X's ``layout`` (the module docstring): row ->
    rowgroup, rowwarp, blocktc, paneltc; col -> the same between the transposes, then
    colmajor."""
    return ROW_MAJOR_KERNELS + ((COLMAJOR,) if layout == "col" else ())


def rowtile_candidate(case: OpCase, value_dtype: str, index_bytes: int, sm_count: int,
                      rates: Any = None) -> tuple[Any, str]:
    """``((candidate, plan), "")`` of ``spmm-cuda-rowtile`` at the (R, KS) its rule picks for
    the device (``rates``: its shared-memory-to-L2 ratio), or ``(None, why not)`` where its
    staged X is not less than the gathers' (:func:`~sparsescope.backends.spmm_rowtile.
    rowtile_pays`). Screened first at the largest R, whose tiles stage the fewest X rows (a
    tile of 2R spans at most the chunks of its two halves), so a sparse graph costs one pass
    over its column indices; the format is packed only for a candidate."""
    from sparsescope.backends.spmm_rowtile import (
        DEFAULT_CHUNK,
        TILE_ROWS,
        SpmmCudaRowTile,
        choose_tile,
        rowtile_pays,
    )
    from sparsescope.model.rowtile import smem_per_l2

    csr, k = case.matrix, case.params.k
    cols = int(csr.shape[1])
    pays, why = rowtile_pays(csr.indptr, csr.indices, cols, max(TILE_ROWS), DEFAULT_CHUNK)
    if not pays:
        return None, why
    rows, vec, _ = choose_tile(csr.indptr, csr.indices, cols, k, value_dtype, case.params.layout,
                               sm_count, smem_per_l2(rates))
    pays, why = rowtile_pays(csr.indptr, csr.indices, cols, rows, DEFAULT_CHUNK)
    if not pays:
        return None, why
    options = {"rows": rows, "ks": 32 * vec}
    plan = SpmmCudaRowTile(**options).plan(case, value_dtype, index_bytes, sm_count, rates)
    return (Candidate(ROWTILE, options), plan), ""


def ell_candidate(case: OpCase, value_dtype: str, index_bytes: int, sm_count: int):
    """``((candidate, plan), "")`` of ``spmm-cuda-ell`` at its rule's tile, in either layout,
    or ``(None, why not)``: a padding above ``spmm_ell_format.MAX_PADDING`` (read from the row
    pointers: no format is built for a matrix it declines). One candidate: the trial's places
    (``spmm_auto.TRIAL_MOST``) are shared with colmajor's variants."""
    from sparsescope.backends.spmm_ell import plan_ell

    csr = case.matrix
    why = ell_declined(csr.indptr)
    if why:
        return None, why
    return (Candidate(ELL), plan_ell(csr.indptr, case.params.k, case.params.layout,
                                     value_dtype, index_bytes, sm_count)), ""


def candidate_plans(indptr: np.ndarray, nnz: int, k: int, value_dtype: str, index_bytes: int,
                    sm_count: int, full_warps: int) -> list[tuple[Candidate, Any]]:
    """(candidate, host plan) of each CSR row-major candidate: rowgroup at its default launch;
    rowgroup with balanced slices (``min_slice`` = :data:`BALANCED_MIN_SLICE`) when that cuts
    more than the default does; rowgroup with a narrower VEC (``vec``: half, then a quarter
    of the rule's) where the default grid is under one wave of warps (``SMs x SM_THREADS /
    32``) and the narrower VEC gives a row slice more lanes (G), so fewer slices share a warp
    and the grid has more warps to hide its loads' latency; each of those that cuts rows again
    with ``block_sum`` (every cut row summed by its block in shared memory: one launch, no
    zero fill, ``spmm_rowgroup.block_sum_slices``); rowgroup in slices of about the mean row
    (:func:`rowgroup_short_slices`), block-summed, on any grid where they cut a row (as
    colmajor's short slices: NotreDame_www at k = 8, 325,729 rows, ran 21.2 us a call in
    8-pair slices against 25.0 in the rule's, and 120 against 88 at k = 64; the trial
    decides);
    each plain plan of a float32 grid over a wave (MINB 4, whose batch of 8 X vectors spills:
    ``spmm_rowgroup.wave_minb``) again spill-free, at MINB 2 and at BATCH
    ``spmm_rowgroup.SPILL_FREE_BATCH`` (on the real development set at k = 8-256 over a wave,
    H200, each was the fastest of the three somewhere: MINB 4 by 13-14 % on NotreDame_www and
    mdual at k >= 64, BATCH 4 by 12-16 % on Pd and Franz6_id1959_aug at k = 64, MINB 2 on
    most of the rest, and BATCH 4 30-47 % slower where one long row sets the time; the trial
    decides, results/h200/real-dev/2026-11-28-minb);
    each block-summed plan whose block fitted a row into longer slices (:func:`fitted_row`:
    the row had more slices than the block has groups) again at half the slab, so that G
    halves and a block has twice the groups for that row (reorientation_1 at k = 64, its
    632-nonzero row in 16 groups of 40 pairs: 9.8 us a call with the L2 flushed, against 8.7 in
    32 groups of 20 at slab 32, and 9.3 for CSR_ALG3; results/h200/real-dev/2026-11-28-minb/
    probe.md; the trial decides);
    the default plan and each narrower-VEC one again with A as row-major ELL (``ell``: a
    group a row, no slice pointers, so one dependent round trip fewer; where the padding is
    within ``spmm_ell_format.MAX_PADDING``): on a matrix of a few thousand rows with the L2 flushed
    a call is its round trips, and CSR_ALG3 beat the sliced plans there by 0.1-0.5 us
    (results/h200/real-dev/2026-11-28-minb; the trial decides);
    rowwarp where it takes k (:func:`rowwarp_supports`).

    The narrower VEC is cuSPARSE's shape on a small grid: its CSR_ALG3 put a warp on each of
    bcspwr09's 1,723 rows at k = 64 (1,728 warps, 3.2 active a scheduler) where rowgroup's
    float4 lanes packed two rows a warp (862, 1.6), and rowgroup ran 6.8 us a call against
    5.9 with the L2 flushed (H200, ncu: both held by long-scoreboard stalls, 6.3 against 4.2
    cycles an issue). With float2 lanes (G 32): 6.0 us (results/h200/real-dev/
    2026-11-28-round-slices)."""
    def plan(**options):
        return plan_rowgroup(indptr, nnz, k, value_dtype, index_bytes, sm_count,
                             full_warps=full_warps, **options)

    def block_summed(options):   # [(candidate, plan)] where block_sum sums cut rows, else []
        options = {**options, "block_sum": 1}
        summed = plan(**options)
        return [(Candidate(ROWGROUP, options), summed)] if summed.block_summed else []

    plans: list[tuple[Candidate, Any]] = [(Candidate(ROWGROUP), plan())]
    default = plans[0][1]
    balanced = plan(min_slice=BALANCED_MIN_SLICE)
    if balanced.plan.n_slices > default.plan.n_slices:
        plans.append((Candidate(ROWGROUP, {"min_slice": BALANCED_MIN_SLICE}), balanced))
    under_wave = default.blocks * default.warps * default.slabs < sm_count * SM_THREADS // 32
    if under_wave:
        group = default.shape[1]
        for vec in (default.shape[0] // 2, default.shape[0] // 4):
            if vec < 1:
                break
            narrow = plan(vec=vec)
            if narrow.shape[1] > group:
                plans.append((Candidate(ROWGROUP, {"vec": vec}), narrow))
                group = narrow.shape[1]
    for candidate, host in list(plans):   # each plan that cuts rows, summed by its blocks
        if host.plan.split_rows:
            plans += block_summed(candidate.params)
    for candidate, host in [(c, h) for c, h in plans if c.params.get("vec") is None]:
        if kernel_minb(host.kernel) > WAVE_MINB and not host.block_summed:  # over a wave
            plans.append((Candidate(ROWGROUP, {**candidate.params, "minb": WAVE_MINB}),
                          plan(**candidate.params, minb=WAVE_MINB)))
            if host.stages[1] > SPILL_FREE_BATCH:
                plans.append((Candidate(ROWGROUP, {**candidate.params,
                                                   "batch": SPILL_FREE_BATCH}),
                              plan(**candidate.params, batch=SPILL_FREE_BATCH)))
    if not ell_declined(indptr):   # no slice pointers: one round trip fewer a call
        for candidate in [c for c, _ in plans if set(c.params) <= {"vec"}]:
            plans.append((Candidate(ROWGROUP, {**candidate.params, "ell": 1}),
                          plan(**candidate.params, ell=True)))
    short = rowgroup_short_slices(int(np.asarray(indptr).size - 1), nnz)
    if short < default.plan.slice_nnz:   # none where no row is cut at S: the default's plan
        plans += block_summed({"slice_nnz": short})
    for candidate, host in list(plans):  # a block too small for a row: half the slab
        half = host.slab // 2
        if host.block_summed and fitted_row(host.plan) and half >= host.shape[0] \
                and half % host.shape[0] == 0 and "slab" not in candidate.params:
            plans += block_summed({**candidate.params, "slab": half})
    if rowwarp_supports(k, value_dtype):
        plans.append((Candidate(ROWWARP), plan_rowwarp(indptr, nnz, k, value_dtype, index_bytes,
                                                      sm_count)))
    return plans


def fitted_row(plan: Any) -> bool:
    """Whether a slice plan has a slice longer than its S: a row fitted to a warp's or a
    block's groups in longer slices (``spmm_cuda.warp_aligned_slices``)."""
    lengths = np.diff(np.asarray(plan.slice_ptr, dtype=np.int64))
    return bool(lengths.size) and int(lengths.max()) > plan.slice_nnz


SHORT_SLICE_UNIT = 8
"""rowgroup's short slices come in whole units of this many (col, val) pairs: a 32-byte
sector of int32 column indices, and one stage of pairs at k = 8 (DEPTH 4 x G 2)."""


def rowgroup_short_slices(rows: int, nnz: int) -> int:
    """S of rowgroup's short-slice candidate (meant for a grid under one wave, where the
    longest group's rounds set the time, and offered on any): about the mean row, in whole
    units::

        S = max(SHORT_SLICE_UNIT, round_up(ceil(nnz / rows), SHORT_SLICE_UNIT))

    offered with ``block_sum`` (the rows it cuts summed by their block: one launch). 677
    rows, 7,326 nonzeros (mean 10.8) -> 16; mean 3.7 -> 8; no rows -> 8. On an H200 (k = 8
    and 64, row-major, L2 flushed, results/h200/real-dev/2026-11-28-block-sum/probe.md):
    lp_e226 (mean 12.4, longest 110) took 6.5-6.6 us a call in 8-pair slices against 8.6-8.9
    in the rule's 32 (block-summed too) and 8.9-11.7 for CSR_ALG3."""
    return mean_row_slice(rows, nnz, SHORT_SLICE_UNIT)


def blocktc_candidate(csr: Any, k: int, value_dtype: str, sm_count: int):
    """``(launch, "")`` of the block tensor-core kernel for the time model, or ``(None,
    reason)`` where it is not a candidate: float64, or a 16 x 8 block fill above
    ``spmm_blocktc.MAX_FILL`` -- screened on sampled block rows first
    (:func:`~sparsescope.backends.spmm_blocktc.sampled_fill`, above twice the limit: out),
    then counted exactly while the blocks are built."""
    limit = spmm_blocktc.MAX_FILL
    if value_dtype != "float32":
        return None, "tensor-core path: float32 only"
    if csr.nnz == 0:
        return None, "no nonzeros"
    screen = sampled_fill(csr.indptr, csr.indices, int(csr.shape[1]))
    if screen > 2 * limit:
        return None, f"16x8 block fill ~{screen:.1f} on sampled block rows > 2 x {limit:g}"
    fmt = block_format_of(csr)   # the blocks prepare builds too: built once
    declined = fill_declined(fmt.blocks, csr.nnz, limit)
    if declined:
        return None, declined
    plan = plan_blocktc(fmt.block_rows, fmt.blocks, csr.nnz, k, sm_count)
    return (fmt, plan), ""


def paneltc_candidate(case: OpCase, value_dtype: str, sm_count: int):
    """``((format, plan), "")`` of the panel tensor-core kernel, or ``(None, reason)``:
    float64, or what the kernel declines (``spmm_paneltc.declined``: k not a multiple of 4, a
    panel fill above ``spmm_blocktc.MAX_FILL``). A panel's fill is at least its 16 x 8 blocks'
    (each of its MB block rows holds at most its items), so the blocks screen it first: on
    sampled block rows, as :func:`blocktc_candidate`, then on the blocks that function built,
    before any panel is."""
    if value_dtype != "float32":
        return None, "tensor-core path: float32 only"
    csr = case.matrix
    if csr.nnz == 0:
        return None, "no nonzeros"
    limit = spmm_blocktc.MAX_FILL
    screen = sampled_fill(csr.indptr, csr.indices, int(csr.shape[1]))
    if screen > 2 * limit:
        return None, f"16x8 block fill ~{screen:.1f} on sampled block rows > 2 x {limit:g}"
    blocks = block_format_of(csr)   # built once for blocktc's candidate too
    why = fill_declined(blocks.blocks, csr.nnz, limit)
    if why:
        return None, f"panel fill >= {why}"
    why = spmm_paneltc.declined("row", case.params.k, csr)   # row-major: auto transposes
    if why:
        return None, why
    fmt = spmm_paneltc.panel_format_of(csr)
    return (fmt, spmm_paneltc.plan_paneltc(fmt, csr.nnz, case.params.k, sm_count)), ""


def candidate_launch(name: str, plan: Any, registers=None, shape: tuple[int, int, int] = (0, 0, 0)):
    """The time model's launch of one candidate plan; ``registers(source, kernel)`` reads the
    compiled kernel's registers (None: the launch bound's cap); ``shape`` (rows, cols, k) for
    the block kernel."""
    if name == BLOCKTC:
        fmt, host = plan
        regs = registers(spmm_blocktc.SOURCE, host.kernel) if registers else None
        return blocktc_launch(host, fmt.block_ptr, *shape, passes=3, registers=regs)
    if name == PANELTC:
        fmt, host = plan
        regs = registers(spmm_paneltc.SOURCE, host.kernel) if registers else None
        return spmm_paneltc.paneltc_launch(host, fmt, *shape, passes=3, registers=regs)
    if name == ROWGROUP:
        regs = registers(spmm_rowgroup.SOURCE, plan.kernel) if registers else None
        return rowgroup_launch(plan, regs)
    if name == COLMAJOR:
        regs = registers(spmm_colmajor.SOURCE, plan.kernel) if registers else None
        return colmajor_launch(plan, regs)
    if name == ELL:
        from sparsescope.backends import spmm_ell

        regs = registers(spmm_ell.SOURCE, plan.kernel) if registers else None
        return spmm_ell.ell_launch(plan, regs)
    if name == ROWTILE:
        from sparsescope.backends import spmm_rowtile

        regs = registers(spmm_rowtile.SOURCE, plan.kernel) if registers else None
        return spmm_rowtile.rowtile_launch(plan, regs)
    regs = registers(spmm_cuda.SOURCE, plan.kernel) if registers else None
    return rowwarp_launch(plan, regs)


def planned_candidates(case: OpCase, value_dtype: str, index_bytes: int, sm_count: int,
                       full_warps: int, rates: Any = None,
                       registers=None) -> list[tuple[Candidate, Any, str]]:
    """(candidate, host plan or None, why not) of every candidate of ``case`` in
    :func:`candidate_names`' order: the CSR row-major plans, blocktc's and paneltc's (or the
    reason each declines), for column-major X colmajor's (:func:`colmajor_plans`, its narrow
    tiles sized by ``registers(source, kernel)``, the compiled kernel's registers; None: the
    cap); then rowtile's where it stages less X than the gathers (:func:`rowtile_candidate`,
    for the device of ``rates``; left out otherwise); then ELL's, or the reason it declines
    (:func:`ell_candidate`)."""
    csr, k = case.matrix, case.params.k
    out: list[tuple[Candidate, Any, str]] = [
        (cand, plan, "") for cand, plan in candidate_plans(
            csr.indptr, csr.nnz, k, value_dtype, index_bytes, sm_count, full_warps)]
    plan, declined = blocktc_candidate(csr, k, value_dtype, sm_count)
    out.append((Candidate(BLOCKTC), plan, declined))
    plan, declined = paneltc_candidate(case, value_dtype, sm_count)
    out.append((Candidate(PANELTC), plan, declined))
    if case.params.layout == "col":
        out += [(cand, plan, "") for cand, plan in colmajor_plans(
            csr.indptr, csr.nnz, k, value_dtype, index_bytes, sm_count, rates, registers)]
    found, _ = rowtile_candidate(case, value_dtype, index_bytes, sm_count, rates)
    if found is not None:
        out.append((*found, ""))
    found, declined = ell_candidate(case, value_dtype, index_bytes, sm_count)
    out.append((*found, "") if found is not None else (Candidate(ELL), None, declined))
    return out


def case_launch(case: OpCase, cand: Candidate, plan: Any, registers=None):
    """The launch of ``cand`` for ``case`` as the model reads it: the kernel's own, between
    the two device transposes (``model.spmm_predict.with_transposes``) when X is
    column-major and the kernel reads row-major X."""
    from sparsescope.model.spmm_predict import with_transposes

    csr, k = case.matrix, case.params.k
    rows, cols = int(csr.shape[0]), int(csr.shape[1])
    launch = candidate_launch(cand.backend, plan, registers, (rows, cols, k))
    if case.params.layout == "col" and cand.backend not in READS_COLUMN_MAJOR:
        launch = with_transposes(launch, rows, cols, k)
    return launch


def predict_candidates(case: OpCase, value_dtype: str, index_bytes: int, device: Any, *,
                       sm_count: int, full_warps: int, flushed: bool, timing: Any = None,
                       registers=None) -> list[CandidatePrediction]:
    """Every candidate of ``case`` (:func:`planned_candidates`; for column-major X each
    row-major kernel with its transposes, :func:`case_launch`) predicted on ``device`` (a
    ``context.DeviceContext``) through the one entry point (``context.predict_call``), in
    ``timing``'s mode (a ``TimingConfig``; None: latency); a candidate the model fails on, or
    that declines the case, is listed with the reason."""
    from sparsescope.context import predict_call

    out = []
    start = time.perf_counter()
    for cand, plan, declined in planned_candidates(case, value_dtype, index_bytes, sm_count,
                                                   full_warps, device.rates, registers):
        if plan is None:
            out.append(CandidatePrediction(cand, None, not_modelled=declined))
            start = time.perf_counter()
            continue
        try:
            launch = case_launch(case, cand, plan, registers)
        except Exception as exc:  # a candidate the model cannot take is never chosen
            out.append(CandidatePrediction(cand, None, not_modelled=f"{type(exc).__name__}: "
                                                                    f"{exc}"))
            start = time.perf_counter()
            continue
        p = predict_call(case, case.csr_traffic, launch, device, flushed=flushed,
                         timing=timing, who=cand.label, refine=False)
        out.append(CandidatePrediction(cand, p.predicted_ms, p.limiter,
                                       not_modelled=p.not_modelled,
                                       plan_s=time.perf_counter() - start))
        start = time.perf_counter()
    return out
