"""Real H200 listings cut short: refused with the file, line and kernel named, never analysed in
part (and never a traceback, even when the cut falls inside an instruction)."""

from __future__ import annotations

import pytest

from sparsescope.cli import main
from sparsescope.errors import TruncatedInputError
from sparsescope.sass.listing import iter_listing_text, read_listing

MODULES = ["sparsescope.cli.sass_cmd"]
CUOBJDUMP = "spmv_kernels_sm90.cuobjdump.sass"
NVDISASM = "spmv_kernels_sm90.nvdisasm.txt"


def cut_after(text: str, marker: str, extra: int = 0) -> str:
    """The text up to and including the line holding ``marker``, plus ``extra`` characters."""
    end = text.index("\n", text.index(marker)) + 1
    return text[:end + extra]


def sass(args: list[str], capsys) -> tuple[int, str, str]:
    rc = main(["sass", *args], modules=MODULES)
    out, err = capsys.readouterr()
    return rc, out, err


def test_complete_fixtures_read_whole(h200_fixtures):
    for name in (CUOBJDUMP, NVDISASM):
        got = read_listing(h200_fixtures / name)
        assert [(k.name, len(k.instructions)) for k in got] == \
            [("spmv_csr_vector8", 120), ("spmv_csr_scalar", 256)]


def test_cuobjdump_cut_inside_the_first_kernel(h200_fixtures, tmp_path, capsys):
    text = (h200_fixtures / CUOBJDUMP).read_text()
    cut = cut_after(text, "/*0350*/")  # in spmv_csr_vector8; spmv_csr_scalar is lost
    path = tmp_path / "cut.sass"
    path.write_text(cut)
    last_line = cut.count("\n")
    with pytest.raises(TruncatedInputError) as info:
        read_listing(path)
    error = info.value
    assert (error.path, error.line, error.item) == (str(path), last_line, "spmv_csr_vector8")
    assert str(error).startswith(
        f"{path}, line {last_line}: listing truncated: kernel spmv_csr_vector8 (sm_90) stops "
        "after /*0350*/ without its closing '..........' line; the listing ends here, so any "
        "kernel after it is missing too (complete kernels before it: none)")
    for args in ([str(path)], [str(path), "--json"], [str(path), "--list"],
                 [str(path), "--kernel", "spmv_csr_scalar"]):  # the lost kernel: not "no kernel"
        rc, _, err = sass(args, capsys)
        assert rc == 1 and "Traceback" not in err
        assert f"sparsescope: error: {path}, line {last_line}: listing truncated: kernel " \
               "spmv_csr_vector8" in err


def test_cuobjdump_cut_inside_the_second_kernel(h200_fixtures, tmp_path, capsys):
    text = (h200_fixtures / CUOBJDUMP).read_text()
    start = text.index("Function : spmv_csr_scalar")
    cut = cut_after(text[start:], "/*0a30*/")
    path = tmp_path / "cut2.sass"
    path.write_text(text[:start] + cut)
    rc, out, err = sass([str(path)], capsys)
    assert rc == 1 and out == "" and "Traceback" not in err
    assert "kernel spmv_csr_scalar (sm_90) stops after /*0a30*/" in err
    assert "(complete kernels before it: spmv_csr_vector8)" in err


def test_cut_inside_an_instruction_is_truncation_not_a_crash(h200_fixtures, tmp_path):
    # "IMAD.WIDE" without operands used to reach the instruction parser (IndexError)
    text = (h200_fixtures / "scalar_device_cuobjdump.sass").read_text()
    end = text.index("IMAD.WIDE", text.index("/*0bc0*/")) + len("IMAD.WIDE")
    path = tmp_path / "mid.sass"
    path.write_text(text[:end])
    with pytest.raises(TruncatedInputError, match=r"mid\.sass, line \d+: listing truncated: "
                                                  r"kernel spmv_csr_scalar .* after /\*0bc0\*/"):
        read_listing(path)


def test_nvdisasm_cut_before_the_end_label(h200_fixtures, tmp_path, capsys):
    text = (h200_fixtures / NVDISASM).read_text()
    # every instruction of spmv_csr_vector8 but the padding NOPs and its end label .L_x_17
    cut = cut_after(text, "/*06b0*/")
    path = tmp_path / "cut.nvdisasm.txt"
    path.write_text(cut)
    rc, _, err = sass([str(path), "--json"], capsys)
    assert rc == 1 and "Traceback" not in err
    assert f"{path}, line {cut.count(chr(10))}: listing truncated: kernel spmv_csr_vector8 " \
           "(sm_90) stops after /*06b0*/ without its end label '.L_x_17:'" in err
    # cut between the two kernels: the first is whole (nothing tells that a second is missing)
    whole_first = cut_after(text, ".L_x_17:")
    assert [k.name for k in iter_listing_text(whole_first)] == ["spmv_csr_vector8"]


def test_unselected_truncated_kernel_is_still_reported(h200_fixtures):
    text = (h200_fixtures / CUOBJDUMP).read_text()
    cut = cut_after(text, "/*0100*/")
    with pytest.raises(TruncatedInputError, match="kernel spmv_csr_vector8"):
        list(iter_listing_text(cut, select=lambda name: name == "spmv_csr_scalar",
                               source="stream"))


def unclosed(text: str, upto: str) -> str:
    """The listing up to the line holding ``upto`` (inclusive), without the closing dots."""
    return cut_after(text, upto)


def test_cuobjdump_padded_but_unclosed_is_complete(h200_fixtures, tmp_path):
    # issue 33, defect 13: the listing ends in the last kernel's NOP padding, after its EXIT and
    # its self-branch (BRA 0xf70 at /*0f70*/), without the closing '..........' line
    text = (h200_fixtures / CUOBJDUMP).read_text()
    whole = read_listing(h200_fixtures / CUOBJDUMP)
    for upto, n_scalar in (("/*0ff0*/", 256), ("/*0fa0*/", 251), ("/*0f70*/", 248)):
        path = tmp_path / "padded.sass"
        path.write_text(unclosed(text, upto))
        got = read_listing(path)
        assert [(k.name, len(k.instructions)) for k in got] == \
            [("spmv_csr_vector8", 120), ("spmv_csr_scalar", n_scalar)]
        assert got[1].instructions == whole[1].instructions[:n_scalar]
    # the last padding line itself cut short (inside the opcode, or inside its encoding)
    start = text.index("NOP", text.index("/*0fb0*/"))
    for extra in (1, 2, 4, 30):
        got = list(iter_listing_text(text[:start + extra], source="stream"))
        assert [len(k.instructions) for k in got] == [120, 251 + (extra >= 3)]
        assert got[1].instructions == whole[1].instructions[:len(got[1].instructions)]
    # the first kernel alone, padded and unclosed, selected or not
    first = unclosed(text, "/*0770*/")
    assert [k.name for k in iter_listing_text(first)] == ["spmv_csr_vector8"]
    assert list(iter_listing_text(first, select=lambda n: False)) == []


def test_cuobjdump_unclosed_but_cut_in_the_code_is_refused(h200_fixtures, tmp_path):
    text = (h200_fixtures / CUOBJDUMP).read_text()
    # after the EXIT, before the self-branch; inside the self-branch; a predicated EXIT only
    for upto, extra in (("/*0f60*/", 0), ("/*0f60*/", 100), ("/*0db0*/", 0)):
        cut = cut_after(text, upto, extra)
        with pytest.raises(TruncatedInputError, match="kernel spmv_csr_scalar"):
            list(iter_listing_text(cut, source="stream"))
        with pytest.raises(TruncatedInputError, match="kernel spmv_csr_scalar"):
            list(iter_listing_text(cut, select=lambda n: False, source="stream"))
    # a branch to itself (a spin loop) in the middle of code is not the end when code follows
    loop = text.replace("/*0a30*/              @!P1 BRA 0x4b0 ;",
                        "/*0a30*/                   BRA 0xa30 ;")
    assert "BRA 0xa30" in loop
    with pytest.raises(TruncatedInputError, match="stops after /\\*0a80\\*/"):
        list(iter_listing_text(cut_after(loop, "/*0a80*/"), source="stream"))
