"""The thread-index dataflow on hand-written SASS, and its hand-computed helpers."""

from __future__ import annotations

import pytest

from sparsescope.analyze.threadflow import (
    DATA,
    HI,
    UNIFORM,
    VAR,
    ThreadFlow,
    bank_conflict_ways,
    ideal_sectors_per_request,
    meet,
    sectors_per_request,
)
from sparsescope.sass.cfg import build_cfg
from sparsescope.sass.dataflow import reaching_definitions
from sparsescope.sass.instructions import parse_instruction


def flow(lines: list[str]):
    ins = tuple(parse_instruction(16 * k, t) for k, t in enumerate(lines))
    return ins, ThreadFlow(ins, reaching_definitions(ins, build_cfg(ins)))


def test_sectors_per_request_hand_computed():
    assert sectors_per_request(4, 4) == 4          # 128 contiguous bytes
    assert sectors_per_request(68, 4) == 32        # one sector per lane
    assert sectors_per_request(8, 4) == 8          # every other word: 256 bytes span
    assert sectors_per_request(0, 4) == 1          # broadcast
    assert sectors_per_request(2, 2) == 2          # 32 bf16 = 64 bytes
    assert sectors_per_request(16, 16) == 16       # 512 bytes of 16 B vectors
    assert ideal_sectors_per_request(4) == 4
    assert ideal_sectors_per_request(2) == 2
    assert ideal_sectors_per_request(16) == 16


def test_bank_conflict_ways_hand_computed():
    assert bank_conflict_ways(4) == 1              # consecutive words
    assert bank_conflict_ways(8) == 2              # stride 2 words: 2-way
    assert bank_conflict_ways(128) == 32           # column of a 32x32 float tile
    assert bank_conflict_ways(132) == 1            # padded to 33 words
    assert bank_conflict_ways(0) == 1              # broadcast
    assert bank_conflict_ways(8, width_bytes=8) == 1  # wider accesses not modelled


def test_meet():
    assert meet(None, ("lin", 4)) == ("lin", 4)
    assert meet(("lin", 4), ("lin", 4)) == ("lin", 4)
    assert meet(("lin", 4), ("lin", 8)) == VAR
    assert meet(DATA, ("lin", 4)) == DATA


def test_strided_address_through_lea_and_imad_wide():
    ins, tf = flow([
        "S2R R0, SR_TID.X", "S2UR UR4, SR_CTAID.X", "LDC R7, c[0x0][RZ]",
        "IMAD R7, R7, UR4, R0",            # i = ntid * ctaid + tid: lin(1)
        "LDC.64 R2, c[0x0][0x210]",
        "LEA R5, R7, R7, 0x4",             # 17 i
        "IMAD.WIDE R2, R5, 0x4, R2",       # a + 4 * 17 i
        "LDG.E.CONSTANT R3, desc[UR4][R2.64]",
        "LDG.E R9, desc[UR4][R3.64]",      # address from loaded data
    ])
    assert tf.address_value(7) == ("lin", 68)
    assert tf.address_value(8) == DATA


def test_grid_stride_induction_stays_linear():
    ins, tf = flow([
        "S2R R0, SR_TID.X",
        "IADD3 R0, R0, c[0x0][0x0], RZ",   # loop header: i += ntid
        "SHF.L.U32 R2, R0, 0x2, RZ",       # 4 i
        "LDG.E R4, desc[UR4][R2.64]",
        "ISETP.GE.AND P0, PT, R0, c[0x0][0x210], PT",
        "@!P0 BRA 0x10",
        "EXIT",
    ])
    assert tf.address_value(3) == ("lin", 4)
    assert tf.guard_value(5)[0] == "range"     # i < n: a contiguous run of lanes


def test_thread_pattern_branch_is_varying_and_uniform_registers_are_uniform():
    ins, tf = flow([
        "S2R R3, SR_TID.X",
        "LOP3.LUT R2, R3, 0x1, RZ, 0xc0, !PT",
        "ISETP.NE.U32.AND P0, PT, R2, 0x1, PT",
        "@P0 BRA 0x60",
        "ULDC UR4, c[0x0][0x0]",
        "MOV R5, UR4",
        "EXIT",
    ])
    assert tf.guard_value(3) == VAR
    assert tf.final(6, "R5") == UNIFORM


def test_guarded_write_takes_the_guards_kind():
    ins, tf = flow([
        "S2R R0, SR_TID.X",
        "LDG.E R4, desc[UR4][R0.64]",
        "ISETP.GT.AND P0, PT, R4, RZ, PT",  # predicate from loaded data
        "MOV R6, RZ",
        "@P0 MOV R6, 0x10",                 # lanes differ by data
        "LDG.E R8, desc[UR4][R6.64]",
    ])
    assert tf.guard_value(4) == DATA
    assert tf.address_value(5) == DATA


@pytest.mark.parametrize("text,expected", [
    ("IMAD.SHL.U32 R2, R0, 0x8, RZ", ("lin", 8)),
    ("IADD3 R2, -R0, RZ, RZ", ("lin", -1)),
    ("IMAD R2, R0, c[0x0][0x0], RZ", ("sym", 0)),
    ("SHF.R.U32.HI R2, RZ, 0x3, R0", HI),           # tid >> 3: monotone, not affine
    ("SHF.R.U32.HI R2, RZ, 0x5, R0", UNIFORM),       # tid >> 5: the warp index
    ("LOP3.LUT R2, R0, 0x1f, RZ, 0xc0, !PT", ("lin", 1)),  # tid & 31: the lane
    ("LOP3.LUT R2, R0, 0x7, RZ, 0xc0, !PT", VAR),    # tid & 7
])
def test_transfer_of_one_instruction(text, expected):
    ins, tf = flow(["S2R R0, SR_TID.X", text, "STG.E desc[UR4][R2.64], R0"])
    assert tf.final(2, "R2") == expected
