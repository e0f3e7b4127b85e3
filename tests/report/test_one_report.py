"""One report for every op: a run holding SpMV, SpMM and row-slicing cases renders through
``write_report`` with each op's registered section in the registry's order; no op branches on
a name in the source; and re-rendering the committed H200 results (schema 1, migrated on read)
gives the tables committed beside them."""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
import subprocess
from pathlib import Path

import pytest

from sparsescope import registry
from sparsescope._compressed import kept_file, read_json
from sparsescope.analyze.diagnose import stall_name
from sparsescope.report.labels import label
from sparsescope.report.write import write_report
from sparsescope.results.io import read_runset
from sparsescope.timing.types import TimingConfig

REPO = Path(__file__).resolve().parents[2]
# the report each committed schema-1 run was first rendered to (its tables and Markdown), kept
# compressed beside the tests: results/ keeps no re-creatable report output
RENDERED = REPO / "tests" / "results" / "fixtures" / "rerender"
FAST = TimingConfig(warmups=0, repeats=2, flush_l2=False)


@pytest.fixture(scope="module", autouse=True)
def fake_specs():
    """The real spec table here (the folder's conftest swaps in three made-up GPUs): the
    committed reports' cross-GPU tables and ``api.run`` read it."""
    yield None


@pytest.fixture()
def quick_figures(monkeypatch):
    """Figures are drawn but not encoded (a PNG signature only): the tables and the text are
    under test here, and encoding is most of a report's time."""
    import matplotlib.figure

    def savefig(self, fname, *args, **kwargs):
        data = b"\x89PNG\r\n\x1a\n"
        if hasattr(fname, "write"):
            fname.write(data)
        else:
            Path(fname).write_bytes(data)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)


@pytest.fixture()
def cpu_ceilings(monkeypatch):
    """A fixed host measurement instead of ~2 s of copy and GEMM runs per ``api.run``."""
    from sparsescope.hardware import cpu_ceilings as module
    from sparsescope.hardware.types import MeasuredCeilings

    measured = MeasuredCeilings(device="test CPU", copy_bw_gb_s=20.0, read_bw_gb_s=25.0,
                                fp32_gflops=200.0)
    monkeypatch.setattr(module, "measure_cpu_ceilings", lambda *a, **k: measured)


def _headings(markdown: str, level: int = 2) -> list[str]:
    mark = "#" * level + " "
    return [line[len(mark):] for line in markdown.splitlines() if line.startswith(mark)]


def _three_op_run(tmp_path: Path):
    """SpMV, SpMM and row slicing on tiny CPU suites, merged into one RunSet (cases of the
    three ops interleaved: the report orders them, not the run)."""
    from sparsescope import api

    runs = {
        "spmv": api.run(suite="seed6", scale=0.002, backends=["scipy-cpu"], timing=FAST,
                        out_dir=tmp_path / "spmv", store=False, op="spmv"),
        "spmm": api.run(suite="dlmc3", scale=0.1, backends=["spmm-scipy-cpu"], timing=FAST,
                        out_dir=tmp_path / "spmm", store=False, op="spmm",
                        op_params={"k": [1, 8]}),
        "slice": api.run(suite="slice003", scale=0.05, backends=["slice-scipy-cpu"],
                         timing=FAST, out_dir=tmp_path / "slice", store=False, op="slice",
                         op_params={"rows_selected": [16]}),
    }
    sets = {op: out.runset for op, out in runs.items()}
    cases = (*sets["slice"].cases, *sets["spmv"].cases, *sets["spmm"].cases)
    matrices = tuple({m.name: m for s in sets.values() for m in s.matrices}.values())
    return dataclasses.replace(sets["spmv"], cases=cases, matrices=matrices), sets


def test_one_report_for_spmv_spmm_and_slice(tmp_path, quick_figures, cpu_ceilings):
    run, parts = _three_op_run(tmp_path)
    assert {c.op for c in run.cases} == {"spmv", "spmm", "slice"}
    assert all(c.outcome == "ok" for c in run.cases)
    paths = write_report(run, tmp_path / "report", progress=False)
    md = paths.markdown.read_text()

    titles = [registry.OPS[op].title for op in registry.OPS]
    assert titles[:3] == ["SpMV", "SpMM", "CSR row slicing"]
    assert md.startswith("# SpMV, SpMM, CSR row slicing performance report: ")
    sections = _headings(md)
    assert sections[:4] == ["1. Executive summary", "2. Methodology",
                            "3. Predicted against measured",
                            "4. Seed 000's claims against this run"]
    # SpMV's sections, then SpMM's, then row slicing's, numbered on, then the appendix; each
    # op's first is its cases' predicted against measured time
    spmv = ["Predicted against measured", "Seed 000's claims against this run",
            "Timing and throughput", "Physical floor and roofline",
            "Little's law and latency sensitivity", "Gap decomposition",
            "Decoupled access-execute (DAE) what-if", "INT32 against INT64 indices",
            "Skipped and failed cases"]
    spmm = ["SpMM: predicted against measured", "SpMM: time, bandwidth and % of bound",
            "SpMM: arithmetic intensity against k", "SpMM: skipped and failed cases"]
    slicing = ["CSR row slicing: predicted against measured",
               "Slice: time, bandwidth and % of bound",
               "Slice: which bound the measurements support",
               "CSR row slicing: skipped and failed cases"]
    expected = [f"{i}. {h}" for i, h in enumerate(spmv + spmm + slicing, start=3)]
    assert sections[2:] == expected + ["Appendix: provenance and files"]
    # one executive-summary line per op, in the same order
    summary = md[md.index("## 1. Executive summary"):md.index("## 2. Methodology")]
    spmv_at = summary.index("timed SpMV case(s) reach")
    assert spmv_at < summary.index("- **SpMM:** ") < summary.index("- **CSR row slicing:** ")
    n_spmm, n_slice = len(parts["spmm"].cases), len(parts["slice"].cases)
    assert (f"- **SpMM:** {n_spmm} case(s) on 3 matrices with 1 backend(s): {n_spmm} timed, "
            "0 skipped, 0 failed.") in summary
    assert (f"- **CSR row slicing:** {n_slice} case(s) on 3 matrices with 1 backend(s): "
            f"{n_slice} timed, 0 skipped, 0 failed.") in summary
    # the timing protocol counts every op's timed cases
    assert f"0 of {len(run.cases)} timed cases flushed" in md

    tables = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "report" / "tables")
              .glob("*.json")}
    assert {"timing", "ops_spmm", "ops_slice", "matrices", "device"} <= set(tables)
    # each op's tables hold that op's cases only
    assert {r["backend"] for r in tables["timing"]["rows"]} == {"scipy-cpu"}
    assert len(tables["timing"]["rows"]) == len(parts["spmv"].cases)
    assert [(r["matrix"], r["k"]) for r in tables["ops_spmm"]["rows"]] == [
        (c.matrix, c.params.k) for c in parts["spmm"].cases]
    assert [r["rows_selected"] for r in tables["ops_slice"]["rows"]] == [
        c.params.rows_selected for c in parts["slice"].cases]
    assert len(tables["matrices"]["rows"]) == 12                   # 6 + 3 + 3, each once
    # and the same run rendered a second time gives the same tables
    again = write_report(run, tmp_path / "again", progress=False)
    assert {p.name: p.read_text() for p in again.tables} == {
        p.name: (tmp_path / "report" / "tables" / p.name).read_text() for p in again.tables}


def _grep(pattern: str, *flags: str) -> str:
    done = subprocess.run(["grep", "-rn", *flags, pattern, "src/"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr                    # 1: nothing found
    return done.stdout


def test_no_op_name_branches_in_the_source():
    # an op's behaviour is its registry entry and its classes, never a test of its name
    found = _grep(r'op *[!=]= *"(spmv|spmm|slice)"', "-E")
    assert found == "", f"op-name branches under src/:\n{found}"
    # parameters and derived counts are typed records, not "op.*" notes
    found = _grep(r'notes\["op\.')
    assert found == "", f"op.* notes read under src/:\n{found}"


def _committed_results() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "results/h200"], cwd=REPO, capture_output=True,
                            text=True)
    return [line for line in listed.stdout.splitlines()
            if line.endswith(("/results.json", "/results.json.xz", "/results.json.gz"))]


def _numbers(value, path=""):
    """(path, number) of every number in a JSON value (booleans are not numbers here)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _numbers(item, f"{path}[{i}]")


def _profiles_of(folder: Path):
    """The ncu profiles a committed op run was reported with (device_ops.sh's ``report``)."""
    raw, ran = folder / "profiles" / "ncu_raw.csv.xz", kept_file(folder / "profiles" / "ran.json")
    if not raw.is_file() or ran is None:
        return (), None
    from sparsescope.profile import load
    from sparsescope.target import split_marked_profiles

    return split_marked_profiles(load(raw), read_json(ran))


#: What the device table says states a figure (``report.run_tables.stated_by``).
STATED_BY = {"Stated by", "datasheet", "OS", "estimate", "derived", "device query", "convention",
             "—"}
#: Cells the report words for a reader now (issue 34): the device table's headers and kind.
REWORDED = {"Datasheet / spec": "Stated (not measured)", "SMs (cores on a CPU)": "SMs",
            "gpu": "GPU", "cpu": "CPU"}


def relabelled(cell: str) -> set[str]:
    """A committed cell as the report may word it now: internal identifiers through their human
    label (``mlp_gain``, ``ceiling method: copy_bw_gb_s``), a stall as ncu names it
    (``long_scoreboard`` -> ``Long Scoreboard``), case parameters as words (``k=8 layout=row``
    -> ``k 8, layout row``; in a profile's label ``k 8 layout row: kernel``)."""
    if cell in REWORDED:
        return {REWORDED[cell]}
    prefix, _, name = cell.rpartition(": ")
    if prefix in ("library", "ceiling method"):
        return {f"{prefix}: {label(name)}"}
    if re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", cell):
        return {label(cell), stall_name(cell)}
    words = re.sub(r"(\w+)=(\S+)", lambda m: f"{label(m.group(1))} {m.group(2)}", cell)
    if re.fullmatch(r"(\w+=\S+ ?)+", cell):
        return {", ".join(f"{label(k)} {v}" for k, v in re.findall(r"(\w+)=(\S+)", cell))}
    return {words}


@pytest.mark.parametrize("results", ["results/h200/seed6/results.json",
                                     "results/h200/spmm/results.json.xz",
                                     "results/h200/slice/results.json.xz"])
def test_rerendering_a_committed_schema_1_run_gives_its_tables(results, tmp_path,
                                                                quick_figures):
    if results not in _committed_results():
        pytest.skip(f"{results} is not committed")
    folder = (REPO / results).parent
    assert read_json(REPO / results)["schema_version"] == 1
    runset = read_runset(REPO / results)                    # migrated to the current records
    assert runset.schema_version == 3
    assert not any(k.startswith("op.") for c in runset.cases for k in c.notes)
    profiles, labels = _profiles_of(folder)
    paths = write_report(runset, tmp_path / "new", progress=False, profiles=profiles,
                         labels=labels)

    rendered = RENDERED / folder.name
    with gzip.open(rendered / "tables.json.gz", "rt", encoding="utf-8") as f:
        committed = json.load(f)
    if committed:
        compared = 0
        for name, old_table in committed.items():
            new_path = tmp_path / "new" / "tables" / name
            assert new_path.is_file(), f"{name} was not rendered"
            old = dict(_numbers(old_table))
            new = dict(_numbers(json.loads(new_path.read_text())))
            # every committed number is rendered again, unchanged (the spmm and slice runs are
            # kept compacted, their floats to 7 significant digits: what is computed from them
            # within 1e-6 of the first rendering); columns added since (the CSR-equivalent
            # throughput) may come on top
            assert {k: new.get(k) for k in old} == pytest.approx(old, rel=1e-6), name
            compared += len(old)
        assert compared > 500
    else:  # nothing committed to compare with: the rendering is at least deterministic
        twice = write_report(runset, tmp_path / "twice", progress=False, profiles=profiles,
                             labels=labels)
        assert [p.read_text() for p in twice.tables] == [p.read_text() for p in paths.tables]

    # every table row of the committed report is in the new one (the provenance table names
    # the schema the records are in now)
    with gzip.open(rendered / "report.md.gz", "rt", encoding="utf-8") as f:
        old_md = f.read()
    new_md = paths.markdown.read_text()
    rows = [line for line in old_md.splitlines() if line.startswith("| ")]
    assert len(rows) > 100
    changed = [r for r in rows if r not in new_md.splitlines()]
    assert "| schema version | 1 |" in changed
    changed.remove("| schema version | 1 |")
    # a DAE speedup below 1 is no longer printed as a speedup: "0.99x" reads "no gain: limited
    # by the 65.7 % Little's-law ceiling" now, every other cell of the row unchanged
    below_one = re.compile(r"0\.\d\dx")

    def cells(row: str) -> list[str]:
        return row[2:-2].split(" | ")

    def renders(old_row: str, new_row: str) -> bool:
        old_cells, new_cells = cells(old_row), [c.replace("`", "") for c in cells(new_row)]
        if len(new_cells) == len(old_cells) + 1 > 4 and new_cells[3] in STATED_BY:
            del new_cells[3]  # the device table labels each stated figure now (issue 34)
        return len(old_cells) == len(new_cells) and all(
            o == n or n in relabelled(o)
            or (below_one.fullmatch(o) and n.startswith("no gain: limited by "))
            for o, n in zip(old_cells, new_cells, strict=True))

    def gained_memory_bound(old_row: str, new_row: str) -> bool:
        # SpMM's timed table gained three columns before "rel err" (memory bound ms, by, %)
        # and "precision" after it (float32 for every kernel of that run)
        old_cells, new_cells = cells(old_row), cells(new_row)
        return (len(new_cells) == len(old_cells) + 4 and new_cells[:len(old_cells) - 1]
                == old_cells[:-1] and new_cells[-2] == old_cells[-1]
                and new_cells[-1] in ("precision", "float32"))

    for row in changed:
        assert any(renders(row, line) or gained_memory_bound(row, line)
                   for line in new_md.splitlines()), row
    assert "| schema version | 3 |" in new_md
    # e.g. the first ok case's time, as the report formats it (SpMV's timing table: 4
    # decimals; the op tables: 4 significant digits)
    first = next(c for c in runset.cases if c.outcome == "ok")
    formatted = {f"| {first.time_ms:.4f} |", f"| {first.time_ms:.4g} |"}
    hits = [line for line in rows if line.startswith(f"| {first.matrix}")
            and first.backend in line and any(cell in line for cell in formatted)]
    assert hits
    new_lines = new_md.splitlines()
    assert all(line in new_lines or any(gained_memory_bound(line, n) for n in new_lines)
               for line in hits)
