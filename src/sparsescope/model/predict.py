"""Predict an SpMV kernel's time before it runs, from its format's bytes, its kernel shape, the
matrix structure and the device's measured ceilings.

The kernel needs at least the time of each of these (each a :class:`PredictionTerm`)::

    dram      = (declared streams (Traffic less x) + flush write-back) / DRAM bandwidth
                + x sectors missing in L2 / DRAM random-gather sector rate
                (write-back: the L2 flush's dirty lines, min(L2, bytes fetched) x the
                measured flush_writeback_share (1 without it), when the protocol flushed the
                L2 before the call: :func:`flush_writeback`)
    l2        = declared streams / L2 bandwidth + x sector requests / L2 random-gather rate
    latency   = when the last block finishes, the blocks dispatched in launch order to the
                SMs x resident blocks per SM slots (``iterations.wave_makespan``: at least
                sum of block times / slots, Little's law with the kernel's own memory-level
                parallelism, and whole rounds of blocks where the grid is a few waves)
    imbalance = the longest block's time (the critical path of the kernel's own
                decomposition of rows or nonzeros): its iterations at the loaded
                t_iter (t_iter + the MVA's queueing per iteration) while the rest of
                the kernel runs (the memory term's time), at t_iter after that
                (:func:`longest_block`)
    block time = setup rounds x stream round + iterations x t_iter
                (a CSR kernel's lane: its main-loop iterations plus its short windows -- single
                steps and peeled copies -- at one stream and one x round each,
                ``model.csr_windows``)
    compute   = flops / FP32 rate

    t_iter    = rounds x round latency: the streams' round (overlapped with the gathers when
                staged by cp.async one chunk ahead: the longer of the two), each further round
                (the x gathers) at
                L2 latency + P(a warp's gather misses) x (DRAM latency - L2 latency),
                P = 1 - h^s for an L2 hit rate h and s sectors per gather instruction;
                plus, for a loop that holds another loop (the tile kernels), the warp's own
                instruction path (:func:`instruction_path_ns`); where the SASS gives the
                loop's issue schedule, its walk, each instruction the warp issues taking
                DEPENDENT_ISSUE_CYCLES / SM clock between its stops
                (:func:`issue_interval_ns`, ``model.issue_schedule``). The stream round is
                the DRAM latency after the latency mode's flush, the L2's for what a warm L2
                kept back to back (P scaled alike), and the L2's for the stream loads after an
                iteration's first stop where a lane's row opens one DRAM access unit an
                iteration (``model.residency``)

    memory    = the block-iterations through a closed queueing network of the DRAM and L2
                (demand per iteration = the dram / l2 term's time / iterations) and the round
                trips (delay t_iter), solved exactly by MVA (``model.queueing``): at least each
                of dram, l2 and latency, and above their max where they are close
    predicted = overhead + max(memory, imbalance, compute)
    limiter   = the binding term; for memory, the station with the longest residence (dram,
                l2, or latency when the round trips outweigh both queues)

Beside the prediction, ``inputs['gather_floor_ms']`` is the format's memory floor
(:func:`format_floor`, ``model.gathers``): the time no kernel reading this format's streams can
beat with the on-chip strategies the floor names, so the report reads each case against it.

``overhead`` is the backend's fixed cost per call measured on the device (the same call on a
tiny matrix, plus what a library call does beyond that probe: further launches and the search
of more row offsets, ``model.call_overhead``), or the timing protocol's measured cost of a call
of that many empty launches, plus, for a call that ends in ``spmv_fixup``, that kernel's two
dependent loads (DRAM latency + L2 latency): it starts only when the first launch has
finished. Every rate and latency is the device's measured ceiling where one was measured
(``sparsescope ceilings``) and the datasheet otherwise; no constant is fitted to a matrix or a
backend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sparsescope.hardware.specs import tf32_tensor_gflops
from sparsescope.model.call_overhead import call_overhead_us, overhead_assumptions
from sparsescope.model.csr_windows import window_block_iterations
from sparsescope.model.gathers import SECTOR_BYTES, GatherFloor, gather_floor, l2_sector_rate
from sparsescope.model.iterations import (  # noqa: F401  (re-exported: the loop counts)
    _cut,
    _group_max,
    _sorted_in_windows,
    block_iterations,
    kernel_row_lengths,
    row_iterations,
    wave_makespan,
)
from sparsescope.model.kernel_shape import (
    REGISTERS_PER_SM,
    SMEM_PER_SM,
    KernelShape,
    escape_iteration_share,
    resident_blocks,
)
from sparsescope.model.l1_cache import L1Cache, l1_data_bytes
from sparsescope.model.l1_wavefronts import BlockWavefronts, longest_block_wavefronts
from sparsescope.model.littles_law import warps_per_sm_required
from sparsescope.model.onchip import sm_work
from sparsescope.model.prediction import ModelPrediction, PredictionTerm
from sparsescope.model.queueing import MvaResult, mva
from sparsescope.model.residency import LoadLatencies, dram_access_bytes, load_latencies
from sparsescope.model.row_windows import csr_refetches
from sparsescope.model.throughput import throughput_assumption, warm_dram_term
from sparsescope.model.traffic import Traffic
from sparsescope.model.xgather import XGather, floor_requests, x_gather

DEVICE_TERMS = ("dram", "l2", "latency", "memory", "imbalance", "compute")
#: The terms the prediction takes the largest of: ``memory`` already lies above the dram, l2
#: and latency bounds (it is their queueing network), so they are shown, not compared.
BINDING_TERMS = ("memory", "imbalance", "compute")


@dataclass(frozen=True)
class DeviceRates:
    """What the prediction reads of a device, each with where it came from."""

    name: str
    sm_count: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    l2_bytes: int
    dram_bw_gb_s: float
    l2_bw_gb_s: float | None
    dram_latency_ns: float
    l2_latency_ns: float | None
    fp32_gflops: float
    dram_gather_gsectors_s: float | None
    """Random 32-byte sectors per second from DRAM / 1e9 (measured), or None."""
    l2_gather_gsectors_s: float | None
    """Random 32-byte sectors per second from L2 / 1e9 (measured), or None."""
    launch_us: float | None
    """Time of one empty kernel launch, device side (measured), or None."""
    sources: dict[str, str] = field(default_factory=dict)
    schedulers_per_sm: int = 4
    """Warp schedulers per SM, each issuing one warp instruction per cycle (spec)."""
    sm_clock_mhz: float | None = None
    """SM clock (spec, boost): with the schedulers, the instruction issue rate; None: no
    issue term."""
    l2_write_bw_gb_s: float | None = None
    """L2 write bandwidth (measured), for spill stores; None: the L2 (read) bandwidth."""
    registers_per_sm: int = REGISTERS_PER_SM
    """Registers of one SM (spec): with a kernel's registers from its SASS, its occupancy."""
    shared_mem_per_sm_bytes: int = SMEM_PER_SM
    """Shared memory one SM gives its blocks (spec)."""
    tf32_tensor_gflops: float | None = None
    """Dense TF32 tensor-core peak (spec: ``hardware.specs.tf32_tensor_gflops``), or None."""
    flush_writeback_share: float | None = None
    """Share of the L2 flush's evicted dirty bytes the next kernel pays at the DRAM bandwidth
    (measured: ``MeasuredCeilings.flush_writeback_share``), or None: not measured."""
    call_us: float | None = None
    """A timed call of one empty kernel through the timing protocol, L2 flushed (measured:
    ``MeasuredCeilings.call_us``), or None: not measured (``model.call_overhead``)."""
    next_launch_us: float | None = None
    """What each further launch of a call adds (measured: ``MeasuredCeilings.next_launch_us``),
    or None."""
    pdl_launch_us: float | None = None
    """A call of one empty kernel launched with programmatic dependent launch behind the same,
    back to back (measured: ``MeasuredCeilings.pdl_launch_us``), or None: not measured, or PDL
    not available where the ceilings ran."""
    compute_capability: str = ""
    """The device's compute capability (spec): its unified L1 / shared memory and carveouts
    (``model.l1_cache``); "" for none known, where a block's x is kept in L1 without limit."""
    library_call_us: dict[str, float] = field(default_factory=dict)
    """Library route (``cupy``, ``torch``, ``nvmath``) -> its cuSPARSE SpMV's measured fixed
    cost per call through the timing protocol, on a tiny matrix (``MeasuredCeilings.
    library_call_us``; ``model.call_overhead``); empty: not measured."""
    library_call_throughput_us: dict[str, float] = field(default_factory=dict)
    """The same calls timed back to back (the throughput mode), microseconds per call."""
    timing_mode: str = "latency"
    """The timing protocol's mode the prediction is for (``timing.modes``): ``throughput``
    overlaps a call's launches with the previous call's and keeps the L2 warm
    (``model.throughput``)."""
    dram_access_bytes: int = 32
    """Bytes one DRAM access delivers to the L2 (the memory type's pseudo-channel width x
    burst length, ``model.residency.dram_access_bytes``; 64 on HBM3): a lane reading its row
    opens one access unit per this many bytes (``model.residency``)."""


def device_rates(spec, ceilings=None) -> DeviceRates:
    """The device's rates: measured ceilings where ``ceilings`` has them, the spec otherwise.

    DRAM bandwidth is the measured read bandwidth (SpMV is nearly all reads), else the measured
    copy bandwidth, else the datasheet peak.
    """
    def pick(*options):
        for value, source in options:
            if value:
                return value, source
        return None, "unknown"

    c = ceilings
    dram, dram_src = pick((getattr(c, "read_bw_gb_s", None), "measured read bandwidth"),
                          (getattr(c, "copy_bw_gb_s", None), "measured copy bandwidth"),
                          (spec.peak_bw_gb_s, "datasheet peak"))
    l2bw, l2bw_src = pick((getattr(c, "l2_bw_gb_s", None), "measured L2 bandwidth"))
    lat, lat_src = pick((getattr(c, "dram_latency_ns", None), "measured pointer chase"),
                        (spec.dram_latency_ns, "spec estimate"))
    l2lat, l2lat_src = pick((getattr(c, "l2_latency_ns", None), "measured pointer chase"))
    fp32, fp32_src = pick((getattr(c, "fp32_gflops", None), "measured FMA chains"),
                          (spec.fp32_peak_gflops, "datasheet"))
    launch, launch_src = pick((getattr(c, "launch_us", None), "measured empty kernel"))
    dgather, dgather_src = pick((getattr(c, "dram_gather_gsectors_s", None),
                                 "measured random gathers"))
    lgather, lgather_src = pick((getattr(c, "l2_gather_gsectors_s", None),
                                 "measured random gathers"))
    l2w, l2w_src = pick((getattr(c, "l2_write_bw_gb_s", None), "measured L2 write bandwidth"))
    share = getattr(c, "flush_writeback_share", None)  # 0.0 is a measurement, not a gap
    clock, clock_src = pick((getattr(spec, "sm_clock_mhz", None), "spec (boost clock)"))
    access, access_src = dram_access_bytes(getattr(spec, "memory", "") or "")
    tensor = (tf32_tensor_gflops(spec.sm_count, spec.compute_capability, clock)
              if clock and getattr(spec, "compute_capability", None) else None)
    return DeviceRates(
        name=spec.name, sm_count=spec.sm_count, max_threads_per_sm=spec.max_threads_per_sm,
        max_blocks_per_sm=spec.max_blocks_per_sm, l2_bytes=int(spec.l2_bytes),
        dram_bw_gb_s=float(dram), l2_bw_gb_s=l2bw, dram_latency_ns=float(lat),
        l2_latency_ns=l2lat, fp32_gflops=float(fp32), dram_gather_gsectors_s=dgather,
        l2_gather_gsectors_s=lgather, launch_us=launch,
        schedulers_per_sm=int(getattr(spec, "warp_schedulers_per_sm", 4) or 4),
        sm_clock_mhz=clock, l2_write_bw_gb_s=l2w,
        registers_per_sm=int(getattr(spec, "registers_per_sm", 0) or REGISTERS_PER_SM),
        shared_mem_per_sm_bytes=int(getattr(spec, "shared_mem_per_sm_bytes", 0) or SMEM_PER_SM),
        tf32_tensor_gflops=tensor,
        flush_writeback_share=None if share is None else float(share),
        call_us=getattr(c, "call_us", None), next_launch_us=getattr(c, "next_launch_us", None),
        pdl_launch_us=getattr(c, "pdl_launch_us", None),
        library_call_us=dict(getattr(c, "library_call_us", None) or {}),
        library_call_throughput_us=dict(getattr(c, "library_call_throughput_us", None) or {}),
        compute_capability=str(getattr(spec, "compute_capability", "") or ""),
        dram_access_bytes=access,
        sources={"dram_access": access_src, "dram_bw": dram_src, "l2_bw": l2bw_src,
                 "dram_latency": lat_src, "l2_latency": l2lat_src, "fp32": fp32_src,
                 "launch": launch_src,
                 "dram_gathers": dgather_src, "l2_gathers": lgather_src,
                 "l2_write_bw": l2w_src, "sm_clock": clock_src,
                 "tf32_tensor": ("datasheet dense TF32 per SM and clock x spec clock" if tensor
                                 else "unknown")})


def iteration_ns(shape: KernelShape, rates: DeviceRates, xg: XGather,
                 trips: LoadLatencies | None = None, *, issue: bool = True
                 ) -> tuple[float, float]:
    """(t_iter, x round latency) in ns (module docstring), a stream load's round trip
    ``stream`` and the x misses' scale ``m`` from ``trips`` (``model.residency``: the DRAM
    latency and 1 for a call timed alone after the flush, less where the L2 is warm)::

        x round = L2 latency + m (1 - h^s) (DRAM latency - L2 latency)
        t_iter  = stream + (rounds - 1) x x round
        staged  : max(stream, (rounds - 1) x x round)   (the streams copied by cp.async
                  one chunk ahead, double-buffered: a chunk waits for its copy, issued one
                  chunk earlier, or for its own gathers, whichever is longer)

    or, where the shape carries the loop's issue schedule (read from its SASS), the schedule's
    steady-state iteration walked with stream loads at ``stream`` (those after the iteration's
    first stop at ``trips.reuse_ns`` where a lane's row puts them on chip), gathers at the x
    round and each instruction the warp issues at :func:`issue_interval_ns` where the schedule
    counts them (``model.issue_schedule``): the warp stops at each use of a load in flight,
    and between stops it issues its instructions one after another. A share p of iterations
    that wait for one more dependent stream load (delta16's escape columns, declared from the
    format) adds that round trip::

        t_iter = walk(every-iteration path; issue interval) + p x stream

    ``issue`` False: the round trips alone, without the warp's instruction path (the share
    of ``t_iter`` that is issue: ``inputs['issue_path_ns']``).

    Hand check: DRAM 350 ns, L2 150 ns, h = 0.5, s = 1, 2 rounds, not staged -> x round 250 ns,
    t_iter 600 ns.
    """
    dram = rates.dram_latency_ns
    l2 = min(rates.l2_latency_ns, dram) if rates.l2_latency_ns else dram
    stream = trips.stream_ns if trips is not None else dram
    scale = trips.x_miss_scale if trips is not None else 1.0
    warp_gathers = max(1.0, xg.gathers / 32.0)
    sectors = min(32.0, max(1.0, xg.l2_requests / warp_gathers))
    miss = (1.0 - xg.l2_hit_rate ** sectors) * scale
    x_round = l2 + miss * (dram - l2)
    if shape.issue_schedule is not None and not shape.staged:
        reuse = trips.reuse_ns if trips is not None else None
        interval = issue_interval_ns(rates) if issue else 0.0
        t_iter = shape.issue_schedule.walk(stream, x_round, reuse, interval).iteration_ns
        return t_iter + escape_share(shape) * stream, x_round
    gathers = max(0, shape.rounds_per_iteration - 1) * x_round
    path = instruction_path_ns(shape, rates) if issue else 0.0
    if shape.staged:
        # double-buffered: the next chunk's copy leaves when this chunk starts, so a chunk
        # lasts at least the copy's round trip, however fast its gathers
        return max(stream, gathers), x_round
    return stream + gathers + path, x_round


#: Cycles between a warp's dependent instructions (FP32 and integer pipelines on Volta to
#: Hopper): an instruction that reads the one before issues this many cycles after it. The
#: model charges every instruction on a warp's own path this much (:func:`issue_interval_ns`,
#: :func:`instruction_path_ns`). ncu's warp states on our kernels agree (H200,
#: results/h200/profile): cycles per issued instruction outside its global-memory waits (long
#: scoreboard) and outside waiting for another warp to issue (not selected) -- the issue cycle
#: itself, fixed-latency dependences, branches, shared memory -- are 25.72 - 21.76 - 0.61 = 3.4
#: for ``spmv_sell`` on the cage15 analog and 24.10 - 13.08 - 3.38 = 7.6 for ``spmv_tile`` on
#: cant.
DEPENDENT_ISSUE_CYCLES = 4


def issue_interval_ns(rates: DeviceRates) -> float:
    """A warp's time per instruction it issues on its own path, between its memory stops::

        issue interval = DEPENDENT_ISSUE_CYCLES / SM clock

    0 without a clock (the walk of the loads alone). Hand check: 4 cycles at 1,980 MHz ->
    2.02 ns; ``spmv_sell<float, 0, 1, 1, 4, 6, 1>``'s 155 instructions an 8-step iteration:
    313 ns, of which the stops hide what issues while a load is in flight."""
    if not rates.sm_clock_mhz:
        return 0.0
    return DEPENDENT_ISSUE_CYCLES * 1e3 / rates.sm_clock_mhz


def instruction_path_ns(shape: KernelShape, rates: DeviceRates) -> float:
    """A warp's own instruction path through one iteration, for a shape whose SASS gave no
    issue schedule because its loop holds another loop (the tile kernels: a tile's rows and
    its reduction)::

        path = loop instructions x DEPENDENT_ISSUE_CYCLES / SM clock

    Why: ncu on the tile kernel (results/h200/profile/2026-11-25-cases-rmat20-warp-rows and
    2026-11-25-cases-rmat20) finds about half of a block's time outside its global-load waits:
    fixed-latency waits, shared memory, barriers, branches, which the memory rounds do not
    count. A staged kernel (cp.async, no schedule either) is left out: its loop's instructions
    issue while its next chunk's copy is in flight. 0 without the SASS's count or a clock.
    Hand check: 364 instructions at 1,980 MHz -> 735 ns."""
    if (shape.issue_schedule is not None or shape.staged or not shape.loop_instructions
            or not rates.sm_clock_mhz):
        return 0.0
    return shape.loop_instructions * DEPENDENT_ISSUE_CYCLES * 1e3 / rates.sm_clock_mhz


def round_trips(shape: KernelShape) -> float:
    """Round trips a warp waits for per iteration: its issue schedule's stops (one unit of
    latency for every load, ``sass.issue_order``) where the shape has one, the declared
    ``rounds_per_iteration`` otherwise."""
    if shape.issue_schedule is None or shape.staged:
        return float(shape.rounds_per_iteration)
    stops = shape.issue_schedule.stops()
    return stops.stream_stops + stops.gather_stops


def escape_share(shape: KernelShape) -> float:
    """The declared share of iterations that wait for an escape column, for the largest
    declared iteration size not above the shape's ``nnz_per_iteration`` (the smallest size
    when all are above it); 0 when none is declared (``kernel_shape.escape_iteration_share``,
    which the issue term reads too)."""
    return escape_iteration_share(shape)


def predict_spmv(indptr: np.ndarray, indices: np.ndarray, cols: int, traffic: Traffic,
                 shape: KernelShape, rates: DeviceRates, *, flushed: bool,
                 overhead_ms: float | None = None, value_bytes: int = 4,
                 xg: XGather | None = None) -> ModelPrediction:
    """The predicted time of one SpMV case with every term (module docstring)."""
    nnz = int(indptr[-1]) if len(indptr) else 0
    streams = traffic.total_bytes - traffic.x_bytes
    xg = xg or _x_gathers(indptr, indices, cols, shape, rates, value_bytes)
    writeback = flush_writeback(rates, streams + xg.dram_bytes) if flushed else 0.0
    per_sm = resident_blocks(shape, rates.max_threads_per_sm, rates.max_blocks_per_sm,
                             registers_per_sm=rates.registers_per_sm,
                             smem_per_sm=rates.shared_mem_per_sm_bytes)
    sm = sm_work(indptr, shape, rates)
    refetch, refetch_dram = _refetches(indptr, traffic, shape, rates,
                                       streams + xg.dram_bytes)
    # throughput: what fits of the call's data is still in the L2 (model.throughput)
    bandwidth = [warm_dram_term(_dram_term(streams + writeback, xg, rates, writeback,
                                           refetch_dram), streams + xg.dram_bytes, rates)]
    if rates.l2_bw_gb_s:
        bandwidth.append(_l2_term(streams, xg, rates, sm.spill_bytes, refetch,
                                  onchip_fill_bytes(shape, cols, value_bytes)))
    stations = bandwidth + ([sm.term] if sm.term is not None else [])
    # where the loop's dependent loads find their data (model.residency)
    trips = load_latencies(rates, shape, streams + xg.dram_bytes,
                           max(traffic.values_bytes, traffic.indices_bytes) / max(1, nnz))
    t_iter, x_round = iteration_ns(shape, rates, xg, trips)
    t_loads = iteration_ns(shape, rates, xg, trips, issue=False)[0]   # its round trips alone
    if shape.row_windows:   # a CSR lane's short windows are not main-loop iterations
        # (each one stream and one x round, model.csr_windows: in units of t_iter)
        iters = window_block_iterations(indptr, shape,
                                        (trips.stream_ns + x_round) / max(t_iter, 1e-9))
    else:
        iters = block_iterations(indptr, shape)
    setup_ns = shape.setup_rounds * trips.stream_ns
    latency, memory, queue = _loop_terms(iters, t_iter, shape, rates, per_sm, stations,
                                         setup_ns)
    longest = float(iters.max()) if iters.size else 0.0
    lines = longest_block_wavefronts(indptr, indices, shape, value_bytes)
    terms = [*stations, latency, memory,
             l1_bound_block(longest_block(longest, setup_ns, t_iter,
                                          t_iter + sum(queue.residence_s.values()) * 1e9,
                                          memory.time_ms * 1e6),
                            lines, longest, setup_ns, t_iter, rates),
             PredictionTerm("compute", traffic.flops / (rates.fp32_gflops * 1e6),
                            f"{traffic.flops:,} flops / {rates.fp32_gflops:,.0f} GFLOP/s")]
    overhead, overhead_src = _overhead(shape, rates, overhead_ms, max(0, len(indptr) - 1))
    terms.append(PredictionTerm("overhead", overhead, overhead_src))
    bound = max((t for t in terms if t.name in BINDING_TERMS), key=lambda t: t.time_ms)
    limiter = queue.dominant if bound.name == "memory" else bound.name
    per_warp_iter = 32 * shape.nnz_per_iteration * streams / max(1, nnz)
    rounds = round_trips(shape)
    inputs = {
        "dram_bytes": streams + xg.dram_bytes + writeback + refetch_dram * SECTOR_BYTES,
        "l2_bytes_requested": streams + (xg.l2_requests + refetch) * SECTOR_BYTES,
        "refetched_sectors": refetch, "refetched_dram_sectors": refetch_dram,
        "x_l2_requests": xg.l2_requests, "x_dram_bytes": xg.dram_bytes,
        "x_l2_hit_rate": xg.l2_hit_rate, "flush_writeback_bytes": writeback,
        "resident_warps_per_sm": float(per_sm * shape.warps_per_block),
        "blocks": float(iters.size), "customers": float(queue.customers),
        "iteration_ns": t_iter, "issue_path_ns": t_iter - t_loads,
        "x_round_ns": x_round, "latency_ns": rates.dram_latency_ns,
        "stream_round_ns": trips.stream_ns,
        "loaded_iteration_ns": queue.cycle_s * 1e9,
        # where one loaded iteration goes: each station's residence and the round trips
        # (model.term_labels names the memory system's leading part from them)
        **{f"residence_ns_{k}": r * 1e9 for k, r in queue.residence_s.items()},
        "round_trips_ns": queue.delay_s * 1e9,
        "rounds_per_iteration": rounds,
        "warp_instructions": sm.instructions, "spill_bytes": sm.spill_bytes,
        "bytes_in_flight_per_warp": per_warp_iter / max(1.0, rounds),
        # Little's law with this kernel's bytes per warp per iteration in place of the seed's
        # one 128-byte line (0 when nothing streams)
        "required_warps_per_sm": warps_per_sm_required(
            rates.dram_bw_gb_s, t_iter, rates.sm_count,
            line_bytes=per_warp_iter) if per_warp_iter > 0 else 0.0,
    }
    # the floor counts the write-back only as measured (a floor must hold: unmeasured, none)
    floor = format_floor(indptr, indices, cols, traffic, rates, value_bytes,
                         writeback if rates.flush_writeback_share is not None else 0.0)
    if floor is not None:
        inputs.update(gather_floor_ms=floor.floor_ms, gather_floor_l2_ms=floor.l2_ms,
                      gather_floor_dram_ms=floor.dram_ms,
                      gather_floor_x_requests=floor.x_requests,
                      gather_floor_hot_share=floor.hot_share,
                      gather_floor_fill_sectors=floor.fill_sectors)
    floor_note = ((f"memory floor of this format (model.gathers): {floor.floor_ms * 1e3:,.1f} us"
                   f" ({floor.binding}); {floor.formula}",) if floor is not None else ())
    return ModelPrediction(
        predicted_ms=overhead + bound.time_ms, limiter=limiter, terms=tuple(terms),
        inputs=inputs, kernel=f"{traffic.format}, {shape.label}", staged=shape.staged,
        assumptions=(_assumptions(shape, rates, xg, flushed) + (trips.source,) + floor_note
                     + overhead_assumptions(rates, shape.library, shape.launches)
                     + throughput_assumption(rates)))


def longest_block(iterations: int, setup_ns: float, t_iter: float, loaded_ns: float,
                  busy_ns: float) -> PredictionTerm:
    """The imbalance term: the longest block runs beside the rest of the kernel for the memory
    term's time ``busy_ns``, its iterations taking the loaded ``loaded_ns`` each, then alone at
    the unloaded ``t_iter``::

        k    = min(iterations, busy / loaded)       (iterations done while the rest runs)
        time = setup + k x loaded + (iterations - k) x t_iter

    Hand check: 100 iterations, setup 300 ns, t_iter 500 ns, loaded 800 ns, busy 40 us ->
    k = 50: 300 + 50 x 800 + 50 x 500 = 65.3 us (65.3 us, not the unloaded 50.3 us)."""
    loaded_ns = max(loaded_ns, t_iter)
    shared = min(float(iterations), busy_ns / loaded_ns) if loaded_ns > 0 else 0.0
    alone = iterations - shared
    time_ns = setup_ns + shared * loaded_ns + alone * t_iter
    return PredictionTerm("imbalance", time_ns * 1e-6,
                          f"longest block: {setup_ns:,.0f} ns setup + {shared:,.0f} iterations "
                          f"x {loaded_ns:,.0f} ns (loaded, while the rest runs) + "
                          f"{alone:,.0f} x {t_iter:,.0f} ns (alone)")


def l1_bound_block(block: PredictionTerm, lines: BlockWavefronts | None, iterations: float,
                   setup_ns: float, t_iter: float, rates: DeviceRates) -> PredictionTerm:
    """The imbalance term at least the longest block's time with its gathers' lines through
    its SM's L1 (``model.l1_wavefronts``): its ``n`` warps are customers of a closed network,
    each of its ``iterations`` a round trip ``t_iter`` (delay) and the iteration's share of
    the block's W lines at one a cycle (one queue), solved exactly by MVA::

        D         = W / (n x iterations) / SM clock
        X         = mva({l1: D}, t_iter, n)            (warp-iterations per second)
        imbalance = max(longest block, setup + n x iterations / X)

    With no lines (D = 0) the block walks at t_iter (the round trips alone); with many, at the
    pipe's W / clock. ``block`` unchanged without the lines or a clock. Hand check: one warp,
    4 iterations, W = 2,400 lines at 1,200 MHz (D = 500 ns), t_iter 500 ns, setup 100 ns ->
    X = 1 / 1,000 ns, 100 + 4 x 1,000 = 4,100 ns."""
    if lines is None or not rates.sm_clock_mhz or lines.wavefronts <= 0 or iterations <= 0:
        return block
    cycles = lines.warps * iterations
    demand_s = lines.time_ns(rates.sm_clock_mhz) / cycles * 1e-9
    queue = mva({"l1": demand_s}, t_iter * 1e-9, lines.warps)
    time_ms = setup_ns * 1e-6 + cycles / queue.throughput_per_s * 1e3
    if time_ms <= block.time_ms:
        return block
    return PredictionTerm("imbalance", time_ms,
                          f"longest block, its x gathers through its SM's L1: {setup_ns:,.0f} ns "
                          f"setup + {lines.warps} warps x {iterations:,.0f} iterations / X = "
                          f"{queue.throughput_per_s / 1e9:,.3f} G/s (MVA: {t_iter:,.0f} ns round "
                          f"trips and {lines.wavefronts:,.0f} lines, "
                          f"{lines.lines_per_gather:.1f} a gather, at one a cycle of "
                          f"{rates.sm_clock_mhz:,.0f} MHz), above the round trips' "
                          f"{block.time_ms * 1e3:,.2f} us")


def flush_writeback(rates: DeviceRates, fetched_bytes: float) -> float:
    """Bytes of DRAM time the L2 flush's dirty lines cost a kernel that brings in
    ``fetched_bytes``::

        write-back = min(L2, fetched) x share

    share: the measured ``flush_writeback_share``, 1 (every evicted dirty byte written back
    inside the kernel's time) when not measured. Hand check: L2 50 MB, 80 MB fetched, share
    0.4 -> 20 MB."""
    share = 1.0 if rates.flush_writeback_share is None else rates.flush_writeback_share
    return min(rates.l2_bytes, fetched_bytes) * share


def format_floor(indptr, indices, cols: int, traffic: Traffic, rates: DeviceRates,
                 value_bytes: int = 4, writeback_bytes: float = 0.0) -> GatherFloor | None:
    """The memory floor of the format that declared ``traffic`` (``model.gathers``): its
    streams, x once, the flush write-back given (the measured share only), one launch, the
    DRAM + L2 latency chain, and the fewest x sector requests with one SM's shared memory on
    chip, its fill charged at the L2 bandwidth; None without a measured or datasheet L2
    bandwidth. A fill sector costs ``fill_cost`` gather requests' time::

        fill_cost = gather rate / (L2 bandwidth / 32 B)   (1 without a measured gather rate)"""
    if not rates.l2_bw_gb_s:
        return None
    capacity = rates.shared_mem_per_sm_bytes // max(1, value_bytes)
    fill_cost = (rates.l2_gather_gsectors_s * 1e9 / l2_sector_rate(rates.l2_bw_gb_s)
                 if rates.l2_gather_gsectors_s else 1.0)
    req = floor_requests(indptr, indices, cols=cols, capacity_entries=capacity,
                         sms=rates.sm_count, fill_cost=fill_cost, value_bytes=value_bytes)
    return gather_floor(traffic.total_bytes - traffic.x_bytes, traffic.x_bytes, req.requests,
                        hot=req.hot_share, capacity_entries=capacity,
                        strategy=req.strategy, dram_bw_gb_s=rates.dram_bw_gb_s,
                        l2_bw_gb_s=rates.l2_bw_gb_s,
                        gather_gsectors_s=rates.l2_gather_gsectors_s,
                        writeback_bytes=writeback_bytes,
                        launch_ms=call_overhead_us(rates, 1)[0] * 1e-3,
                        chain_ms=(rates.dram_latency_ns + (rates.l2_latency_ns or 0.0)) * 1e-6,
                        fill_sectors=req.fill_sectors)


def _x_gathers(indptr, indices, cols: int, shape: KernelShape,
               rates: DeviceRates, value_bytes: int) -> XGather:
    """The x-gather model under the kernel's lane mapping. Gathers through L1 cost the L2 the
    requests each SM's L1 misses across the blocks it runs, at the capacity the launch's
    shared-memory carveout leaves (``model.l1_cache``); on a device whose unified L1 is not
    known, a block's x sectors are kept in L1 while it runs, without limit.

    The streams take no L2 capacity from x (0 B per nonzero in the reuse model): they are read
    once, and the L2 evicts such lines before lines that were hit again (x). The own kernels
    ask for it (``HINT`` 1: ``L2::evict_first`` on every stream load); cuSPARSE does not, yet
    ncu reads 853 MB from DRAM for its csrmv on the cage15 analog, its streams and rows (about
    835 MB) plus x's compulsory 21 MB, where an LRU L2 that the streams flow through would miss
    x 6.7 times over (990 MB; results/h200/profile/exports). Only x's own reuse distances then
    decide its misses (x larger than the L2)."""
    nnz = int(indptr[-1]) if len(indptr) else 0
    rows = shape.decomposition == "rows"
    per_block = (shape.block_threads // shape.threads_per_row if rows
                 else math.ceil(nnz / max(1, shape.grid_blocks)))
    l1 = None
    if shape.x_in_l1:
        resident = resident_blocks(shape, rates.max_threads_per_sm, rates.max_blocks_per_sm,
                                   registers_per_sm=rates.registers_per_sm,
                                   smem_per_sm=rates.shared_mem_per_sm_bytes)
        sizes = l1_data_bytes(rates.compute_capability, shape.shared_bytes, resident)
        if sizes is not None:
            l1 = (L1Cache(bytes=sizes[0], sms=rates.sm_count, resident_blocks=resident),
                  per_block)
    return x_gather(indptr, indices, cols=cols, l2_bytes=rates.l2_bytes,
                    stream_bytes_per_nnz=0.0,
                    threads_per_row=shape.threads_per_row if rows else 0,
                    value_bytes=value_bytes, onchip_entries=shape.onchip_x_entries,
                    l1_block=per_block if shape.x_in_l1 else 0, l1=l1)


def _loop_terms(iters: np.ndarray, t_iter: float, shape: KernelShape, rates: DeviceRates,
                per_sm: int, bandwidth: list[PredictionTerm], setup_ns: float):
    """(latency term, memory term, MVA result): the blocks' loop iterations against
    the unloaded latency alone (Little's law), and through the DRAM and L2 queues (MVA); each
    block's setup takes ``setup_ns`` (its setup rounds x a stream round).

    A grid of more blocks than slots (``blocks = q x slots + r``, 0 < r < slots) ends with a
    partial round: its last ``r`` blocks in launch order run at their own concurrency, not
    the full one (pwtk's 852 blocks on 792 slots: a tail of 60)::

        memory = head iterations / X(all blocks) + tail iterations / X(r blocks)
    """
    slots = rates.sm_count * per_sm
    cycles = max(1.0, float(iters.sum()))
    demands = {t.name: t.time_ms * 1e-3 / cycles for t in bandwidth}
    block_ns = setup_ns + iters * t_iter
    waves = math.ceil(iters.size / max(1, slots))
    latency = PredictionTerm("latency", wave_makespan(block_ns, slots) * 1e-6,
                             f"{iters.size:,} blocks ({shape.setup_rounds} setup round(s) + "
                             f"{int(iters.sum()):,} block-iterations x {t_iter:,.0f} ns in all) "
                             f"dispatched in launch order to {rates.sm_count} SMs x {per_sm} "
                             f"slots ({waves:,} round(s)): the last block's finish")
    delay = _delay_ns(t_iter, iters, setup_ns)
    blocks = int(iters.size)
    queue = per_sm_mva(demands, delay * 1e-9, rates.sm_count, per_sm, blocks)
    utilization = queue.throughput_per_s * demands.get("dram", 0.0)
    stations = ", ".join(demands)
    tail = blocks % slots if blocks > slots else 0
    time_s, tail_how = cycles / queue.throughput_per_s, ""
    if tail:
        # the partial last round: fewer customers, so each iteration waits less in the queues
        # but fewer iterations are in flight
        alone = per_sm_mva(demands, delay * 1e-9, rates.sm_count, per_sm, tail)
        head = float(iters[:blocks - tail].sum())
        tail_iters = float(iters[blocks - tail:].sum())
        time_s = head / queue.throughput_per_s + tail_iters / alone.throughput_per_s
        tail_how = (f"; the last {tail:,} blocks (a partial round) at their own X = "
                    f"{alone.throughput_per_s / 1e9:,.3f} G iterations/s")
    memory = PredictionTerm("memory", time_s * 1e3,
                            f"{int(cycles):,} block-iterations / X = "
                            f"{queue.throughput_per_s / 1e9:,.3f} G iterations/s (MVA per SM: "
                            f"{queue.customers:,} resident blocks through {stations} and "
                            f"{delay:,.0f} ns of round trips per iteration; "
                            f"{100 * utilization:.0f} % DRAM utilization){tail_how}")
    return latency, memory, queue


def per_sm_mva(demands_s: dict[str, float], delay_s: float, sms: int, per_sm: int,
               blocks: int, local: tuple[str, ...] = ("issue",)) -> MvaResult:
    """The kernel's closed network as ``active`` identical SMs (symmetric decomposition): each
    SM loops its own ``n`` resident blocks through its own instruction issue (``issue``) and
    its ``1 / active`` share of every shared station (DRAM, L2), solved exactly by
    :func:`~sparsescope.model.queueing.mva`::

        active = min(SMs, blocks),   n = min(resident blocks per SM, ceil(blocks / active))
        D_issue' = D_issue x SMs      (the per-block-iteration demand on one SM's schedulers;
                                       D_issue is the whole GPU's)
        D_k'     = D_k x active       (one SM's share of a shared station)
        X        = active x X_SM(n; D', Z)

    A block waits for all of its loads, so a busy memory system delays it by its slowest
    request, not the average one: the SMs gain little from the idle moments of the others
    (statistical multiplexing), and each is modelled with its own share. Hand check: 2 SMs,
    4 blocks of one iteration each, 2 resident per SM, D_dram = 0.5, Z = 1, no issue: each SM
    sees D' = 1, n = 2: X_SM(2) = 0.8 (the :func:`mva` hand check), X = 1.6.
    ``local``: the stations each SM has its own of, scaled like ``issue`` (the tensor cores
    too, for a tensor-core kernel).
    """
    active = max(1, min(sms, blocks))
    n = max(1, min(per_sm, math.ceil(blocks / active)))
    scaled = {k: d * (sms if k in local else active) for k, d in demands_s.items()}
    one = mva(scaled, delay_s, n)
    return MvaResult(customers=n * active, throughput_per_s=one.throughput_per_s * active,
                     residence_s=one.residence_s, delay_s=delay_s)


def _delay_ns(t_iter: float, iters: np.ndarray, setup_ns: float) -> float:
    """Round trips per block-iteration: t_iter plus each block's setup spread over its
    iterations."""
    return t_iter + iters.size * setup_ns / max(1.0, float(iters.sum()))


def _sector_time_ms(sectors: float, rate_gsectors_s: float | None, bw_gb_s: float) -> float:
    """sectors / measured random-gather rate, or sectors x 32 B / bandwidth without one."""
    if rate_gsectors_s:
        return sectors / (rate_gsectors_s * 1e6)
    return sectors * SECTOR_BYTES / (bw_gb_s * 1e6)


def _refetches(indptr, traffic: Traffic, shape: KernelShape, rates: DeviceRates,
               footprint: float) -> tuple[float, float]:
    """(sectors a row-window kernel requests again from the L2, the part DRAM serves)
    (``model.row_windows``): DRAM serves them all for one thread a row when the streams and x
    (``footprint`` bytes) do not fit in the L2, none otherwise."""
    nnz = int(indptr[-1]) if len(indptr) else 0
    if not shape.row_windows or nnz == 0:
        return 0.0, 0.0
    again = csr_refetches(indptr, shape.threads_per_row, shape.row_windows,
                          traffic.values_bytes / nnz, traffic.indices_bytes / nnz)
    far = shape.threads_per_row == 1 and footprint > rates.l2_bytes
    return again, (again if far else 0.0)


def _dram_term(stream_bytes: float, xg: XGather, rates: DeviceRates,
               writeback: float, refetch: float = 0.0) -> PredictionTerm:
    """streams / DRAM bandwidth + lone sectors (x misses, window refetches) / gather rate."""
    stream_ms = stream_bytes / (rates.dram_bw_gb_s * 1e6)
    lone = xg.dram_sectors + refetch
    gathers_ms = _sector_time_ms(lone, rates.dram_gather_gsectors_s, rates.dram_bw_gb_s)
    rate = (f"{rates.dram_gather_gsectors_s:,.1f} G sectors/s" if rates.dram_gather_gsectors_s
            else f"32 B at {rates.dram_bw_gb_s:,.0f} GB/s")
    again = f" + {refetch:,.0f} refetched stream sectors" if refetch else ""
    return PredictionTerm("dram", stream_ms + gathers_ms,
                          f"{stream_bytes:,.0f} B streams (flush write-back {writeback:,.0f} B)"
                          f" / {rates.dram_bw_gb_s:,.0f} GB/s + ({xg.dram_sectors:,.0f} x "
                          f"sectors missing L2{again}) / {rate}")


def onchip_fill_bytes(shape: KernelShape, cols: int, value_bytes: int) -> float:
    """L2 bytes that fill the kernel's on-chip copies of ``x[0, entries)`` once a call::

        copies x ceil(min(entries, cols) x value bytes / 32) x 32

    Hand check: 8,192 entries of 4 bytes in 1,056 persistent blocks: 1,056 x 1,024 sectors =
    34.6 MB, 4.1 us at 8,469 GB/s."""
    entries = min(int(shape.onchip_x_entries), int(cols))
    sectors = -(-entries * int(value_bytes) // SECTOR_BYTES)
    return float(shape.onchip_x_copies * sectors * SECTOR_BYTES)


def _l2_term(stream_bytes: float, xg: XGather, rates: DeviceRates,
             spills: float = 0.0, refetch: float = 0.0, fill: float = 0.0) -> PredictionTerm:
    """(streams + on-chip x fill) / L2 bandwidth + spill stores / L2 write bandwidth + sector
    requests (x, window refetches) / L2 gather rate."""
    assert rates.l2_bw_gb_s
    stream_ms = (stream_bytes + fill) / (rates.l2_bw_gb_s * 1e6)
    write_bw = rates.l2_write_bw_gb_s or rates.l2_bw_gb_s
    stream_ms += spills / (write_bw * 1e6)
    lone = xg.l2_requests + refetch
    gathers_ms = _sector_time_ms(lone, rates.l2_gather_gsectors_s, rates.l2_bw_gb_s)
    rate = (f"{rates.l2_gather_gsectors_s:,.1f} G sectors/s" if rates.l2_gather_gsectors_s
            else f"32 B at {rates.l2_bw_gb_s:,.0f} GB/s")
    stored = f" + {spills:,.0f} B spill stores / {write_bw:,.0f} GB/s" if spills else ""
    again = f" + {refetch:,.0f} refetched stream sectors" if refetch else ""
    filled = f" + {fill:,.0f} B on-chip x fill" if fill else ""
    return PredictionTerm("l2", stream_ms + gathers_ms,
                          f"{stream_bytes:,.0f} B streams{filled} / {rates.l2_bw_gb_s:,.0f} GB/s"
                          f"{stored} + ({xg.l2_requests:,.0f} x sector requests{again}) / "
                          f"{rate}")


def _overhead(shape: KernelShape, rates: DeviceRates,
              overhead_ms: float | None, rows: int) -> tuple[float, str]:
    if overhead_ms is not None:
        return overhead_ms, "measured: this backend's call on a tiny matrix on this device"
    us, how = call_overhead_us(rates, shape.launches, shape.library, rows=rows,
                               row_search=shape.row_search,
                               programmatic=shape.programmatic_launch)
    if shape.fixup:
        chain_ns = rates.dram_latency_ns + (rates.l2_latency_ns or rates.dram_latency_ns)
        us += chain_ns * 1e-3
        how += (f" + spmv_fixup's own dependent loads: split rows from DRAM, then the partial "
                f"slots from L2 ({chain_ns:,.0f} ns)")
    if shape.finish_split:
        l2_ns = rates.l2_latency_ns or rates.dram_latency_ns
        chain_ns = 2 * rates.dram_latency_ns + 3 * l2_ns
        us += chain_ns * 1e-3
        how += (f" + the finishing tile's chain after its work: its partial's fence, the split "
                f"row's slot and range from DRAM, the counter atomic and the partials from L2 "
                f"(2 x DRAM + 3 x L2 latency, {chain_ns:,.0f} ns)")
    return us * 1e-3, how


def _assumptions(shape: KernelShape, rates: DeviceRates, xg: XGather,
                 flushed: bool) -> tuple[str, ...]:
    out = [f"kernel shape {shape.source}",
           f"DRAM bandwidth: {rates.sources.get('dram_bw')}; latency: "
           f"{rates.sources.get('dram_latency')}; L2 latency: {rates.sources.get('l2_latency')}",
           f"x gathers: {xg.method}"]
    if flushed:
        out.append("L2 flushed before the call: its dirty lines are written back while the "
                   "kernel runs")
    return tuple(out)
