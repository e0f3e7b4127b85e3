"""The device transposes' time model (``model.transpose``) and its place in the SpMM prediction
(``model.own_spmm``), against hand-computed numbers; the declared instruction count against the
compiled kernel where nvcc is present."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from sparsescope.model.own_spmm import predict_own_spmm, with_transposes_time
from sparsescope.model.predict import DeviceRates
from sparsescope.model.prediction import ModelPrediction, PredictionTerm
from sparsescope.model.spmm_predict import SpmmLaunch, with_transposes
from sparsescope.model.transpose import (
    TILE_WARPS,
    WARP_INSTRUCTIONS_PER_TILE,
    blocks_per_sm,
    transpose_tiles,
    transpose_time,
    transposes_term,
)

#: The H200's datasheet figures of the module docstring's hand check (no L2 rates needed).
HOPPER = DeviceRates(
    name="H", sm_count=132, max_threads_per_sm=2048, max_blocks_per_sm=32, l2_bytes=50 << 20,
    dram_bw_gb_s=4000.0, l2_bw_gb_s=None, dram_latency_ns=300.0, l2_latency_ns=None,
    fp32_gflops=60000.0, dram_gather_gsectors_s=None, l2_gather_gsectors_s=None,
    launch_us=2.5, sm_clock_mhz=1980.0)


def test_tiles_hand_checks():
    assert transpose_tiles(8, 1_000_000) == 31_250
    assert transpose_tiles(1_000_000, 8) == 31_250
    assert transpose_tiles(33, 33) == 4
    assert transpose_tiles(0, 5) == 0
    assert blocks_per_sm(HOPPER) == 8   # 2,048 threads / 256


def test_small_k_transpose_is_issue_bound_hand_check():
    """8 x 1,000,000: 31,250 tiles x 8 warps x 262 instructions / (132 x 4 x 1.98 GHz) =
    62.66 us; its bytes (64 MB at 4 TB/s) would take 16 us."""
    t = transpose_time(8, 1_000_000, 4, HOPPER)
    issue_us = 31_250 * TILE_WARPS * WARP_INSTRUCTIONS_PER_TILE / (132 * 4 * 1.98e9) * 1e6
    assert issue_us == pytest.approx(62.66, abs=0.01)
    assert t.tiles == 31_250 and t.bytes_moved == 64_000_000 and t.binding == "issue"
    assert 1e3 * t.time_ms == pytest.approx(issue_us, rel=0.01)
    assert 1e3 * t.time_ms > 3.9 * 64_000_000 / 4e12 * 1e6


def test_the_tiles_not_the_bytes_set_the_time_at_small_k():
    """k = 8 and k = 32 transposes of a 10^6-row Y have the same tiles and 4x the bytes: on
    the H200 of the committed runs they took 143 and 169 us (both transposes), not 4x."""
    t8, t32 = (transpose_time(1_000_000, k, 4, HOPPER) for k in (8, 32))
    assert t8.tiles == t32.tiles and t32.bytes_moved == 4 * t8.bytes_moved
    assert 1.0 < t32.time_ms / t8.time_ms < 1.5
    # wide tiles at k = 256: both stations near saturation, more than either bound alone
    t256 = transpose_time(1_000_000, 256, 4, HOPPER)
    issue = t256.tiles * TILE_WARPS * WARP_INSTRUCTIONS_PER_TILE / (132 * 4 * 1.98e6)
    dram = t256.bytes_moved / (4000.0 * 1e6)
    assert max(issue, dram) < t256.time_ms < issue + dram


def test_without_a_clock_only_the_bytes_and_the_round_trip_count():
    from dataclasses import replace

    t = transpose_time(1_000_000, 256, 4, replace(HOPPER, sm_clock_mhz=None))
    assert t.binding == "dram"
    assert t.time_ms == pytest.approx(2 * 1_000_000 * 256 * 4 / 4e9, rel=0.01)
    assert transpose_time(0, 8, 4, HOPPER).time_ms == 0.0


def test_transposes_term_sums_both():
    term, times = transposes_term(((8, 1_000_000), (1_000_000, 8)), 4, HOPPER)
    assert term.name == "transposes" and len(times) == 2
    assert term.time_ms == pytest.approx(sum(t.time_ms for t in times))
    assert term.time_ms == pytest.approx(2 * times[0].time_ms)   # the same tiles either way
    assert "31,250 tiles" in term.formula


def _prediction(kernel_us: float, overhead_us: float) -> ModelPrediction:
    return ModelPrediction(
        predicted_ms=(kernel_us + overhead_us) / 1e3, limiter="dram",
        terms=(PredictionTerm("memory", kernel_us / 1e3, "m"),
               PredictionTerm("overhead", overhead_us / 1e3, "o")), kernel="k")


def test_with_transposes_time_adds_the_term_and_names_the_limiter():
    launch = with_transposes(_launch(), rows=1_000_000, cols=1_000_000, k=8)
    t = transposes_term(launch.transposes, 4, HOPPER)[0].time_ms
    short = with_transposes_time(_prediction(10.0, 3.0), launch, HOPPER)
    assert short.predicted_ms == pytest.approx(0.013 + t)
    assert short.limiter == "transposes" and short.term("transposes").time_ms == t
    assert short.inputs["transpose_tiles"] == 62_500
    long = with_transposes_time(_prediction(1000.0, 3.0), launch, HOPPER)
    assert long.limiter == "dram"
    # no transposes, or nothing predicted: unchanged
    assert with_transposes_time(_prediction(10.0, 3.0), _launch(), HOPPER) == \
        _prediction(10.0, 3.0)


def _launch(**fields) -> SpmmLaunch:
    base = dict(kernel="k", slice_ptr=np.array([0, 10, 13, 13]), slices_per_warp=2,
                groups_per_slice=1, slab_cols=8, slabs=1, vec=4, chunks=1, stage_pairs=8,
                batch=4, block_warps=2, max_registers=64, registers_source="test")
    return SpmmLaunch(**{**base, **fields})


def test_predict_own_spmm_runs_the_transposes_after_the_kernel():
    """The column-major call is the row-major kernel's prediction, two launches more and the
    two transposes: nothing of them in the kernel's own terms."""
    from sparsescope.model.call_overhead import overhead_term

    indptr, indices = np.array([0, 10, 13, 13]), np.arange(13) % 5
    row = predict_own_spmm(indptr, indices, 5, 8, _launch(), HOPPER, flushed=False)
    col = predict_own_spmm(indptr, indices, 5, 8, with_transposes(_launch(), 3, 5, 8), HOPPER,
                           flushed=False)
    extra = overhead_term(HOPPER, 3).time_ms - overhead_term(HOPPER, 1).time_ms
    t = col.term("transposes").time_ms
    assert col.predicted_ms == pytest.approx(row.predicted_ms + extra + t)
    assert col.term("dram").time_ms == row.term("dram").time_ms
    assert col.kernel.endswith("+ device transposes")


@pytest.fixture(scope="module")
def transpose_sass():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found")
    from sparsescope.backends._gpu import kernel_source
    from sparsescope.sass.analysis import analyse_source

    def analysis(tmp):
        path = tmp / "transpose.cu"
        path.write_text(kernel_source("transpose.cu") + "\ntemplate __global__ void "
                        "transpose_tile<float>(const float*, float*, const long long, "
                        "const long long);\n")
        return analyse_source(path, arch="sm_90")[0]
    return analysis


def test_declared_instructions_are_the_compiled_kernels_full_tile_path(transpose_sass,
                                                                       tmp_path):
    """A full tile's warp runs every block of the kernel's body but the 64-bit division's
    call, the two one-row remainder loops (a single global access each) and the blocks that
    only lead into them: the count ``WARP_INSTRUCTIONS_PER_TILE`` declares."""
    a = transpose_sass(tmp_path)
    cfg, ins = a.cfg, a.instructions
    body = [b for b in cfg.blocks if b.reachable
            and not any(ins[i].opcode == "RET" for i in range(b.first, b.last + 1))]
    exit_block = max(b.index for b in body if ins[b.last].opcode == "EXIT")
    body = [b for b in body if b.index <= exit_block]

    def accesses(blocks):
        return sum(ins[i].opcode in ("LDG", "STG") for b in blocks
                   for i in range(cfg.blocks[b].first, cfg.blocks[b].last + 1))

    remainder = [lp for lp in cfg.loops if accesses(lp.blocks) == 1]
    headers = {cfg.blocks[lp.blocks[0]].index for lp in remainder}
    skipped = {b for lp in remainder for b in lp.blocks}
    skipped |= {b.index for b in body if b.successors and set(b.successors) <= headers}
    skipped |= {b.index for b in body if any(ins[i].opcode == "CALL"
                                             for i in range(b.first, b.last + 1))}
    assert len(remainder) == 2
    assert sum(b.size for b in body if b.index not in skipped) == WARP_INSTRUCTIONS_PER_TILE
