"""The profile stage's source-page reader (read_csv.load_instruction_samples_csv) through the shared
reader sass.source_page: older ncu column names, this stage's error, the CLI, and agreement with
the stall-name tables of profile.metrics."""

from __future__ import annotations

import csv
import gzip
import lzma
from pathlib import Path

import pytest

from sparsescope.cli import main
from sparsescope.errors import UsageError
from sparsescope.profile import metrics as M
from sparsescope.profile.errors import ProfileError
from sparsescope.profile.read_csv import load_instruction_samples_csv
from sparsescope.sass.source_page import read_source_page, stall_column

PROFILE_CHECK = Path(__file__).resolve().parents[1] / "fixtures" / "h200" / "profile_check"

FIXTURE = "scalar_source_sass.csv"


def test_real_export_in_the_all_cycles_spelling(h200_fixtures, tmp_path):
    """The 2025.3 export with its header in the spelling of 2021-2022 releases reads the same."""
    text = (h200_fixtures / FIXTURE).read_text()
    older = tmp_path / "older_source.csv"
    older.write_text(text.replace("(All Samples)", "(All Cycles)")
                     .replace("(Not-issued Samples)", "(Not-issued Cycles)"))
    assert "Warp Stall Sampling (All Cycles)" in older.read_text()
    rows = load_instruction_samples_csv(older)[0]
    assert rows == load_instruction_samples_csv(h200_fixtures / FIXTURE)[0]
    assert sum(r.warp_stall_samples for r in rows) == 2298
    assert sum(r.warp_stall_samples_not_issued for r in rows) == 2229


def test_first_spelling_with_metric_named_reasons(tmp_path):
    """Hand-made: the first releases' "Sampling Data" totals, per-reason columns named as the
    report's per-PC metrics; reasons without a sample are left out of the record."""
    path = tmp_path / "first_source.csv"
    path.write_text(
        '"Kernel Name","spmv",\n'
        '"Address","Source","Sampling Data (All)","Sampling Data (Not Issued)",'
        '"Instructions Executed","Thread Instructions Executed",'
        '"Predicated-On Thread Instructions Executed",'
        '"smsp__pcsamp_warps_issue_stalled_long_scoreboard",'
        '"smsp__pcsamp_warps_issue_stalled_no_instructions",'
        '"smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"\n'
        '"0x7f00000000a0","  @P0 LDG.E R8, desc[UR4][R8.64] ","12","10","2,048","65,536",'
        '"60,000","10","1","9"\n'
        '"0x7f00000000b0","  FFMA R21, R8, R24, R21 ","0","0","2,048","65,536","65,536",'
        '"0","0","0"\n')
    (rows,) = load_instruction_samples_csv(path).values()
    ldg, ffma = rows
    assert (ldg.kernel, ldg.address, ldg.sass) == (
        "spmv", 0x7F00000000A0, "@P0 LDG.E R8, desc[UR4][R8.64]")
    assert (ldg.warp_stall_samples, ldg.warp_stall_samples_not_issued) == (12, 10)
    assert (ldg.instructions_executed, ldg.thread_instructions_executed,
            ldg.predicated_on_thread_instructions) == (2048, 65536, 60000)
    assert ldg.stall_samples == {"long_scoreboard": 10, "no_instruction": 1}
    assert ffma.stall_samples == {} and ffma.l2_sectors_global == 0


def test_unknown_columns_are_a_profile_error(tmp_path):
    path = tmp_path / "renamed_source.csv"
    path.write_text('"Kernel Name","k",\n"PC Offset","SASS","Samples"\n"0x10","EXIT","1"\n')
    with pytest.raises(ProfileError) as err:
        load_instruction_samples_csv(path)
    assert err.value.reason == "not_a_report" and err.value.exit_code == 8
    assert err.value.path == str(path)
    message = str(err.value)
    assert message.startswith(f"{path}: line 2: the source page's header has no instruction "
                              "address column")
    assert message.count(str(path)) == 1
    assert message.endswith("columns found: 'PC Offset', 'SASS', 'Samples'")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ProfileError, match="empty file, not an ncu CSV export"):
        load_instruction_samples_csv(tmp_path / "empty.csv")


def test_profile_report_with_an_unreadable_source_page(h200_fixtures, tmp_path, capsys):
    """`profile report` picks up <stem>_source.csv beside <stem>_raw.csv: a page with none of the
    known columns stops it with the file named, no traceback."""
    raw = tmp_path / "scalar_raw.csv"
    raw.write_bytes((h200_fixtures / "scalar_raw.csv").read_bytes())
    source = tmp_path / "scalar_source.csv"
    source.write_text('"Kernel Name","spmv_csr_scalar",\n"Address","Source","Hits"\n')
    rc = main(["profile", "report", str(raw), "--out", str(tmp_path / "out")],
              modules=["sparsescope.cli.profile_cmd"])
    err = capsys.readouterr().err
    assert rc == 8  # a bad profile file: the profile stage's exit code, as for analyze
    assert f"sparsescope: error: {source}: line 2: the source page's header has none" in err
    assert "'Hits'" in err and "Traceback" not in err


def test_stall_names_agree_with_profile_metrics(h200_fixtures):
    """The shared reader's names match the profile stage's tables (metrics.source_column_reason,
    metrics.pcsamp_reason) on every column of the real export and every reason's metric."""
    header = next(row for row in csv.reader((h200_fixtures / FIXTURE).open())
                  if row[:1] == ["Address"])
    stall_columns = [c for c in header if c.startswith("stall_")]
    assert len(stall_columns) == 36
    for column in header:
        assert stall_column(column) == M.source_column_reason(column)
    for reason in (*M.STALL_REASONS, "no_instructions"):
        for suffix in ("", "_not_issued"):
            metric = f"smsp__pcsamp_warps_issue_stalled_{reason}{suffix}"
            assert stall_column(metric) == M.pcsamp_reason(metric)


def test_source_page_read_from_xz_as_from_gzip(tmp_path):
    """A committed gzipped source-page export recompressed as xz (as results folders keep
    them) reads the same; a damaged xz export is an error naming the file."""
    gz = PROFILE_CHECK / "profile_seed6_cage15_cuda-spmv-sell_source.csv.gz"
    xz = tmp_path / "profile_seed6_cage15_cuda-spmv-sell_source.csv.xz"
    xz.write_bytes(lzma.compress(gzip.decompress(gz.read_bytes())))
    packed = read_source_page(gz)
    assert packed and sum(len(page.rows) for page in packed) > 100
    assert read_source_page(xz) == packed
    broken = tmp_path / "cut_source.csv.xz"
    broken.write_bytes(xz.read_bytes()[:-40])
    with pytest.raises(UsageError, match="damaged xz data") as err:
        read_source_page(broken)
    assert str(err.value).startswith(f"{broken}: ")
