"""``sparsescope model score --profile-check``: the model's counts against ncu's, case by case.

The ncu side is read from two real H200 exports (tests/fixtures/h200/profile_check: ldoor /
cuda-spmv-auto and cage15 / cuda-spmv-sell, read gzipped as committed) and from the committed
rmat-20 exports (helper launches, a second kernel); the comparison and its verdict from model
counts given by hand (no full-scale matrix is generated here: that takes minutes)."""

from __future__ import annotations

import gzip
import json
import lzma
from dataclasses import replace
from pathlib import Path

import pytest

from sparsescope.analyze import profile_check as pc
from sparsescope.analyze.ncu_counts import (
    NcuLoop,
    find_cases,
    kernel_instance,
    main_launch,
    profiled_case,
    read_ncu_counts,
    same_kernel,
    source_page_of,
)
from sparsescope.cli import main
from sparsescope.errors import UsageError
from sparsescope.profile.errors import ProfileError
from sparsescope.profile.read_csv import load_profiles_csv

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "h200" / "profile_check"
LDOOR_AUTO = FIXTURES / "profile_seed6_ldoor_cuda-spmv-auto_raw.csv.gz"
CAGE15_SELL = FIXTURES / "profile_seed6_cage15_cuda-spmv-sell_raw.csv.gz"


# -- the ncu side -------------------------------------------------------------------------------
def test_ldoor_auto_counts_from_the_raw_and_source_pages():
    c = read_ncu_counts(LDOOR_AUTO)
    assert kernel_instance(c.kernel) == "spmv_sell_dae<float, 1, 3, 1, 4, 6, 1>"
    assert c.gpu == "NVIDIA H200"
    assert c.warp_instructions == 38_767_321
    assert c.dram_read_bytes == 237_528_832
    assert (c.duration_ns, c.grid_blocks, c.block_threads, c.launches) == (61_664, 3720, 256, 1)
    assert c.warps == 3720 * 8
    src = c.source
    assert src.instructions == 38_767_321  # the page's counts add up to the raw page's
    main = src.main_loop
    # the back edge at 0x2d10 closes the loop at 0x1330; nested loops at 0x1860 and 0x1f00
    # never ran
    assert (main.header_offset, main.iterations) == (0x1330, 140_044)
    assert main.static_instructions == 429 and main.depth == 1
    assert main.executed_instructions == 33_500_291
    assert main.instructions_per_iteration == pytest.approx(33_500_291 / 140_044)  # 239.2
    assert src.outside_instructions == 3_719_666
    never = [lp for lp in src.loops if lp.iterations == 0]
    assert {lp.header_offset for lp in never} == {0x640, 0xc40, 0x1860, 0x1f00}
    assert all(lp.instructions_per_iteration is None for lp in never)


def test_cage15_sell_loop_runs_155_instructions_an_iteration():
    c = read_ncu_counts(CAGE15_SELL)
    assert kernel_instance(c.kernel) == "spmv_sell<float, 0, 1, 1, 4, 6, 1>"
    assert (c.warp_instructions, c.dram_read_bytes) == (88_690_947, 897_678_080)
    (loop,) = c.source.loops
    assert (loop.header_offset, loop.iterations, loop.static_instructions) == (0xcb0, 404_607,
                                                                               155)
    assert loop.executed_instructions == 155 * 404_607
    assert c.source.outside_instructions == 88_690_947 - 155 * 404_607


def test_xz_exports_count_as_the_gzipped_ones(tmp_path):
    """Results folders keep the exports as xz: the committed gzipped pair (raw and source page)
    recompressed as xz gives the same counts, the source page found beside the raw one and the
    case found by its ``_raw.csv.xz`` name; a damaged xz export is an error naming it."""
    for name in (LDOOR_AUTO.name, LDOOR_AUTO.name.replace("_raw.", "_source.")):
        xz = tmp_path / name.replace(".csv.gz", ".csv.xz")
        xz.write_bytes(lzma.compress(gzip.decompress((FIXTURES / name).read_bytes())))
    raw = tmp_path / "profile_seed6_ldoor_cuda-spmv-auto_raw.csv.xz"
    assert source_page_of(raw) == tmp_path / "profile_seed6_ldoor_cuda-spmv-auto_source.csv.xz"
    assert read_ncu_counts(raw) == read_ncu_counts(LDOOR_AUTO)
    assert read_ncu_counts(raw).source is not None
    cases, notes = find_cases([tmp_path])
    assert [(c.raw, c.matrix, c.backend) for c in cases] == [(raw, "ldoor", "cuda-spmv-auto")]
    assert notes == []
    raw.write_bytes(raw.read_bytes()[:300])
    with pytest.raises(ProfileError, match="damaged xz data") as err:
        read_ncu_counts(raw)
    assert str(raw) in str(err.value)


def test_the_call_s_kernel_is_picked_past_helpers(committed):
    """rmat-20 (committed H200 exports): two cupy copies, cuSPARSE's partition kernel and
    csrmv_v3_kernel; adaptive's fills, its spmv_tile and the spmv_fixup beside it."""
    folder = committed("results/h200/profile/2026-11-25-cases-rmat20")
    raw = folder / "rmat-20.spmv0.cupy-cusparse-i32_raw.csv.xz"
    launch, launches, others = main_launch(load_profiles_csv(raw), raw)
    assert (launch.index, launch.name, launches, others) == (3, "csrmv_v3_kernel", 1, ())
    raw = folder / "rmat-20.spmv0.cuda-spmv-adaptive_raw.csv.xz"
    launch, _, others = main_launch(load_profiles_csv(raw), raw)
    assert launch.index == 2 and launch.name == "spmv_tile"
    assert others == ("spmv_fixup<float>: 11,260 warp instructions",)
    c = read_ncu_counts(raw)
    assert (c.warp_instructions, c.grid_blocks, c.source) == (3_201_766, 1167, None)


def test_kernel_names_as_the_model_and_ncu_write_them():
    page = "void spmv_sell<float, (int)0, (int)1, (int)1, (int)4, (int)6, (int)1>(int, const int *)"
    assert kernel_instance(page) == "spmv_sell<float, 0, 1, 1, 4, 6, 1>"
    assert same_kernel("spmv_sell<float, 0, 1, 1, 4, 6, 1>", page)
    assert not same_kernel("spmv_sell<float, 1, 1, 1, 4, 6, 1>", page)
    assert not same_kernel("spmv_sell_dae<float, 0, 1, 1, 4, 6, 1>", page)
    # the model names a library's kernel without its template arguments
    assert same_kernel("cusparse::csrmv_v3_kernel",
                       "void csrmv_v3_kernel<integral_constant<bool, 0>, int, int, float>(x)")
    assert same_kernel("void cusparse::csrmv_v3_kernel<std::integral_constant<bool, 0>, int>(x)",
                       "void csrmv_v3_kernel<integral_constant<bool, 0>, int>(x)")


# -- the cases a folder holds -------------------------------------------------------------------
@pytest.mark.parametrize("name, found", [
    ("profile_seed6_webbase-1M_cuda-csr-scalar_raw.csv",
     ("webbase-1M", "cuda-csr-scalar", "seed6")),
    ("profile_seed6_ldoor_nvmath-cusparse-i32_raw.csv.gz",
     ("ldoor", "nvmath-cusparse-i32", "seed6")),
    ("rmat-20.spmv0.cuda-spmv-sell[tpr=2,unroll=2,minb=8,long_row=32]_raw.csv.gz",
     ("rmat-20", "cuda-spmv-sell[tpr=2,unroll=2,minb=8,long_row=32]", "")),
    ("graph-08.spmm128.spmm-cuda-rowgroup_raw.csv.gz",
     "graph-08.spmm128.spmm-cuda-rowgroup: an spmm case; the check reads SpMV"),
    ("profile_seed6_cant_no-such-backend_raw.csv",
     "profile_seed6_cant_no-such-backend: no known backend at the end of the name"),
])
def test_a_case_s_matrix_and_backend_come_from_its_name(name, found):
    case = profiled_case(Path("/profiles") / name)
    if isinstance(found, str):
        assert case == found
    else:
        assert (case.matrix, case.backend, case.suite) == found


def test_a_folder_s_name_names_a_case_its_file_does_not(tmp_path):
    raw = tmp_path / "cant.spmv0.cuda-csr-vector" / "export_raw.csv"
    case = profiled_case(raw)
    assert (case.matrix, case.backend, case.suite) == ("cant", "cuda-csr-vector", "")


def test_cases_are_found_below_the_folders_and_odd_ones_noted(tmp_path):
    for rel in ("a/ldoor.spmv0.cuda-spmv-sell/profile_seed6_ldoor_cuda-spmv-sell_raw.csv",
                "a/profile_seed6_cant_cuda-spmv-sell_raw.csv.gz",
                "b/graph-08.spmm128.spmm-cuda-rowgroup_raw.csv.gz",
                "b/notes_source.csv"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    cases, notes = find_cases([tmp_path / "a", tmp_path / "b"])
    assert [(c.matrix, c.backend) for c in cases] == [("cant", "cuda-spmv-sell"),
                                                      ("ldoor", "cuda-spmv-sell")]
    assert notes == ["graph-08.spmm128.spmm-cuda-rowgroup: an spmm case; the check reads SpMV"]
    with pytest.raises(UsageError, match="not a profile folder"):
        find_cases([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no ncu raw-page export"):
        find_cases([tmp_path / "empty"])


# -- the comparison, with the model's counts given ----------------------------------------------
#: The model's counts of ldoor / cuda-spmv-auto (sparsescope model, H200 datasheet, latency
#: mode, this checkout's SASS; the work budget's row sample), as model_counts returns them.
LDOOR_AUTO_MODEL = pc.ModelCounts(
    kernel="spmv_sell_dae<float, 1, 3, 1, 4, 6, 1>", predicted_ms=0.0539,
    warp_instructions=66_700_000.0, dram_read_bytes=240_000_000.0, x_dram_bytes=3_800_000.0,
    blocks=3720.0, warps=29_760, main_iterations=140_044.0, loop_instructions=405.0,
    loop_body_instructions=405, other_instructions=331.0, nnz=46_522_475)


def test_ldoor_auto_verdict_names_the_loop_body():
    """The model charges the staged loop's 405-instruction body on every iteration; ncu ran
    239 an iteration: the issue term's input is the loop body, not the iterations."""
    case = profiled_case(LDOOR_AUTO)
    row = pc.compare(case, read_ncu_counts(LDOOR_AUTO), LDOOR_AUTO_MODEL)
    assert row["paired_loops"] == {"main": "0x1330", "remainder": None}
    c = row["counts"]
    assert c["warp_instructions"]["ratio"] == pytest.approx(66.7e6 / 38_767_321)
    assert c["main_iterations"] == {"model": 140_044.0, "ncu": 140_044, "ratio": 1.0,
                                    "off": False}
    assert c["main_instructions_per_iteration"]["off"] is True
    assert c["outside_instructions_per_warp"]["ncu"] == pytest.approx(3_719_666 / 29_760)
    assert row["verdict"].startswith(
        "issue: 66.7 M warp instructions modelled, 38.8 M counted (1.72x): the loop body is "
        "charged 405 an iteration, 239 run; the code outside the loops is charged 331 a warp, "
        "125 run")
    assert "dram" not in row["verdict"] and "launch" not in row["verdict"]


def test_dram_blocks_and_kernel_misses_are_named_with_their_terms():
    ncu = read_ncu_counts(LDOOR_AUTO)
    model = replace(LDOOR_AUTO_MODEL, kernel="spmv_sell<float, 1, 1, 1, 4, 6, 1>",
                    blocks=1860.0, warp_instructions=38_767_321.0,
                    loop_instructions=33_500_291 / 140_044, other_instructions=125.0,
                    dram_read_bytes=300_000_000.0, x_dram_bytes=50_000_000.0)
    said = pc.verdict(ncu, model, *pc.pair_loops(ncu.source.loops, model)).split("; ")
    assert said[0] == ("kernel: the model plans spmv_sell<float, 1, 1, 1, 4, 6, 1>, ncu ran "
                       "spmv_sell_dae<float, 1, 3, 1, 4, 6, 1>: the counts are of different "
                       "kernels")
    assert said[1] == "launch: 1,860 blocks modelled, 3,720 launched (0.50x)"
    # streams 250 MB; ncu's 237.5 MB leave nothing for x
    assert said[2] == ("dram: 300.0 MB read modelled, 237.5 MB counted (1.26x): the streams "
                       "are charged 250.0 MB and the x gathers 50.0 MB")
    assert said[3] == "ncu counted 12.5 MB less than the modelled streams alone"


def test_counts_within_the_tolerance_leave_the_time():
    ncu = read_ncu_counts(CAGE15_SELL)
    loop = 155.0
    model = pc.ModelCounts(
        kernel="spmv_sell<float, 0, 1, 1, 4, 6, 1>", predicted_ms=0.2459,
        warp_instructions=88_690_947.0, dram_read_bytes=897_678_080.0, blocks=20_137.0,
        warps=20_137 * 8, main_iterations=404_607.0, loop_instructions=loop,
        loop_body_instructions=155,
        other_instructions=(88_690_947 - 155 * 404_607) / (20_137 * 8))
    main, rem = pc.pair_loops(ncu.source.loops, model)
    assert pc.verdict(ncu, model, main, rem) == "counts and time within 10%"
    slow = replace(model, predicted_ms=0.1229)
    assert pc.verdict(ncu, slow, main, rem) == (
        "counts within 10%; the time is off (0.50x): the miss is in the rates or in how the "
        "terms combine, not in these counts")
    # the instructions within 10 %, one of their inputs not
    fewer = replace(model, main_iterations=350_000.0, warp_instructions=82e6)
    assert pc.verdict(ncu, fewer, main, rem) == (
        "issue's inputs, the warp instructions within 10% (0.92x): the main loop is charged "
        "350.0 k iterations, 404.6 k run")
    assert pc.verdict(ncu, replace(model, not_modelled="no SASS"), main, rem) == (
        "not modelled: no SASS")


def test_loops_pair_by_body_size_not_by_the_most_executed():
    """csr_scalar on webbase-1M (H200): the 17-instruction remainder loop runs more
    instructions than the 89-instruction main loop; each model loop finds its own."""
    remainder = NcuLoop(0x2b0, 0x3f0, 17, 93_753, 1_593_801, 1)
    unrolled = NcuLoop(0x4e0, 0xa60, 89, 13_172, 1_172_308, 1)
    model = pc.ModelCounts(loop_body_instructions=89, remainder_instructions=17)
    assert pc.pair_loops((remainder, unrolled), model) == (unrolled, remainder)
    library = pc.ModelCounts(instructions_per_nonzero=1.82)
    assert pc.pair_loops((remainder, unrolled), library) == (None, None)
    # a remainder is never a loop holding the main one, or inside it
    outer = NcuLoop(0x100, 0xb00, 120, 10, 5_000, 1)
    assert pc.pair_loops((outer, unrolled), model) == (unrolled, None)


def test_a_library_s_count_is_read_a_nonzero():
    ncu = read_ncu_counts(CAGE15_SELL)
    model = pc.ModelCounts(kernel="spmv_sell<float, 0, 1, 1, 4, 6, 1>", blocks=20_137.0,
                           warp_instructions=2.0 * 51_000_000, instructions_per_nonzero=2.0,
                           nnz=51_000_000, dram_read_bytes=897_678_080.0, warps=161_096)
    assert pc.verdict(ncu, model, None, None) == (
        "issue: 102.0 M warp instructions modelled, 88.7 M counted (1.15x): the library is "
        "charged 2.00 a nonzero, 1.74 run")


# -- the command --------------------------------------------------------------------------------
def test_profile_check_command_reads_both_fixtures(monkeypatch, capsys):
    seen = []

    def given(case, ncu, progress=None):
        seen.append((case.matrix, case.backend, case.suite))
        return LDOOR_AUTO_MODEL if case.matrix == "ldoor" else pc.ModelCounts(
            not_modelled="not asked here")

    monkeypatch.setattr(pc, "model_counts", given)
    assert main(["model", "score", "--profile-check", str(FIXTURES), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert seen == [("cage15", "cuda-spmv-sell", "seed6"), ("ldoor", "cuda-spmv-auto", "seed6")]
    cage15, ldoor = doc["rows"]
    assert cage15["verdict"] == "not modelled: not asked here"
    assert cage15["counts"]["warp_instructions"] == {"model": None, "ncu": 88_690_947.0,
                                                     "ratio": None, "off": False}
    assert ldoor["ncu"]["source"]["main_loop"] == "0x1330"
    assert ldoor["verdict"].startswith("issue: 66.7 M warp instructions modelled")
    assert doc["passed_over"] == []
    assert main(["model", "score", "--profile-check", str(FIXTURES)]) == 0
    text = capsys.readouterr().out
    assert ("| ldoor | cuda-spmv-auto | spmv_sell_dae<float, 1, 3, 1, 4, 6, 1> | "
            "66.7 M / 38.8 M (1.72x) | 240.0 MB / 237.5 MB (1.01x) | 3,720 / 3,720 (1.00x) | "
            "140.0 k x 405 / 140.0 k x 239 | - | 331 / 125 (2.65x) | 53.9 / 61.7 (0.87x) |"
            ) in text


@pytest.mark.parametrize("argv, message", [
    (["--profile-check", "d", "x.json"], "--profile-check reads profile folders, not RESULTS"),
    (["--profile-check", "d", "--l1-check", "e"], "one reading at a time"),
    (["--profile-check", "d", "--matrix", "m"], "--matrix goes with the score"),
    (["--profile-check", "d", "--by-family"], "go with the score"),
    (["--profile-check", "no-such-folder"], "no-such-folder: not a profile folder"),
])
def test_profile_check_usage_errors(argv, message, capsys):
    assert main(["model", "score", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_the_model_side_is_the_what_if_s_prediction(monkeypatch):
    """model_counts on a small cant (seed6 at scale 0.02) in place of the full-scale matrix:
    the instruction count it reports is the issue term's own, put together from the loops'
    iterations, the instructions an iteration *issues* (delta16's 91 of a 139-instruction body,
    where the SASS is read) and the per-warp rest; the counts are the what-if's."""
    from sparsescope.analyze.score_runs import suite_csr

    monkeypatch.setattr(pc, "case_matrix", lambda case: suite_csr("seed6", "cant", 0.02))
    case = profiled_case(CAGE15_SELL.with_name("profile_seed6_cant_cuda-spmv-delta16_raw.csv"))
    m = pc.model_counts(case, read_ncu_counts(CAGE15_SELL))
    assert not m.not_modelled and m.nnz == suite_csr("seed6", "cant", 0.02).nnz
    assert m.warp_instructions == pytest.approx(
        m.main_iterations * m.loop_instructions
        + m.remainder_iterations * m.remainder_instructions + m.warps * m.other_instructions)
    assert m.main_iterations > 0 and m.blocks > 0 and m.dram_read_bytes > 0
    if m.loop_body_instructions:  # the SASS read (a CUDA compiler here)
        assert kernel_instance(m.kernel) == "spmv_sell<float, 1, 1, 1, 4, 6, 1>"
        assert m.loop_instructions < m.loop_body_instructions
    unknown = pc.model_counts(case, replace(read_ncu_counts(CAGE15_SELL), gpu="NVIDIA Z9"))
    assert unknown.not_modelled == ("the export names no GPU the spec table knows "
                                    "(NVIDIA Z9)")
