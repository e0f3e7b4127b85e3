"""Memory-level parallelism read from SASS: the real H200 listings (values checked by hand against
the listings) and small hand-written ones for the cases the fixtures lack (no loop, LDGSTS)."""

from __future__ import annotations

import pytest

from sparsescope.sass.analysis import analyse_listing
from sparsescope.sass.instructions import parse_instruction
from sparsescope.sass.listing import KernelListing, read_listing
from sparsescope.sass.mlp import KernelMLP, kernel_mlp, listing_mlp


def _kernel(lines: list[str], name: str = "snippet") -> KernelListing:
    return KernelListing(name, "sm_90", tuple(parse_instruction(16 * k, t)
                                              for k, t in enumerate(lines)), "cuobjdump")


def _figures(m: KernelMLP) -> tuple:
    return (m.loop_found, m.loads_per_iteration, m.independent_batch, m.batch_bytes_per_thread,
            m.rounds_per_iteration, m.bytes_per_thread_per_iteration,
            m.bytes_in_flight_per_thread, m.staged)


@pytest.fixture(scope="module")
def spmv(h200_fixtures):
    return {fmt: listing_mlp((h200_fixtures / f"spmv_kernels_sm90.{fmt}").read_text())
            for fmt in ("cuobjdump.sass", "nvdisasm.txt")}


def test_scalar_csr_unrolled_16x(spmv):
    m = spmv["cuobjdump.sass"]["spmv_csr_scalar"]
    assert m.kernel == "spmv_csr_scalar" and m.loop_found
    # hot loop 0x4b0..0xa30 (BRA back at 0xa30), unrolled 16x: 16 col (LDG [R14.64-0x8 ..
    # +0x34]), 16 val ([R12.64-0x8 .. +0x34]), 16 x gathers ([Rn.64] after IMAD.WIDE col, 0x4,
    # R10), every one LDG.E.CONSTANT of 4 bytes. rowptr (0x0b0, 0x0c0) is outside the loop.
    assert m.loads_per_iteration == 48 and m.bytes_per_thread_per_iteration == 192
    # batches close at the first use of a member: 12 loads 0x4b0-0x570 (closed by IMAD.WIDE
    # R28, R29 at 0x580), 9 loads 0x590-0x650 (FFMA at 0x660 reads R29 of 0x590), then 13 loads
    # 0x680-0x7b0 (FFMA at 0x7c0 reads R22 of 0x690), 13 more 0x7d0-0x920, 1 at 0x940
    assert m.independent_batch == 13 and m.batch_bytes_per_thread == 52
    assert m.evidence[0] == "0x0680 LDG.E.CONSTANT" and m.evidence[-1] == "0x07b0 LDG.E.CONSTANT"
    assert [e.split()[0] for e in m.evidence] == [
        "0x0680", "0x0690", "0x06c0", "0x06d0", "0x0700", "0x0710", "0x0720", "0x0750",
        "0x0770", "0x0780", "0x0790", "0x07a0", "0x07b0"]
    # col -> x: two dependent round trips per iteration; 192 / 2 bytes in flight per thread
    assert m.rounds_per_iteration == 2 and m.bytes_in_flight_per_thread == 96.0
    assert not m.staged


def test_vector8_unrolled_4x(spmv):
    m = spmv["cuobjdump.sass"]["spmv_csr_vector8"]
    # hot loop 0x210..0x3e0: col at 0x210/0x230/0x240/0x250 ([R2.64+0x0..0x60], stride 8
    # elements), x at 0x280/0x2a0/0x2e0/0x320, val at 0x2f0/0x300/0x310/0x330
    assert (m.loads_per_iteration, m.bytes_per_thread_per_iteration) == (12, 48)
    # the 4 col loads close at 0x260 (IMAD.WIDE R8, R9); then the 4 x and 4 val loads are all
    # issued before the first FFMA at 0x380
    assert (m.independent_batch, m.batch_bytes_per_thread) == (8, 32)
    assert [e.split()[0] for e in m.evidence] == [
        "0x0280", "0x02a0", "0x02e0", "0x02f0", "0x0300", "0x0310", "0x0320", "0x0330"]
    assert m.rounds_per_iteration == 2 and m.bytes_in_flight_per_thread == 24.0


def test_nvdisasm_and_cuobjdump_agree(spmv):
    cu, nv = spmv["cuobjdump.sass"], spmv["nvdisasm.txt"]
    assert set(cu) == set(nv) == {"spmv_csr_scalar", "spmv_csr_vector8"}
    for name in cu:
        assert cu[name] == nv[name]


def test_standalone_scalar_device_build(h200_fixtures):
    (m,) = listing_mlp((h200_fixtures / "scalar_device_cuobjdump.sass").read_text()).values()
    # the same loop as spmv_csr_scalar, 0x10 earlier (0x4a0..0xa20): largest batch 0x670-0x7a0
    assert _figures(m) == (True, 48, 13, 52, 2, 192, 96.0, False)
    assert m.evidence[0].startswith("0x0670")


def test_analysis_and_listing_give_the_same(h200_fixtures):
    vec = read_listing(h200_fixtures / "spmv_kernels_sm90.cuobjdump.sass")[0]
    assert kernel_mlp(analyse_listing(vec)) == kernel_mlp(vec)


def test_an_analysis_hands_its_def_use_to_the_mlp(h200_fixtures, monkeypatch):
    """kernel_mlp of an analysis walks the kernel's def-use once (the analysis's), and gives
    what it gives when it walks it again itself."""
    from dataclasses import replace

    from sparsescope.sass import analysis, dataflow, mlp

    source = (h200_fixtures / "spmv_kernels.cu").read_text()
    path = h200_fixtures / "spmv_kernels_sm90.nvdisasm.txt"
    walks = []
    real = dataflow.reaching_definitions

    def counted(ins, cfg):
        walks.append(len(ins))
        return real(ins, cfg)

    monkeypatch.setattr(analysis, "reaching_definitions", counted)
    monkeypatch.setattr(mlp, "reaching_definitions", counted)
    for listing in read_listing(path):
        walks.clear()
        found = analyse_listing(listing, source=source)
        handed = kernel_mlp(found, gather_param="x")
        assert walks == [len(listing.instructions)]
        again = kernel_mlp(replace(found, defuse=None, raw_chains=None), gather_param="x")
        assert len(walks) == 2 and again == handed and handed.gathers_per_iteration > 0


def test_kernel_without_loop():
    m = kernel_mlp(_kernel([
        "S2R R0, SR_TID.X", "LDC.64 R2, c[0x0][0x218]", "LDC.64 R4, c[0x0][0x220]",
        "LDC.64 R6, c[0x0][0x230]",
        "IMAD.WIDE R2, R0, 0x4, R2", "LDG.E R9, desc[UR4][R2.64]",       # rowptr[i]
        "LDG.E.U16 R10, desc[UR4][R2.64+0x8]",                           # independent, 2 B
        "IMAD.WIDE R4, R9, 0x4, R4", "LDG.E R11, desc[UR4][R4.64]",      # col[rowptr[i]]
        "IMAD.WIDE R6, R11, 0x8, R6", "LDG.E.64 R12, desc[UR4][R6.64]",  # x[col[..]], 8 B
        "STG.E.64 desc[UR4][R2.64], R12", "EXIT", "BRA 0xd0"]))
    assert not m.loop_found
    # batches: {rowptr, U16} (closed by the IMAD.WIDE reading R9), {col}, {x}
    assert (m.loads_per_iteration, m.independent_batch, m.batch_bytes_per_thread) == (4, 2, 6)
    assert m.evidence == ("0x0050 LDG.E", "0x0060 LDG.E.U16")
    # rowptr -> col -> x: three dependent round trips
    assert m.rounds_per_iteration == 3 and m.bytes_per_thread_per_iteration == 18
    assert m.bytes_in_flight_per_thread == 6.0


def test_ldgsts_staged_loop():
    m = kernel_mlp(_kernel([
        "S2R R0, SR_TID.X", "LDC.64 R2, c[0x0][0x220]", "IMAD.WIDE R2, R0, 0x10, R2",
        "MOV R6, RZ",
        "LDGSTS.E.BYPASS.LTC128B.128 [R5], desc[UR4][R2.64]",             # 0x40: loop header
        "LDGSTS.E.BYPASS.LTC128B.128 [R5+0x1000], desc[UR4][R2.64+0x1000]",
        "LDGDEPBAR", "DEPBAR.LE SB0, 0x0", "BAR.SYNC.DEFER_BLOCKING 0x0",
        "LDS R7, [R5]", "IMAD.WIDE R8, R7, 0x4, R10", "LDG.E R9, desc[UR4][R8.64]",
        "FADD R12, R12, R9", "IADD3 R2, P0, R2, 0x2000, RZ", "IADD3.X R3, RZ, R3, RZ, P0, !PT",
        "IADD3 R6, R6, 0x1, RZ", "ISETP.NE.AND P1, PT, R6, 0x8, PT", "@P1 BRA 0x40", "EXIT"]))
    assert m.loop_found and m.staged
    # the two 16-byte LDGSTS form a batch closed by the DEPBAR wait (they write no register)
    assert (m.loads_per_iteration, m.independent_batch, m.batch_bytes_per_thread) == (3, 2, 32)
    # LDGSTS -> LDS -> LDG x passes through shared memory: not seen, one round (documented)
    assert m.rounds_per_iteration == 1 and m.bytes_per_thread_per_iteration == 36


def test_pointer_chase_is_one_round_per_iteration():
    m = kernel_mlp(_kernel([
        "LDC.64 R2, c[0x0][0x210]", "LDG.E.64 R2, desc[UR4][R2.64]",       # 0x10: header
        "IADD3 R6, R6, 0x1, RZ", "ISETP.NE.AND P0, PT, R6, 0x8, PT", "@P0 BRA 0x10",
        "STG.E.64 desc[UR4][R4.64], R2", "EXIT"]))
    # the load feeds its own next iteration, not a second round trip within one
    assert _figures(m) == (True, 1, 1, 8, 1, 8, 8.0, False)


def test_seed_000_special_case():
    seed = KernelMLP("seed 000", True, 2, 1, 4, 2, 4, False, ())
    assert seed.bytes_in_flight_per_thread == 2.0  # 128 B line per warp = 4 B/thread, halved


def test_instruction_counts_of_the_real_listings(spmv, h200_fixtures):
    scalar = spmv["cuobjdump.sass"]["spmv_csr_scalar"]
    # the hot loop 0x4b0..0xa30 is (0xa30 - 0x4b0) / 16 + 1 = 89 instructions; vector8's
    # 0x210..0x3e0 is 30
    assert scalar.loop_instructions == 89
    assert spmv["cuobjdump.sass"]["spmv_csr_vector8"].loop_instructions == 30
    # its remainder loop and the rest: every reachable instruction but the NOP padding counted
    # once, in exactly one of the three
    assert scalar.remainder_instructions == 17
    (listing,) = [k for k in read_listing(h200_fixtures / "spmv_kernels_sm90.cuobjdump.sass")
                  if k.name == "spmv_csr_scalar"]
    real = sum(1 for i in listing.instructions if i.opcode != "NOP")
    counted = (scalar.loop_instructions + scalar.remainder_instructions
               + scalar.other_instructions)
    assert counted <= real and real - counted < 10   # unreachable code after EXIT left out
    # no register spills in either kernel
    assert (scalar.local_bytes_per_iteration, scalar.local_frame_bytes) == (0, 0)


def test_spills_in_the_loop_are_local_bytes_per_iteration():
    m = kernel_mlp(_kernel([
        "S2R R0, SR_TID.X", "MOV R6, RZ",
        "LDG.E R9, desc[UR4][R2.64]",                                    # 0x20: loop header
        "STL.64 [R1+0x10], R8", "STL [R1+0x4], R9",                      # 8 + 4 B spilled
        "LDL R10, [R1+0x4]",                                             # 4 B refilled
        "FADD R12, R12, R10", "IADD3 R6, R6, 0x1, RZ",
        "ISETP.NE.AND P0, PT, R6, 0x8, PT", "@P0 BRA 0x20",
        "LDL.64 R4, [R1+0x10]", "STG.E desc[UR4][R2.64], R12", "EXIT"]))
    assert m.loop_found
    assert (m.local_bytes_per_iteration, m.local_store_bytes_per_iteration) == (16, 12)
    # the frame: the highest offset + width, 0x10 + 8 = 24 B
    assert m.local_frame_bytes == 24
    # the loop's 8 instructions (0x20..0x90); the 5 outside it (2 before, 3 after)
    assert (m.loop_instructions, m.other_instructions) == (8, 5)
