"""Predict an own SpMM kernel's time before it runs, from its launch (slices, lanes, slabs, loads
in flight), the matrix structure and the device's rates -- the SpMM side of
:mod:`sparsescope.model.predict`.

An own SpMM kernel (``spmm-cuda-rowwarp``, ``spmm-cuda-rowgroup``) walks the rows' slices in
warps, once per column slab of ``s`` values (grid.y); a lane group gathers each nonzero's
``s``-value slice of X's row ``j``. :class:`SpmmLaunch` is that launch in numbers; each
kernel's host plan fills one (no device needed). The kernel needs at least the time of each
of these terms (a :class:`~sparsescope.model.prediction.PredictionTerm` each)::

    dram    = (A x passes_dram + X from DRAM + Y (+ Y zero fill) + flush write-back) / DRAM bw
              passes_dram = 1 when A and one X slab fit the L2 together, else slabs
              X from DRAM = cols x k x value bytes when one X slab fits the L2, else the LRU
                            reuse model (``model.xgather`` with an X row slice as the unit)
    l2      = (A x slabs + Y) / L2 bw
              + g x slabs / L2 random-gather rate           (each gather's first sector)
              + g x slabs x (sectors per X row slice - 1) x 32 B / L2 bw   (the rest streams)
              g = sum over blocks of the distinct columns of the block's slices: X row
                  slices a block gathers again are served by its SM's L1 (the kernels load X
                  through the non-coherent L1 path, ``__ldg``), the rest by the L2
    issue   = warp instructions / (SMs x schedulers x SM clock)
    latency = sum over warps of t_warp / (SMs x resident warps per SM)   (Little's law)
    memory  = the warp rounds through a closed network of DRAM, L2 and issue per SM
              (``predict.per_sm_mva``): at least each of dram, l2, issue and latency
    imbalance = the longest warp's t_warp x max(1, loaded round / unloaded round): its rounds
              queue behind the other warps' requests as theirs do (the MVA's cycle time per
              round against its delay); its block holds an SM slot until it ends
    compute = 2 nnz k / FP32 (FP64) rate
    predicted = overhead (model.call_overhead) + max(memory, imbalance, compute)

Column-major X (``x_layout = "col"``: ``spmm-cuda-colmajor``, a lane a row slice, C columns
a thread, slabs = ceil(k / C) column tiles): the k values a nonzero gathers lie in k columns,
``cols`` values apart, a 32-byte sector each; neighbouring columns j of one X column share a
sector (8 float32 values), so the unit of reuse is the sector ``j // (32 / value bytes)``::

    l2      = (A x slabs + Y) / L2 bw + g_col x k / L2 random-gather rate
              g_col = sum over blocks of the distinct sectors j // (32 / value bytes) of the
                      block's slices (per column of X)
    X from DRAM = cols x k x value bytes when one tile of X (cols x C values) fits the L2,
                  else the LRU model with a sector of each of the tile's C columns as the unit

Its lanes walk their slices alone (32 slices a warp, one group a slice), C scalar loads of X a
nonzero (VEC 1, CHUNKS C), BATCH nonzeros' X in flight, and a round trip for pairs once a lane
has used the 32-byte sector of its indices (8 int32 pairs: the loads between hit L1).

A warp's time is its rounds of loads, each a round trip::

    t_warp = (pointer rounds + pair rounds) x DRAM latency + x rounds x x_round
             (pointer rounds 1: the slice pointers, read before the pairs they locate;
             0 for row-major ELL, ``spmm-cuda-ell``, whose lanes find their pairs from
             their row and lane alone and walk the padded width W: A = slices x W pairs)
    x_round = L2 latency + (X's DRAM share of its L2 sectors) x (DRAM latency - L2 latency)
    pair rounds = ceil(L / stage pairs)            (L: the slice's nonzeros)
    x rounds    = ceil(ceil(L / groups per slice) / BATCH)
    warp rounds = the largest of the ``slices per warp`` slices it holds

``groups per slice``: the lane groups that split one slice's nonzeros (rowwarp: 32 / GROUP;
rowgroup: 1, its 32 / G groups each walking a slice of their own). Resident warps per SM come
from the kernel's registers (read from the compiled kernel where there is one, else the cap
of its ``__launch_bounds__``), its block size and the SM's limits. Warp instructions per
gathered nonzero and slab (one group's)::

    CHUNKS x (1 vector load + VEC FMAs) + 3    (2 shuffles of (col, val), 1 address multiply-add)

plus 4 per stage of pairs loaded (2 loads, 2 address computations). Every rate and latency is
the device's measured ceiling where one was measured, else its datasheet; no constant is fitted
to a matrix or a kernel. What the model leaves out, named so its error can be read: L1
capacity (a block's repeated X rows are taken as hits however many there are), X shared in L1
between different blocks of one SM, atomics of cut rows, and the end of a row (stores,
shuffles of rowwarp's partial sums).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sparsescope.model.call_overhead import overhead_term
from sparsescope.model.kernel_shape import REGISTERS_PER_SM
from sparsescope.model.prediction import ModelPrediction, PredictionTerm
from sparsescope.model.spmm import SECTOR_BYTES, x_sectors_per_nonzero, x_slice_reads
from sparsescope.model.throughput import warm_dram_term

#: Registers are allocated to a warp in units of this many (Volta to Hopper).
REGISTER_UNIT = 256
#: Instructions of one gathered nonzero besides its CHUNKS x (load + VEC FMAs): the shuffles of
#: its column index and value inside the group and the X row address.
PER_PAIR_INSTRUCTIONS = 3
#: Instructions of one stage of (col, val) pairs: a load of each and their addresses.
PER_STAGE_INSTRUCTIONS = 4
BINDING = ("memory", "imbalance", "compute")


@dataclass(frozen=True, kw_only=True)
class OwnLaunch:
    """What every own SpMM kernel's launch gives the time models beside its own shape (the CSR
    kernels' :class:`SpmmLaunch`, the block kernel's ``model.blocktc_predict.BlockTcLaunch``);
    keyword-only, so each launch lists its own fields first."""

    block_warps: int
    """Warps a CUDA block."""
    max_registers: int
    """Registers a thread may use: the kernel's own (compiled) or its launch bound's cap."""
    registers_source: str
    value_bytes: int = 4
    launches: int = 1
    """Kernel launches of one call (a zero fill and the transposes each count one)."""
    around_bytes: int = 0
    """Bytes moved outside the SpMM kernel in the call, charged to its DRAM and L2 terms (none
    of our calls has any now: the device transposes are :attr:`transposes`)."""
    transposes: tuple[tuple[int, int], ...] = ()
    """(rows, cols) of each input a device transpose re-lays in the call, one kernel each
    before or after the SpMM kernel: their time (``model.transpose``) is added to the
    kernel's by ``model.own_spmm.predict_own_spmm``."""
    cuda_source: str = ""
    """Empty: the launch is not refined from SASS by the SpMV refiner."""
    label: str = ""


@dataclass(frozen=True)
class SpmmLaunch(OwnLaunch):
    """An own CSR SpMM kernel's launch as the time model reads it (module docstring)."""

    kernel: str
    """The kernel and its template, e.g. ``spmm_rowgroup<float, int, 4, 32, 1, 2, 8, 4>``."""
    slice_ptr: np.ndarray
    """n_slices + 1 offsets into the nonzeros: the slices, in the order warps take them."""
    slices_per_warp: int
    """Slices one warp holds side by side (rowgroup: 32 / G; rowwarp: 1)."""
    groups_per_slice: int
    """Lane groups splitting one slice's nonzeros (rowwarp: 32 / GROUP; rowgroup: 1)."""
    slab_cols: int
    """Values of X's row one group gathers per nonzero (a column slab)."""
    slabs: int
    """Column slabs (grid.y): the slices are walked once per slab."""
    vec: int
    chunks: int
    """Vector loads a lane issues per nonzero and slab."""
    stage_pairs: int
    """(col, val) pairs loaded per stage for one slice."""
    batch: int
    """X rows a group has in flight (gathered before their FMAs)."""
    index_bytes: int = 4
    zero_fill: bool = False
    """Rows cut into several slices: Y zero-filled first (one memset more) and summed."""
    x_layout: str = "row"
    """``row``: X row-major (an X row slice of ``slab_cols`` values a gather); ``col``: X
    column-major (``spmm-cuda-colmajor``: each of a nonzero's values its own sector)."""
    pointer_rounds: int = 1
    """Round trips a lane makes for its slice pointers before its pairs: 1 (CSR); 0 for
    row-major ELL (``spmm-cuda-ell``), whose pairs' addresses are the row's own."""
    ell_width: int = 0
    """> 0: every slice padded to this many pairs (ELL): each lane loads all of them (their
    rounds), A is ``slices x ell_width`` pairs and no pointers; gathers are the real
    nonzeros' (``slice_ptr``), the padding's are dropped by the kernel."""
    walks_padding: bool = True
    """With ``ell_width``: True where every lane walks the whole padded width
    (``spmm-cuda-ell``); False where a group stops after its first stage holding a pad
    (rowgroup's ``ell``): its pair rounds are ``min(ceil(W / stage), floor(len / stage) + 1)``
    and its gathers the real pairs'."""

    @property
    def n_slices(self) -> int:
        return int(self.slice_ptr.size - 1)

    @property
    def warps(self) -> int:
        """Warps of one slab: ceil(slices / slices per warp)."""
        return -(-self.n_slices // self.slices_per_warp)


def plan_fields(slice_plan, notes: dict[str, str], registers: int | None,
                min_blocks: int) -> dict:
    """The :class:`SpmmLaunch` fields every own kernel's plan gives alike: its slices, value
    and index widths (from the plan's notes), the zero fill and its launch, and the registers
    -- the compiled kernel's, else the cap of ``__launch_bounds__(256, min_blocks)``
    (65,536 / (256 x min_blocks): 128 for 2, 64 for 4)."""
    cap = REGISTERS_PER_SM // (256 * min_blocks)
    cut = slice_plan.split_rows > 0
    return dict(slice_ptr=slice_plan.slice_ptr,
                value_bytes=4 if notes["value_dtype"] == "float32" else 8,
                index_bytes=np.dtype(notes["index_dtype"]).itemsize,
                max_registers=registers if registers else cap,
                registers_source=("the compiled kernel" if registers
                                  else f"the launch bound's cap ({cap})"),
                zero_fill=cut, launches=1 + cut)


def resident_warps(launch: SpmmLaunch, *, max_threads_per_sm: int, max_blocks_per_sm: int,
                   registers_per_sm: int = REGISTERS_PER_SM) -> int:
    """Warps one SM holds: blocks limited by registers, the block limit and the thread limit::

        per warp  = round_up(registers x 32, 256)
        blocks    = min(max blocks, floor(registers_per_sm / (per warp x block warps)),
                        floor(max threads / (32 x block warps)))

    Hand check: 64 registers, 2-warp blocks, 65,536 registers, 32 blocks, 2,048 threads ->
    2,048 a warp, 16 blocks by registers, 32 by threads -> 32 warps; 91 registers, 8-warp
    blocks -> 2,912 a warp, 2 blocks -> 16 warps.
    """
    per_warp = -(-launch.max_registers * 32 // REGISTER_UNIT) * REGISTER_UNIT
    bw = max(1, launch.block_warps)
    blocks = min(max_blocks_per_sm, registers_per_sm // (per_warp * bw),
                 max_threads_per_sm // (32 * bw))
    return max(1, blocks) * bw


def warp_rounds(launch: SpmmLaunch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pair rounds, x rounds, gathered nonzeros of the busiest group) per warp of one slab
    (module docstring); a warp's slices are consecutive.

    Hand check: slices of 10, 3 and 0 nonzeros, 2 slices a warp, 1 group a slice, BATCH 4,
    8 pairs a stage -> warps (10, 3) and (0): pair rounds (2, 0), x rounds (3, 0), busiest
    group (10, 0). The same rows as ELL of width 24 that stops at a pad (``walks_padding``
    False): stages walked min(3, len // 8 + 1) = (2, 1) and (1): pair rounds (2, 1), x rounds
    (3, 0), busiest (10, 0); walking the padding: pair rounds (3, 3), x rounds (6, 6).
    """
    lengths = np.diff(np.asarray(launch.slice_ptr, dtype=np.int64))
    stage = max(1, launch.stage_pairs)
    walked = lengths
    if launch.ell_width and launch.walks_padding:   # every lane walks the padded width
        lengths = walked = np.full(lengths.size, launch.ell_width, dtype=np.int64)
    elif launch.ell_width:   # up to the first stage holding a pad
        walked = np.minimum(launch.ell_width, (lengths // stage + 1) * stage)
    per_group = -(-lengths // max(1, launch.groups_per_slice))
    pairs = -(-walked // stage)
    xr = -(-per_group // max(1, launch.batch))
    return (_per_warp_max(pairs, launch.slices_per_warp), _per_warp_max(xr, launch.slices_per_warp),
            _per_warp_max(per_group, launch.slices_per_warp))


def _per_warp_max(values: np.ndarray, per_warp: int) -> np.ndarray:
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    pad = (-values.size) % per_warp
    return np.pad(values, (0, pad)).reshape(-1, per_warp).max(axis=1)


def block_gathers(slice_ptr, indices, slices_per_block: int, *,
                  max_exact_nnz: int = 4_000_000) -> tuple[float, str]:
    """(X row slices the blocks request from the L2, how): per block of ``slices_per_block``
    consecutive slices, its distinct column indices (repeats hit in the SM's L1), summed.
    Exact up to ``max_exact_nnz`` nonzeros; above, every m-th block is counted and the sum
    scaled by nnz / counted nonzeros.

    Hand check: slices [cols 0, 1], [col 1], [col 2, 0]; 2 slices a block -> blocks {0, 1} and
    {2, 0}: 2 + 2 = 4 requests of 5 nonzeros.
    """
    ptr = np.asarray(slice_ptr, dtype=np.int64)
    nnz = int(ptr[-1]) if ptr.size else 0
    if nnz == 0:
        return 0.0, "no nonzeros"
    starts = ptr[:-1:slices_per_block]
    ends = np.append(starts[1:], nnz)
    stride = max(1, -(-nnz // max_exact_nnz))
    pick = np.arange(0, starts.size, stride)
    lengths = ends[pick] - starts[pick]
    counted = int(lengths.sum())
    if counted == 0:
        return 0.0, "no nonzeros in the counted blocks"
    block = np.repeat(np.arange(pick.size, dtype=np.int64), lengths)
    offsets = np.arange(counted, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths,
                                                              lengths)
    cols = np.asarray(indices, dtype=np.int64)[np.repeat(starts[pick], lengths) + offsets]
    distinct = np.unique(block * (int(cols.max()) + 1) + cols).size
    how = "exact" if stride == 1 else f"every {stride}th block, scaled"
    return distinct * nnz / counted, (f"{slices_per_block} slices a block, repeats in L1 "
                                      f"({how}): {distinct / counted:.2f} of the nonzeros")


def sector_columns(indices, value_bytes: int) -> np.ndarray:
    """The sector of one column of column-major X each nonzero gathers: ``j // (32 / value
    bytes)`` (float32: 8 neighbouring j share a sector). [0, 7, 8, 17] -> [0, 0, 1, 2]."""
    return np.asarray(indices, dtype=np.int64) // max(1, SECTOR_BYTES // value_bytes)


def x_dram_bytes(indptr, indices, cols: int, k: int, launch: SpmmLaunch,
                 l2_bytes: int) -> tuple[float, str]:
    """(bytes of X read from DRAM, how): X once (cols x k x value bytes) when one slab of X
    (cols x slab x value bytes) fits the L2, else per slab the LRU model's misses of X row
    slices (``model.spmm.x_slice_reads``, as ``model.spmm.x_reuse_dram_floors``). Column-major
    X: the unit is a sector of each of the tile's ``slab_cols`` columns (``slab_cols x 32``
    bytes), indexed by :func:`sector_columns`."""
    vb = launch.value_bytes
    once = float(cols * k * vb)
    if cols * launch.slab_cols * vb <= l2_bytes or len(indices) == 0:
        return once, "X read once (one slab of X fits the L2)"
    if launch.x_layout == "col":
        per = SECTOR_BYTES // vb
        unit = launch.slab_cols * SECTOR_BYTES
        g = x_slice_reads(indptr, sector_columns(indices, vb), -(-cols // per), l2_bytes, unit)
    else:
        unit = launch.slab_cols * vb
        g = x_slice_reads(indptr, indices, cols, l2_bytes, unit)
    misses = max(once, launch.slabs * g.dram_sectors * unit)
    return misses, (f"X slab of {cols * launch.slab_cols * vb / 1e6:,.0f} MB > L2: LRU reuse "
                    f"model, {g.dram_sectors / max(1, g.distinct_sectors):.2f} reads of each "
                    f"{'sector' if launch.x_layout == 'col' else 'row slice'}")


def issue_term(instructions: float, rates) -> PredictionTerm:
    """``issue = warp instructions / (SMs x schedulers x SM clock)`` (the device must have a
    clock). 8,000 instructions on 2 SMs x 4 schedulers at 1,000 MHz -> 0.001 ms."""
    rate = rates.sm_count * rates.schedulers_per_sm * rates.sm_clock_mhz * 1e6
    return PredictionTerm("issue", instructions / rate * 1e3,
                          f"{instructions:,.0f} warp instructions / ({rates.sm_count} SMs x "
                          f"{rates.schedulers_per_sm} x {rates.sm_clock_mhz:,.0f} MHz)")


def predict_spmm(indptr, indices, cols: int, k: int, launch: SpmmLaunch, rates, *,
                 flushed: bool, fp64: bool = False) -> ModelPrediction:
    """The predicted time of one own-kernel SpMM call with every term (module docstring).
    ``rates``: ``model.predict.DeviceRates``."""
    from sparsescope.model.predict import flush_writeback, per_sm_mva

    indptr = np.asarray(indptr, dtype=np.int64)
    rows, nnz = indptr.size - 1, int(indptr[-1]) if indptr.size else 0
    vb, ib = launch.value_bytes, launch.index_bytes
    a_bytes = (launch.n_slices * launch.ell_width * (vb + ib) if launch.ell_width
               else nnz * (vb + ib) + (launch.n_slices + 1) * ib)
    y_bytes = rows * k * vb * (2 if launch.zero_fill else 1)
    x_dram, x_how = x_dram_bytes(indptr, indices, cols, k, launch, rates.l2_bytes)
    x_slab = cols * launch.slab_cols * vb
    a_dram = a_bytes * (1 if a_bytes + x_slab <= rates.l2_bytes else launch.slabs)
    fetched = a_dram + x_dram + launch.around_bytes
    writeback = flush_writeback(rates, fetched) if flushed else 0.0
    dram_bytes = fetched + y_bytes + writeback
    col = launch.x_layout == "col"
    per_slab, l1_how = block_gathers(launch.slice_ptr,
                                     sector_columns(indices, vb) if col else indices,
                                     launch.slices_per_warp * launch.block_warps)
    if col:   # a sector request for each of the k columns, none streams after it
        gathers = per_slab * k
        sectors = gathers
    else:
        gathers = per_slab * launch.slabs
        sectors = gathers * x_sectors_per_nonzero(launch.slab_cols, vb)
    x_l2_bytes = sectors * 32
    dram = warm_dram_term(PredictionTerm(
        "dram", dram_bytes / (rates.dram_bw_gb_s * 1e6),
        f"(A {a_dram:,.0f} B + X {x_dram:,.0f} B + Y {y_bytes:,.0f} B + around "
        f"{launch.around_bytes:,} B + write-back {writeback:,.0f} B) / "
        f"{rates.dram_bw_gb_s:,.0f} GB/s"), fetched + y_bytes, rates)  # model.throughput
    terms = [dram]
    hit = 1.0 - min(1.0, x_dram / x_l2_bytes) if x_l2_bytes else 1.0
    if rates.l2_bw_gb_s:
        first = (gathers / (rates.l2_gather_gsectors_s * 1e6) if rates.l2_gather_gsectors_s
                 else gathers * 32 / (rates.l2_bw_gb_s * 1e6))
        rest = (sectors - gathers) * 32 / (rates.l2_bw_gb_s * 1e6)
        streams = (a_bytes * launch.slabs + y_bytes + launch.around_bytes) / (
            rates.l2_bw_gb_s * 1e6)
        terms.append(PredictionTerm(
            "l2", streams + first + max(0.0, rest),
            f"(A x {launch.slabs} slab(s) + Y + around) / {rates.l2_bw_gb_s:,.0f} GB/s + "
            f"{gathers:,.0f} gathers' first sectors at the random-gather rate + "
            f"{sectors - gathers:,.0f} further X sectors / L2 bandwidth"))
    pairs, xr, busiest = warp_rounds(launch)
    dram_ns = rates.dram_latency_ns
    l2_ns = min(rates.l2_latency_ns, dram_ns) if rates.l2_latency_ns else dram_ns
    x_round = l2_ns + (1.0 - hit) * (dram_ns - l2_ns)
    t_warp = (launch.pointer_rounds + pairs) * dram_ns + xr * x_round
    per_nz = launch.chunks * (1 + launch.vec) + PER_PAIR_INSTRUCTIONS
    instructions = launch.slabs * float((busiest * per_nz + pairs * PER_STAGE_INSTRUCTIONS).sum())
    per_sm = resident_warps(launch, max_threads_per_sm=rates.max_threads_per_sm,
                            max_blocks_per_sm=rates.max_blocks_per_sm,
                            registers_per_sm=rates.registers_per_sm)
    n_warps = launch.warps * launch.slabs
    cycles = max(1.0, float((pairs + xr).sum()) * launch.slabs)
    if rates.sm_clock_mhz:
        terms.append(issue_term(instructions, rates))
    slots = rates.sm_count * per_sm
    total_ns = float(t_warp.sum()) * launch.slabs
    terms.append(PredictionTerm("latency", total_ns / max(1, min(slots, n_warps)) * 1e-6,
                                f"{n_warps:,} warps' round trips ({total_ns / 1e6:,.3f} ms in "
                                f"all) / min({rates.sm_count} SMs x {per_sm} warps, warps)"))
    demands = {t.name: t.time_ms * 1e-3 / cycles for t in terms
               if t.name in ("dram", "l2", "issue")}
    delay_s = total_ns * 1e-9 / cycles
    queue = per_sm_mva(demands, delay_s, rates.sm_count, per_sm, max(1, n_warps))
    terms.append(PredictionTerm("memory", cycles / queue.throughput_per_s * 1e3,
                                f"{cycles:,.0f} warp rounds through DRAM, L2 and issue (MVA per "
                                f"SM, {queue.customers:,} resident warps, {delay_s * 1e9:,.0f} "
                                f"ns a round)"))
    longest = float(t_warp.max()) if t_warp.size else 0.0
    loaded = max(1.0, queue.cycle_s / delay_s) if delay_s > 0 else 1.0
    terms.append(PredictionTerm("imbalance", longest * loaded * 1e-6,
                                f"longest warp: ({launch.pointer_rounds} + "
                                f"{int(pairs.max()) if pairs.size else 0} "
                                f"pair rounds) x {dram_ns:,.0f} ns + "
                                f"{int(xr.max()) if xr.size else 0} x rounds x {x_round:,.0f} "
                                f"ns, x {loaded:.2f} for the queues under load"))
    flops = 2.0 * nnz * k
    rate = rates.fp32_gflops / (2 if fp64 else 1)  # FP64 at half rate (Hopper, A100)
    terms.append(PredictionTerm("compute", flops / (rate * 1e6),
                                f"{flops:,.0f} flops / {rate:,.0f} GFLOP/s"))
    terms.append(overhead_term(rates, launch.launches))
    overhead = terms[-1].time_ms
    bound = max((t for t in terms if t.name in BINDING), key=lambda t: t.time_ms)
    limiter = queue.dominant if bound.name == "memory" else bound.name
    inputs = {"dram_bytes": float(dram_bytes), "x_l2_gathers": float(gathers),
              "x_dram_bytes": float(x_dram),
              "x_l2_bytes": float(x_l2_bytes), "x_l2_hit_rate": hit,
              "resident_warps_per_sm": float(per_sm), "warps": float(n_warps),
              "warp_instructions": instructions, "x_round_ns": x_round,
              "registers": float(launch.max_registers), "loaded_round_factor": loaded,
              "flush_writeback_bytes": float(writeback)}
    return ModelPrediction(
        predicted_ms=overhead + bound.time_ms, limiter=limiter, terms=tuple(terms),
        inputs=inputs, kernel=launch.label or launch.kernel,
        assumptions=(f"registers: {launch.registers_source}", f"X from DRAM: {x_how}",
                     f"X from L2: {l1_how}",
                     f"DRAM bandwidth: {rates.sources.get('dram_bw')}; latency: "
                     f"{rates.sources.get('dram_latency')}"))


def with_transposes(launch: OwnLaunch, rows: int, cols: int, k: int) -> OwnLaunch:
    """``launch`` between two device transposes (``spmm-cuda-transposed``): X (k x cols
    column-major, i.e. a k x cols row-major input) before the kernel, Y (rows x k) after it,
    two launches more; their time is ``model.transpose``'s, added to the kernel's (they run
    one after another on the stream). Hand check: rows 10, cols 20, k 8 -> transposes
    ((8, 20), (10, 8)), launches + 2."""
    return replace(launch, transposes=launch.transposes + ((k, cols), (rows, k)),
                   launches=launch.launches + 2,
                   label=f"{launch.label or launch.kernel} + device transposes")


