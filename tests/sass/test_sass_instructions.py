"""Instruction parsing: operands, registers read/written (pairs included), memory attributes."""

from __future__ import annotations

import pytest

from sparsescope.sass.instructions import (
    class_histogram,
    compute_to_memory_ratio,
    parse_instruction,
)


def test_predicated_global_load_with_64bit_address():
    i = parse_instruction(0x5B0, "@!P5 LDG.E R14, desc[UR6][R8.64] ;")
    assert (i.address, i.predicate, i.opcode, i.modifiers) == (0x5B0, "!P5", "LDG", ("E",))
    assert i.regs_written == ("R14",)
    assert set(i.regs_read) == {"P5", "UR6", "R8", "R9"}
    assert (i.mem_space, i.mem_op, i.access_bytes) == ("global", "load", 4)
    assert i.address_regs == ("R8", "R9") and i.address_offset == 0
    assert i.is_global_load and i.is_conditional and i.klass == "LDG"


def test_wide_load_writes_a_pair_and_keeps_cache_hint_and_offset():
    i = parse_instruction(0, "LDG.E.EF.64 R36, desc[UR6][R36.64+0x8]")
    assert i.regs_written == ("R36", "R37")
    assert i.access_bytes == 8 and i.cache_hints == ("EF",) and i.address_offset == 8
    assert parse_instruction(0, "LDG.E.128.CONSTANT R4, desc[UR4][R2.64+-0x10]").regs_written \
        == ("R4", "R5", "R6", "R7")
    assert parse_instruction(0, "LDG.E.128 R4, desc[UR4][R2.64+-0x10]").address_offset == -16


@pytest.mark.parametrize("text, written, read", [
    ("IMAD.WIDE R8, R9, 0x4, R4", ("R8", "R9"), {"R9", "R4", "R5"}),
    ("IMAD.WIDE.U32 R4, R7, 0x4, R2", ("R4", "R5"), {"R7", "R2", "R3"}),
    ("LEA R8, P6, R36, R8, 0x2", ("R8", "P6"), {"R36", "R8"}),
    ("LEA.HI.X R9, R36, R9, R37, 0x2, P6", ("R9",), {"R36", "R9", "R37", "P6"}),
    ("IADD3 R2, P2, R2, 0x80, RZ", ("R2", "P2"), {"R2"}),
    ("IADD3.X R3, RZ, R3, RZ, P2, !PT", ("R3",), {"R3", "P2"}),
    ("ISETP.GE.AND P0, PT, R0, UR4, PT", ("P0",), {"R0", "UR4"}),
    ("SHFL.DOWN P0, R0, R17, 0x1, 0x1e01", ("P0", "R0"), {"R17"}),
    ("LOP3.LUT P1, R10, R4, 0x3, RZ, 0xc0, !PT", ("P1", "R10"), {"R4"}),
    ("VOTE.ANY R0, PT, P0", ("R0",), {"P0"}),
    ("ULDC.64 UR6, c[0x0][0x208]", ("UR6", "UR7"), set()),
    ("CS2R R4, SRZ", ("R4", "R5"), set()),
    ("F2F.F64.F32 R2, R5", ("R2", "R3"), {"R5"}),
    ("DADD R4, R2, -R6", ("R4", "R5"), {"R2", "R3", "R6", "R7"}),
    ("STG.E.64 desc[UR6][R2.64], R4", (), {"UR6", "R2", "R3", "R4", "R5"}),
    ("STS [R21], R0", (), {"R21", "R0"}),
    ("ATOMG.E.ADD.STRONG.GPU PT, R2, desc[UR4][R2.64], R5", ("R2",), {"UR4", "R2", "R3", "R5"}),
])
def test_registers_read_and_written(text, written, read):
    i = parse_instruction(0, text)
    assert i.regs_written == written
    assert set(i.regs_read) == read


def test_memory_spaces_widths_and_constants():
    red = parse_instruction(0, "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR6][R2.64], R17")
    assert (red.mem_space, red.mem_op, red.cache_hints) == \
        ("global", "reduction", ("STRONG", "GPU"))
    lds = parse_instruction(0, "LDS.64 R4, [R22+0x4]")
    assert (lds.mem_space, lds.access_bytes, lds.address_regs, lds.address_offset) == \
        ("shared", 8, ("R22",), 4)
    assert parse_instruction(0, "STS.U16 [R3], R4").access_bytes == 2
    add = parse_instruction(0, "IADD3 R12, P0, R4, c[0x0][0x228], RZ")
    assert add.const_refs == ((0, 0x228),) and add.mem_op == ""


def test_branches_and_conditions():
    bra = parse_instruction(0x140, "@P0 BRA 0x5e0")
    assert bra.branch_target == 0x5E0 and bra.is_conditional and bra.ends_block
    uni = parse_instruction(0, "BRA.U !UP0, 0x1230")
    assert uni.branch_target == 0x1230 and uni.is_conditional
    assert not parse_instruction(0, "BRA 0x40").is_conditional
    assert parse_instruction(0, "BSSY B0, 0x5f0").branch_target == 0x5F0
    assert parse_instruction(0, "EXIT").ends_block


def test_class_histogram_and_compute_to_memory_ratio():
    texts = ["ISETP.GE.AND P0, PT, R0, UR4, PT", "IMAD R2, R3, 0x20, R0",
             "LEA R8, P6, R36, R8, 0x2",
             "LDG.E R14, desc[UR6][R8.64]", "LDG.E R15, desc[UR6][R10.64]", "FFMA R1, R2, R3, R1",
             "FADD R1, R1, R2", "BSSY B0, 0x100", "BSYNC B0", "HFMA2.MMA R22, -RZ, RZ, 0, 0",
             "STG.E desc[UR6][R2.64], R1", "S2R R0, SR_TID.X"]
    ins = [parse_instruction(16 * k, t) for k, t in enumerate(texts)]
    hist = class_histogram(ins)
    assert hist["ISETP"] == 1 and hist["LDG"] == 2 and hist["BSSY/BSYNC"] == 2
    assert hist["FFMA"] == 1 and hist["FADD"] == 1 and hist["other"] == 2
    assert sum(hist.values()) == len(texts)
    # FFMA + FADD (HFMA2.MMA is a register move) over LDG x2 + STG
    assert compute_to_memory_ratio(ins) == pytest.approx(2 / 3)
