"""``sparsescope results readme``: a results folder's README written from the folder's own
files. Every committed README's generated block is written again from the committed files, and
the headline numbers the hand-written parts quote (kernel selection, auto against the best
library) are computed again by the product and compared."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sparsescope.cli import main
from sparsescope.report.readme import BEGIN, END, readme_for, write_readme
from sparsescope.report.readme.auto_table import auto_groups
from sparsescope.report.readme.render import place_block
from sparsescope.report.readme.selection import _variant_label, selection_rows, summarise
from sparsescope.report.readme.speedups import speedups

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results"
FOLDERS = sorted(p.parent for p in RESULTS.rglob("README.md"))
MODULES = ["sparsescope.cli.results_cmd"]


def _id(folder: Path) -> str:
    return str(folder.relative_to(RESULTS))


def _case(matrix, backend, ms, notes=None, **params):
    return {"matrix": matrix, "backend": backend, "outcome": "ok", "notes": notes or {},
            "params": params, "measurement": {"samples_ms": [ms, ms, ms]}}


# ---- the stages, on made-up cases -------------------------------------------------------------

def test_selection_regret_and_variant_names():
    assert _variant_label("cuda-spmv-delta16", {"tpr": 1, "unroll": 4, "minb": 6}) == \
        "cuda-spmv-delta16[delta16-u4-m6-h1]"
    assert _variant_label("cuda-spmv-blocked16", {"block": 3, "minb": 6, "stage": 4,
                                                  "tpr": 2}) == \
        "cuda-spmv-blocked16[blocked3-t2-dae4-m6-h1]"
    assert _variant_label("cuda-spmv-merge", {"iters": 7}) is None
    table = [{"backend": "cuda-spmv-delta16", "params": {"tpr": 1, "unroll": 4, "minb": 6},
              "label": "d", "predicted_ms": 0.01}]
    (r,) = selection_rows([
        _case("m", "cuda-spmv-delta16[delta16-u4-m6-h1]", 0.020),
        _case("m", "cuda-spmv-sell[sell-u4-m6-h1]", 0.016),
        _case("m", "torch-cusparse-i32", 0.040),
        _case("m", "cuda-spmv-auto", 0.0168, {"selected": "cuda-spmv-sell",
                                             "selection_table": json.dumps(table)}),
        _case("m", "cuda-spmv-auto-rules", 0.020, {"selected": "cuda-spmv-delta16"})])
    assert (r.best_own, r.best_own_us) == ("cuda-spmv-sell[sell-u4-m6-h1]", 16.0)
    assert r.auto_us / r.best_own_us - 1 == pytest.approx(0.05)
    assert r.predicted_first_us == 20.0  # the delta16 variant, predicted fastest
    assert r.best_lib_us / r.auto_us == pytest.approx(40 / 16.8)
    assert r.rules_us / r.best_own_us == pytest.approx(1.25)


def test_selection_rows_take_spmv_cases_and_each_timing_mode_apart():
    """An SpMM run of the same matrix in the folder is another op's (its own kernels and
    libraries are not SpMV's); a throughput run of the matrix is a row of its own."""
    spmv = [_case("m", "cuda-spmv-sell", 0.016), _case("m", "cuda-spmv-auto", 0.0168),
            _case("m", "torch-cusparse-i32", 0.040)]
    spmm = [dict(_case("m", "spmm-cuda-rowgroup", 0.001), op="spmm"),
            dict(_case("m", "spmm-torch-i32", 0.0005), op="spmm")]
    fast = [dict(c, timing_mode="throughput", measurement={"samples_ms": [ms / 2] * 3})
            for c, ms in zip(spmv, (0.016, 0.0168, 0.040), strict=True)]
    rows = selection_rows(spmv + spmm + fast)
    assert [(r.matrix, r.best_own, r.best_lib) for r in rows] == [
        ("m", "cuda-spmv-sell", "torch-cusparse-i32"),
        ("m (throughput)", "cuda-spmv-sell", "torch-cusparse-i32")]
    assert rows[0].best_own_us == pytest.approx(16.0) and rows[1].best_own_us == \
        pytest.approx(8.0)


def test_selection_summary_geomeans_and_the_slower_count():
    cases = []
    for m, own, auto, rules, lib in (("m1", 10.0, 11.0, 10.0, 22.0), ("m2", 10.0, 10.0, 12.1,
                                                                        9.0)):
        cases += [_case(m, "cuda-spmv-sell", own / 1e3), _case(m, "cuda-spmv-auto", auto / 1e3),
                  _case(m, "cuda-spmv-auto-rules", rules / 1e3),
                  _case(m, "torch-cusparse-i32", lib / 1e3)]
    s = summarise(cases)
    # auto's regrets 1.1 and 1.0: geomean sqrt(1.1); auto-rules sqrt(1.21) = 1.1
    assert s.regret_auto == pytest.approx(1.1 ** 0.5)
    assert s.regret_rules == pytest.approx(1.1)
    assert s.slower_than_lib == 1 and s.lowest_matrix == "m2"
    assert s.lowest_over_lib == pytest.approx(0.9)
    assert (s.largest_matrix, s.rules_largest_matrix) == ("m1", "m2")
    assert s.regret_predicted_first is None and s.predicted_first_matrices == 0


def test_speedups_stay_within_a_run():
    s = speedups([_case("g", "lib", 0.4, k=128, layout="row"),
                  _case("g", "own", 0.5, k=128, layout="row"),
                  _case("g", "own[w=2]", 0.32, k=128, layout="row"),
                  _case("g", "own", 0.1, k=8, layout="row")])
    assert s is None  # no baseline of BASELINES
    s = speedups([_case("g", "spmm-torch-i32", 0.4, k=128, layout="row"),
                  _case("g", "own", 0.5, k=128, layout="row"),
                  _case("g", "own[w=2]", 0.32, k=128, layout="row"),
                  _case("g", "own", 0.1, k=8, layout="row")])
    # k = 8 has no baseline: no row (never a ratio across rows or runs)
    assert s.baseline == "spmm-torch-i32" and s.rows == 1
    assert s.geomean == (("own", pytest.approx(0.8), 1), ("own[w=2]", pytest.approx(1.25), 1))


def test_auto_groups_per_k_and_layout():
    cases = [_case("a", "spmm-cuda-auto", 1.0, k=8, layout="row"),
             _case("a", "spmm-torch-i32", 2.0, k=8, layout="row"),
             _case("a", "spmm-cupy-i32", 1.5, k=8, layout="row"),
             _case("b", "spmm-cuda-auto", 1.0, k=8, layout="row"),
             _case("b", "spmm-torch-i32", 0.9, k=8, layout="row"),
             _case("a", "spmm-cuda-auto", 1.0, k=32, layout="col")]   # no library: left out
    auto, groups = auto_groups(cases)
    assert auto == "spmm-cuda-auto"
    first = groups[0]
    assert (first.k, first.layout, first.triples, first.below) == ("8", "row", 2, 1)
    assert first.geomean == pytest.approx((1.5 * 0.9) ** 0.5) and first.min == 0.9
    assert [(g.k, g.layout) for g in groups] == [("8", "row"), ("all", "all"), ("all", "row")]


def test_place_block_keeps_the_hand_written_text():
    text = f"# T\n\nnotes\n\n{BEGIN}\nold\n{END}\n\nmore notes\n"
    assert place_block(text, f"{BEGIN}\nnew\n{END}") == \
        f"# T\n\nnotes\n\n{BEGIN}\nnew\n{END}\n\nmore notes\n"
    assert place_block("# T\n", "B") == "# T\n\nB\n"


def test_a_new_folder_gets_a_readme_with_title_note_and_block(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "env.txt").write_text("NVIDIA H200\n")
    (folder / "probe.json").write_text("[]")
    result = write_readme(folder, title="H200 probe", note="Why it was run.")
    text = (folder / "README.md").read_text()
    assert text.startswith("# H200 probe\n\nWhy it was run.\n\n" + BEGIN)
    assert "NVIDIA H200" in text and "`probe.json`" in text and result.kind == "files"
    # written again: the same text
    assert readme_for(folder).text == text


def test_cli_readme_json_and_check(tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    src = RESULTS / "h200" / "kernels" / "2026-11-25-short-pieces-seed6-part2" / "part2"
    (folder / "part2").mkdir()
    (folder / "part2" / "results.json.xz").write_bytes((src / "results.json.xz").read_bytes())
    assert main(["results", "readme", str(folder), "--check"], modules=MODULES) == 5
    capsys.readouterr()
    assert main(["results", "readme", str(folder), "--title", "T", "--json"],
                modules=MODULES) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "runs" and doc["runs"][0]["path"] == "part2/results.json.xz"
    assert doc["selection"]["lowest_matrix"] == "circuit5M"
    assert main(["results", "readme", str(folder), "--check"], modules=MODULES) == 0


def test_readme_reads_xz_runs_and_analyses_as_gzipped_ones(tmp_path, committed):
    """A folder's runs and analyses kept as ``.json.xz`` are found and read as the gzipped
    ``.json.gz`` ones are (the files reader tells them by their first bytes): the same README
    block but for the names; a damaged ``.json.xz`` is an error naming it, not a file passed
    by."""
    import gzip
    import lzma

    from sparsescope._compressed import read_bytes
    from sparsescope.errors import ResultsFormatError
    from sparsescope.report.readme.files import is_runset, read_json, scan

    run = read_bytes(committed("results/h200/kernels/2026-11-25-short-pieces-seed6-part2/"
                               "part2/results.json"))
    analysis = read_bytes(committed("results/h200/resample/ours2/analysis.json"))
    blocks = {}
    for suffix, pack in ((".json.gz", gzip.compress), (".json.xz", lzma.compress)):
        folder = tmp_path / suffix.strip(".").replace(".", "-")
        (folder / "part2").mkdir(parents=True)
        (folder / "part2" / f"results{suffix}").write_bytes(pack(run))
        (folder / f"analysis{suffix}").write_bytes(pack(analysis))
        files = scan(folder)
        assert [p.name for p in files.runs] == [f"results{suffix}"]
        assert [p.name for p in files.analyses] == [f"analysis{suffix}"] and not files.others
        assert read_json(files.runs[0]) == json.loads(run)
        blocks[suffix] = readme_for(folder).block.replace(suffix, ".json")
    assert blocks[".json.xz"] == blocks[".json.gz"]
    assert "part2/results.json" in blocks[".json.xz"] and "circuit5M" in blocks[".json.xz"]
    damaged = tmp_path / "damaged.json.xz"
    damaged.write_bytes(lzma.compress(run)[:200])
    with pytest.raises(ResultsFormatError, match=r"damaged.json.xz: cannot read: damaged xz"):
        is_runset(damaged)


# ---- every committed folder -------------------------------------------------------------------

@pytest.mark.parametrize("folder", FOLDERS, ids=_id)
def test_every_committed_readme_block_is_what_the_folders_files_give(folder, tmp_path):
    """Written again (into tmp_path) from the committed files, the README is the committed
    one: every number of its generated block is reproduced."""
    committed = (folder / "README.md").read_text(encoding="utf-8")
    assert committed.count(BEGIN) == 1 and committed.count(END) == 1, "no generated block"
    out = tmp_path / "README.md"
    write_readme(folder, out=out)
    assert out.read_text(encoding="utf-8") == committed


def _prose(text: str) -> str:
    """The README's hand-written text: everything outside the generated block."""
    return text[:text.find(BEGIN)] + text[text.find(END) + len(END):]


SELECTION_FOLDERS = [f for f in FOLDERS if "auto over the best cuSPARSE configuration:"
                     in (f / "README.md").read_text(encoding="utf-8")]


def _pct(text: str) -> float:
    return float(text.replace(" %", ""))


@pytest.mark.parametrize("folder", SELECTION_FOLDERS, ids=_id)
def test_selection_headlines_the_readme_quotes(folder):
    """The kernel-selection numbers the README's own text quotes, computed again from the
    committed part files."""
    prose = _prose((folder / "README.md").read_text(encoding="utf-8"))
    s = readme_for(folder).selection
    m = re.search(r"auto over the best cuSPARSE configuration: ([\d.]+)x geomean, lowest "
                  r"([\d.]+)x \(([^)]+)\)", prose)
    assert (f"{s.auto_over_lib:.2f}", f"{s.lowest_over_lib:.2f}", s.lowest_matrix) == \
        m.groups()
    m = re.search(r"auto's largest regret: ([+-][\d.]+ %) \(([^)]+)\); auto-rules': "
                  r"([+-][\d.]+ %) \(([^)]+)\)", prose)
    assert m, "no largest-regret line"
    assert _pct(m[1]) == round(100 * (s.largest_regret - 1), 1) and m[2] == s.largest_matrix
    assert _pct(m[3]) == round(100 * (s.rules_largest - 1), 1) and m[4] == \
        s.rules_largest_matrix
    m = re.search(r"Geomean regret over the (\d+) matrices: auto ([+-][\d.]+ %) \(\d+ "
                  r"matrices\); auto-rules ([+-][\d.]+ %) \(\d+ matrices\); the fastest "
                  r"prediction alone ([+-][\d.]+ %) \((\d+) matrices\)", prose)
    if m:  # READMEs written since the line was added
        assert int(m[1]) == len(s.rows)
        assert _pct(m[2]) == round(100 * (s.regret_auto - 1), 1)
        assert _pct(m[3]) == round(100 * (s.regret_rules - 1), 1)
        assert _pct(m[4]) == round(100 * (s.regret_predicted_first - 1), 1)
        assert int(m[5]) == s.predicted_first_matrices
    m = re.search(r"Matrices where auto is slower than the best cuSPARSE configuration: "
                  r"(\d+) of (\d+)", prose)
    if m:
        assert (int(m[1]), int(m[2])) == (s.slower_than_lib, len(s.rows))


AUTO_FOLDERS = [f for f in FOLDERS if "| k | layout | triples | geomean | min | below 0.95x |"
                in _prose((f / "README.md").read_text(encoding="utf-8"))]


@pytest.mark.parametrize("folder", AUTO_FOLDERS, ids=_id)
def test_auto_against_the_library_table_the_readme_quotes(folder):
    """Every row of the README's own "auto against the best cuSPARSE configuration" table and
    its issue-18 target line, computed again from the committed results file."""
    prose = _prose((folder / "README.md").read_text(encoding="utf-8"))
    result = readme_for(folder)
    start = prose.index("| k | layout | triples | geomean | min | below 0.95x |")
    quoted = []
    for line in prose[start:].splitlines()[2:]:
        if not line.startswith("| "):
            break
        quoted.append(line)
    assert quoted
    block_rows = set(result.block.splitlines())
    assert [row for row in quoted if row not in block_rows] == []
    m = re.search(r"geomean >= 1.3x in (\d+ of \d+) \(k, layout\) groups; (\d+) triples below "
                  r"0.95x", prose)
    if m:
        assert f"geomean >= 1.3x in {m[1]} (k, layout) groups; {m[2]} triples below 0.95x" \
            in result.block


def _columns(lines: list[str]) -> dict[tuple[str, str], str]:
    """{(case, metric label): cell} of a profiled-cases table (header row first)."""
    names = [c.strip().strip("`") for c in lines[0].strip("|").split("|")[1:]]
    cells = {}
    for line in lines[2:]:
        parts = [c.strip() for c in line.strip().strip("|").split("|")]
        for name, cell in zip(names, parts[1:], strict=True):
            cells[(name, parts[0])] = cell
    return cells


def _table_after(text: str, head: str) -> list[str]:
    lines = text[text.index(head):].splitlines()
    out = []
    for line in lines:
        if not line.startswith("|"):
            if out:
                break
            continue
        out.append(line)
    return out


PROFILE_FOLDERS = [f for f in FOLDERS if "| metric | `" in _prose(
    (f / "README.md").read_text(encoding="utf-8"))]


@pytest.mark.parametrize("folder", PROFILE_FOLDERS, ids=_id)
def test_profiled_cases_table_the_readme_quotes(folder):
    """Every cell of the README's own per-case ncu table (time, DRAM, L2, L1, instructions,
    occupancy, top stalls), read again from the committed NAME.json and NAME_raw.csv.xz."""
    prose = _prose((folder / "README.md").read_text(encoding="utf-8"))
    quoted = _columns(_table_after(prose, "| metric | `"))
    block = readme_for(folder).block
    again = _columns(_table_after(block, "| metric | `"))
    assert len(quoted) >= 20
    assert {k: again.get(k) for k in quoted} == quoted


def test_profiled_case_main_kernel_from_a_committed_raw_export():
    from sparsescope.report.readme.profile_cases import _rows, main_kernel, number
    from sparsescope.sass.source_page import read_export_text

    folder = RESULTS / "h200/profile/2026-11-25-cases"
    row = main_kernel(_rows(read_export_text(
        folder / "rmat-29.spmv0.cupy-cusparse-i32_raw.csv.xz")))
    assert row["Kernel Name"].startswith("void cusparse::csrmv_v3_kernel")
    assert number(row["dram__bytes_read.sum"]) == pytest.approx(64_522_240)
    assert number("1,234.5") == 1234.5


def test_profiled_cases_read_xz_exports_as_gzipped_ones(tmp_path):
    """The per-case ncu table reads the raw exports as results folders keep them, ``.xz`` (or
    ``.gz`` as before): the committed cases laid out both ways give the same table; a damaged
    xz export is an error naming it."""
    from sparsescope._compressed import compress, read_bytes, without_compression
    from sparsescope.errors import UsageError
    from sparsescope.report.readme.profile_cases import profiled_cases, table

    folders = {kind: tmp_path / kind for kind in ("gz", "xz")}
    for kind, folder in folders.items():
        folder.mkdir()
        for path in (RESULTS / "h200/profile/2026-11-25-cases").iterdir():
            name = without_compression(path.name)
            if name.endswith("_raw.csv"):
                (folder / f"{name}.{kind}").write_bytes(compress(read_bytes(path), f"x.{kind}"))
            elif name.endswith(".json"):
                (folder / path.name).write_bytes(path.read_bytes())
    cases = profiled_cases(folders["gz"])
    assert len(cases) >= 4
    assert table(profiled_cases(folders["xz"])) == table(cases)
    raw = folders["xz"] / "rmat-29.spmv0.cupy-cusparse-i32_raw.csv.xz"
    raw.write_bytes(raw.read_bytes()[:-40])
    with pytest.raises(UsageError, match="damaged xz data") as err:
        profiled_cases(folders["xz"])
    assert str(err.value).startswith(f"{raw}: ")


def test_committed_runs_without_stored_case_models_get_them_computed(capsys):
    """The committed RunSets leave out each case's CaseModel where the product computes the
    same one (``with_case_models``; checked case by case when they were taken out): the report
    and ``results show`` compute them for every timed case."""
    from sparsescope.results.case_models import with_case_models
    from sparsescope.results.io import read_runset

    path = RESULTS / "h200/kernels/2026-11-25-selection/part2/results.json.xz"
    runset = read_runset(path)
    assert all(c.model is None for c in runset.cases)
    filled = with_case_models(runset)
    assert all(c.model is not None for c in filled.cases if c.outcome == "ok")
    assert main(["results", "show", str(path), "--json"],
                modules=["sparsescope.cli.results_cmd"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert len(rows) == len(runset.cases)
