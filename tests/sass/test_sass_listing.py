"""Listing readers on the real fixtures (cuobjdump -sass, nvdisasm -g) and nvdisasm -json."""

from __future__ import annotations

import pytest

from sparsescope.errors import UsageError
from sparsescope.sass.listing import detect_format, is_listing_file, iter_listing_text, read_listing


def test_cuobjdump_and_nvdisasm_fixtures_agree(h200_fixtures):
    cuo = read_listing(h200_fixtures / "spmv_kernels_sm90.cuobjdump.sass")
    nvd = read_listing(h200_fixtures / "spmv_kernels_sm90.nvdisasm.txt")
    assert [(k.name, k.arch, len(k.instructions)) for k in cuo] == \
        [("spmv_csr_vector8", "sm_90", 120), ("spmv_csr_scalar", "sm_90", 256)]
    assert [k.listing_format for k in cuo + nvd] == ["cuobjdump"] * 2 + ["nvdisasm"] * 2
    for a, b in zip(cuo, nvd, strict=True):
        assert [i.text for i in a.instructions] == [i.text for i in b.instructions]
        # nvdisasm labels resolve to the addresses cuobjdump prints
        assert [i.branch_target for i in a.instructions] == \
            [i.branch_target for i in b.instructions]


def test_nvdisasm_keeps_source_lines(h200_fixtures):
    vec = read_listing(h200_fixtures / "spmv_kernels_sm90.nvdisasm.txt")[0]
    first = vec.instructions[0]
    assert (first.source_file, first.source_line) == ("/fixture/spmv_kernels.cu", 12)
    lines = {i.source_line for i in vec.instructions if i.source_file.endswith("spmv_kernels.cu")}
    assert {14, 15, 16, 18, 19, 20} <= lines


def test_select_skips_unwanted_functions(h200_fixtures):
    got = read_listing(h200_fixtures / "scalar_device_cuobjdump.sass",
                       select=lambda n: n == "spmv_csr_scalar")
    assert len(got) == 1 and len(got[0].instructions) == 256
    assert read_listing(h200_fixtures / "scalar_device_cuobjdump.sass",
                        select=lambda n: False) == []


def test_nvdisasm_json():
    doc = ('[{"SM":{"version":{"major":9,"minor":0}}},[{"function-name":"k","start":0,'
           '"length":64,"sass-instructions":[{"opcode":"LDC.64","operands":"R2,c[0x0][0x218]"},'
           '{"opcode":"LDG.E","operands":"R4,desc[UR4][R2.64]"},{"predicate":"@!P0",'
           '"opcode":"BRA","operands":"0x0"},{"opcode":"EXIT"}]}]]')
    (k,) = list(iter_listing_text(doc))
    assert (k.name, k.arch, k.listing_format) == ("k", "sm_90", "nvdisasm-json")
    assert [i.address for i in k.instructions] == [0, 16, 32, 48]
    assert k.instructions[1].address_regs == ("R2", "R3")
    assert k.instructions[2].branch_target == 0 and k.instructions[2].predicate == "!P0"


def test_not_a_listing(tmp_path, h200_fixtures):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\nworld\n")
    with pytest.raises(UsageError, match="not a SASS listing"):
        read_listing(bad)
    assert not is_listing_file(bad)
    assert is_listing_file(h200_fixtures / "spmv_kernels_sm90.nvdisasm.txt")
    assert detect_format("[{}]") == "nvdisasm-json"
