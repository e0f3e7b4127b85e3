"""The one source-page reader (sass.source_page): the real H200 export, the same export under the
column names of older ncu releases, small hand-made pages in those spellings, and bad pages.

Fixture numbers were read from scalar_source_sass.csv (ncu 2025.3.1): 256 instructions,
2,298 samples (the column ``Warp Stall Sampling (All Samples)`` summed), 2,229 not issued, the
``FFMA R21, R8, R24, R21`` at 0x7efa397a0970 with 255 samples, all ``stall_long_sb``."""

from __future__ import annotations

import csv
import io

import pytest

from sparsescope.cli import main
from sparsescope.errors import UsageError
from sparsescope.sass.source_page import (
    SOURCE_COLUMNS,
    read_source_page,
    stall_column,
)
from sparsescope.sass.stall_map import read_source_sass_csv

FIXTURE = "scalar_source_sass.csv"
#: What the releases before 2023 print for the two sample totals (the 2025.3 names as keys).
CYCLES_SPELLING = {"Warp Stall Sampling (All Samples)": "Warp Stall Sampling (All Cycles)",
                   "Warp Stall Sampling (Not-issued Samples)":
                       "Warp Stall Sampling (Not-issued Cycles)"}
FIRST_SPELLING = {"Warp Stall Sampling (All Samples)": "Sampling Data (All)",
                  "Warp Stall Sampling (Not-issued Samples)": "Sampling Data (Not Issued)"}


def _rewrite(source, out, rename=None, drop=(), metric_names=False):
    """The export at ``source`` with its header renamed, columns dropped, and the stall_*
    columns named as the per-PC metrics (``metric_names``); written to ``out``."""
    rows = list(csv.reader(source.read_text().splitlines()))
    header = rows[1]
    keep = [i for i, name in enumerate(header) if name not in drop]
    names = []
    for name in header:
        name = (rename or {}).get(name, name)
        parsed = stall_column(name) if metric_names else None
        if parsed is not None:
            name = f"smsp__pcsamp_warps_issue_stalled_{parsed[0]}" + (
                "_not_issued" if parsed[1] else "")
        names.append(name)
    rows[1] = names
    text = io.StringIO()
    writer = csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(rows[0])
    for row in rows[1:]:
        writer.writerow([row[i] for i in keep if i < len(row)])
    out.write_text(text.getvalue())
    return out


def test_real_export(h200_fixtures):
    (block,) = read_source_page(h200_fixtures / FIXTURE)
    assert block.kernel == "spmv_csr_scalar" and len(block.rows) == 256
    assert sum(r.samples for r in block.rows) == 2298
    assert sum(r.samples_not_issued for r in block.rows) == 2229
    assert sum(r.instructions_executed for r in block.rows) == 606208     # 148 x 4096
    hot = max(block.rows, key=lambda r: r.samples)
    assert (hot.address, hot.sass, hot.samples, hot.samples_not_issued) == (
        0x7EFA397A0970, "FFMA R21, R8, R24, R21", 255, 250)
    assert {k: v for k, v in hot.stalls.items() if v} == {"long_scoreboard": 255}
    # every stall_* column of the page under its reason name, zeros kept: 18 reasons
    assert len(hot.stalls) == 18 and hot.stalls["sleeping"] == 0    # from stall_sleep
    for row in block.rows:
        assert row.samples == sum(row.stalls.values())


@pytest.mark.parametrize("rename", [CYCLES_SPELLING, FIRST_SPELLING], ids=["cycles", "first"])
def test_real_export_in_older_spellings(h200_fixtures, tmp_path, rename):
    fixture = h200_fixtures / FIXTURE
    older = _rewrite(fixture, tmp_path / "older.csv", rename=rename)
    assert read_source_page(older) == read_source_page(fixture)
    assert read_source_sass_csv(older) == read_source_sass_csv(fixture)
    # without the stall_* columns the totals can come from the renamed columns only
    stall_columns = [c for c in next(csv.reader([fixture.read_text().splitlines()[1]]))
                     if stall_column(c)]
    totals_only = _rewrite(fixture, tmp_path / "totals.csv", rename=rename, drop=stall_columns)
    (block,) = read_source_page(totals_only)
    (expected,) = read_source_page(fixture)
    assert [(r.address, r.samples, r.samples_not_issued) for r in block.rows] == [
        (r.address, r.samples, r.samples_not_issued) for r in expected.rows]
    assert sum(r.samples for r in block.rows) == 2298 and block.rows[0].stalls == {}


def test_real_export_with_metric_names_and_no_totals(h200_fixtures, tmp_path):
    """Per-reason columns named as the report's per-PC metrics, the two total columns gone:
    the totals are the sums of the reasons (all, and not issued), equal to ncu's own."""
    fixture = h200_fixtures / FIXTURE
    renamed = _rewrite(fixture, tmp_path / "metrics.csv", metric_names=True,
                       drop=("Warp Stall Sampling (All Samples)",
                             "Warp Stall Sampling (Not-issued Samples)"))
    assert "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued" in renamed.read_text()
    assert read_source_page(renamed) == read_source_page(fixture)


#: ncu before 2023 as a hand-made page: "All Cycles" totals, Instructions Executed printed twice,
#: stall_* columns (a subset: the LDG's 9 samples hold 2 of reasons not listed), two launches, an
#: ncu log line between them.
OLD_PAGE = """\
"Kernel Name","k1",
"Address","Source","Warp Stall Sampling (All Cycles)","Warp Stall Sampling (Not-issued Cycles)",\
"Instructions Executed","# Samples","Instructions Executed","Thread Instructions Executed",\
"stall_long_sb","stall_wait","stall_selected","stall_long_sb (Not Issued)","stall_wait (Not Issued)"
"0x7f0000000000","      LDG.E R2, desc[UR4][R2.64] ","9","6","1,200","9","1,200","38400","0","2",\
"5","0","1"
"0x7f0000000010","      FFMA R4, R2, R3, R4 ","40","39","1,200","40","1,200","38400","38","1","1",\
"38","1"
==PROF== Disconnected from process 4242
"Kernel Name","k2",
"Address","Source","Warp Stall Sampling (All Cycles)","Warp Stall Sampling (Not-issued Cycles)",\
"Instructions Executed","# Samples","Instructions Executed","Thread Instructions Executed",\
"stall_long_sb","stall_wait","stall_selected","stall_long_sb (Not Issued)","stall_wait (Not Issued)"
"0x7f0000001000","      EXIT ","3","0","64","3","64","2048","0","0","3","0","0"
"""


def test_hand_made_old_page(tmp_path):
    path = tmp_path / "old_source.csv"
    path.write_text(OLD_PAGE)
    k1, k2 = read_source_page(path)
    assert (k1.kernel, len(k1.rows), k2.kernel, len(k2.rows)) == ("k1", 2, "k2", 1)
    ldg, ffma = k1.rows
    assert (ldg.address, ldg.sass, ldg.samples, ldg.samples_not_issued) == (
        0x7F0000000000, "LDG.E R2, desc[UR4][R2.64]", 9, 6)
    assert (ldg.instructions_executed, ldg.thread_instructions_executed) == (1200, 38400)
    assert ldg.stalls == {"long_scoreboard": 0, "wait": 2, "selected": 5}
    assert ffma.stalls == {"long_scoreboard": 38, "wait": 1, "selected": 1}
    assert ffma.l2_sectors_global == 0                           # column absent
    # the stall map's view: the page's short names
    first, second = read_source_sass_csv(path)
    assert first.name == "k1" and second.rows[0].text == "EXIT"
    assert first.rows[1].stalls == {"long_sb": 38, "wait": 1, "selected": 1}
    assert (first.rows[1].samples, first.rows[1].executed) == (40, 1200)


def test_cuda_and_sass_columns_find_the_sass_text(tmp_path):
    """A --print-source cuda,sass header holds "Source" twice (CUDA line, then SASS after the
    Address) and a line-number column first: columns are found by name, CUDA rows skipped."""
    path = tmp_path / "cuda_sass.csv"
    path.write_text('"Kernel Name","k",\n'
                    '"#","Source","Address","Source","Sampling Data (All)","stall_long_sb"\n'
                    '"12","  float v = x[i];","-","-","11","9"\n'
                    '"","","0x7f0000000020","  LDG.E R5, desc[UR4][R4.64] ","11","9"\n')
    (block,) = read_source_page(path)
    (row,) = block.rows
    assert (row.address, row.sass, row.samples) == (
        0x7F0000000020, "LDG.E R5, desc[UR4][R4.64]", 11)
    assert row.stalls == {"long_scoreboard": 9} and row.samples_not_issued == 0


def test_stall_column_spellings():
    assert stall_column("stall_long_sb") == ("long_scoreboard", False)
    assert stall_column("stall_sleep") == ("sleeping", False)
    assert stall_column("stall_sleeping (Not Issued)") == ("sleeping", True)
    assert stall_column("stall_dispatch (Not Issued)") == ("dispatch_stall", True)
    assert stall_column("stall_gmma") == ("gmma", False)           # a reason newer than the table
    assert stall_column("smsp__pcsamp_warps_issue_stalled_long_scoreboard") == (
        "long_scoreboard", False)
    assert stall_column("smsp__pcsamp_warps_issue_stalled_no_instructions_not_issued") == (
        "no_instruction", True)
    for other in ("Address", "# Samples", "smsp__pcsamp_sample_count", "Stall Reason"):
        assert stall_column(other) is None
    assert set(SOURCE_COLUMNS.values()) == {
        "address", "sass", "samples", "samples_not_issued", "instructions_executed",
        "thread_instructions_executed", "predicated_on_thread_instructions",
        "l2_sectors_global", "l2_sectors_global_excessive"}


# --- pages that cannot be read ------------------------------------------------------------------


def test_header_with_none_of_the_known_columns(tmp_path):
    path = tmp_path / "renamed.csv"
    path.write_text('"Kernel Name","k",\n"Address","Source","Stall Samples","Reason"\n'
                    '"0x7f0000000000","EXIT","1","x"\n')
    with pytest.raises(UsageError) as err:
        read_source_page(path)
    message = str(err.value)
    assert message.startswith(f"{path}, line 2: the source page's header has none of the known")
    assert "columns found: 'Address', 'Source', 'Stall Samples', 'Reason'" in message


def test_header_without_an_address_lists_what_it_found(tmp_path):
    names = [f"Metric {i}" for i in range(25)]
    path = tmp_path / "no_address.csv"
    path.write_text('"Kernel Name","k",\n' + ",".join(f'"{n}"' for n in names) + "\n")
    with pytest.raises(UsageError, match="no instruction address column") as err:
        read_source_page(path)
    assert "'Metric 0', " in str(err.value) and str(err.value).endswith("'Metric 19' and 5 more")


@pytest.mark.parametrize(("content", "message"), [
    (b"", "empty file"),
    (b"\x00\x01NVR" * 100, "binary file"),
    (b'"ID","Kernel Name"\n"0","k"\n', "no 'Kernel Name' row"),
    (b'"Kernel Name","k",\n', "kernel 'k' has no header row"),
])
def test_unreadable_pages(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=message) as err:
        read_source_page(path)
    assert str(err.value).startswith(str(path))
    with pytest.raises(UsageError, match="no such file"):
        read_source_page(tmp_path / "absent.csv")


def test_cli_names_the_file_and_columns(h200_fixtures, tmp_path, capsys):
    path = tmp_path / "renamed.csv"
    path.write_text('"Kernel Name","spmv_csr_scalar",\n"Address","Source","Stall Samples"\n')
    rc = main(["sass", str(h200_fixtures / "scalar_device_cuobjdump.sass"), "--stalls",
               str(path)], modules=["sparsescope.cli.sass_cmd"])
    err = capsys.readouterr().err
    assert rc == UsageError.exit_code == 2
    assert err.startswith(f"sparsescope: error: {path}, line 2: the source page's header has none")
    assert "columns found: 'Address', 'Source', 'Stall Samples'" in err
    assert "Traceback" not in err
