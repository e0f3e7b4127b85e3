"""The README's generated block, and the README with the block in place.

The block sits between :data:`BEGIN` and :data:`END`; writing the README again replaces it and
keeps every other line (the title, the hand-written notes). A folder without a README gets one:
its title, its note, then the block.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sparsescope.report.break_even import backend_title
from sparsescope.report.readme.auto_table import AutoGroup, auto_groups
from sparsescope.report.readme.facts import RunFacts, run_facts
from sparsescope.report.readme.files import FolderFiles, read_json, scan
from sparsescope.report.readme.profile_cases import profiled_cases
from sparsescope.report.readme.profile_cases import table as profile_table
from sparsescope.report.readme.selection import SelectionSummary, summarise
from sparsescope.report.readme.speedups import Speedups, speedups

BEGIN = ("<!-- sparsescope results readme: generated from this folder's files; "
         "`sparsescope results readme FOLDER` writes it again -->")
END = "<!-- end of the generated block -->"
RECREATED = ("What the product re-creates from these files is not kept here: the report "
             "(`sparsescope report RESULTS --out DIR`: report.md, report.html, tables/, "
             "figures/) and the case listing (`sparsescope results show RESULTS`, once "
             "show.txt).")


@dataclass(frozen=True)
class ReadmeResult:
    """A folder's README as written from its files."""

    folder: Path
    kind: str
    """``runs``, ``analyze`` or ``files`` (:attr:`FolderFiles.kind`)."""
    runs: tuple[RunFacts, ...]
    selection: SelectionSummary | None
    """auto's selection scored over every run of the folder, when auto ran."""
    speedups: tuple[tuple[str, Speedups], ...]
    """(run file, its speedups over its baseline) of each run that timed a baseline."""
    block: str
    """The generated block, :data:`BEGIN` to :data:`END`."""
    text: str
    """The whole README."""


def _pct(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{100 * (ratio - 1):+.1f} %"


def _runs_table(runs: tuple[RunFacts, ...]) -> list[str]:
    lines = ["| file | run | created (UTC) | commit | device | driver | ok | skipped | failed "
             "| matrices | backends |", "|---|---|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in runs:
        lines.append(f"| `{r.path}` | {r.run_id} | {r.created_utc} | {r.git_commit[:7]} | "
                     f"{r.device} | {r.driver} | {r.ok} | {r.skipped} | {r.failed} | "
                     f"{r.matrices} | {len(r.backends)} |")
    lines.append("")
    for r in runs:
        lines += [f"`{r.path}`: {r.versions}", "", "```", r.command or "(no command recorded)",
                  "```", ""]
    return lines


def _selection_lines(s: SelectionSummary) -> list[str]:
    n = len(s.rows)
    slower = [r for r in s.rows if r.best_lib_us < r.auto_us]
    lines = ["### Kernel selection", "",
             f"- matrices with auto, an own kernel and a library timed: {n}",
             f"- geomean regret of auto against the fastest own variant: {_pct(s.regret_auto)}",
             f"- largest regret of auto: {_pct(s.largest_regret)} ({s.largest_matrix}); "
             f"of auto-rules: {_pct(s.rules_largest)} ({s.rules_largest_matrix or '-'})",
             f"- geomean regret of auto-rules: {_pct(s.regret_rules)}",
             f"- geomean regret of the fastest prediction alone: "
             f"{_pct(s.regret_predicted_first)} ({s.predicted_first_matrices} matrices)",
             f"- auto over the best library configuration: {s.auto_over_lib:.2f}x geomean, "
             f"lowest {s.lowest_over_lib:.2f}x ({s.lowest_matrix})",
             f"- matrices where auto is slower than the best library: {len(slower)} of {n}", ""]
    return lines


def _auto_lines(auto: str, groups: tuple[AutoGroup, ...]) -> list[str]:
    per = [g for g in groups if g.k != "all"]
    met = sum(g.geomean >= 1.3 for g in per)
    lines = [f"### `{auto}` against the best library configuration (fastest library median / "
             "auto's median, per (matrix, k, layout) triple)", "",
             "| k | layout | triples | geomean | min | below 0.95x |",
             "|---|---|---:|---:|---:|---:|"]
    lines += [f"| {g.k} | {g.layout} | {g.triples} | {g.geomean:.3f} | {g.min:.3f} | "
              f"{g.below} |" for g in groups]
    return lines + ["", f"- geomean >= 1.3x in {met} of {len(per)} (k, layout) groups; "
                        f"{sum(g.below for g in per)} triples below 0.95x", ""]


def _speedup_lines(found: tuple[tuple[str, Speedups], ...]) -> list[str]:
    lines = ["### Geomean speedup over the run's baseline (baseline median / backend median, "
             "per matrix and op parameters, within one run)", ""]
    for path, s in found:
        cells = "; ".join(f"{backend_title(b)} {g:.2f}x ({n})" for b, g, n in s.geomean)
        lines += [f"- `{path}` over `{s.baseline}` ({s.rows} rows): {cells}"]
    return lines + [""]


def _analysis_lines(files: FolderFiles) -> list[str]:
    lines = ["| analysis | version | time ms | floor ms | findings | first of the roadmap |",
             "|---|---|---:|---:|---:|---|"]
    for path in files.analyses:
        data = read_json(path)
        ev = data.get("evidence") or {}
        roadmap = data.get("roadmap") or []
        first = roadmap[0]["rule"] if roadmap else "-"
        time_ms, floor_ms = ev.get("time_ms"), ev.get("floor_ms")
        lines.append(f"| `{path.relative_to(files.folder)}` | {data.get('version', '')} | "
                     f"{'-' if time_ms is None else f'{time_ms:.4g}'} | "
                     f"{'-' if floor_ms is None else f'{floor_ms:.4g}'} | "
                     f"{len(data.get('findings') or [])} | {first} |")
    return lines + [""]


def _file_lines(files: FolderFiles) -> list[str]:
    names = [str(p.relative_to(files.folder)) for p in files.others]
    if not names:
        return []
    return ["Other files: " + ", ".join(f"`{n}`" for n in names) + ".", ""]


def generated_block(folder: str | Path) -> tuple[str, FolderFiles, tuple[RunFacts, ...],
                                                 SelectionSummary | None,
                                                 tuple[tuple[str, Speedups], ...]]:
    """The block of ``folder`` and what it was made from."""
    files = scan(folder)
    runs = tuple(run_facts(p, files.folder) for p in files.runs)
    cases: list[dict] = []
    found: list[tuple[str, Speedups]] = []
    for p in files.runs:
        these = read_json(p)["cases"]
        cases += these
        s = speedups(these)
        if s is not None and s.geomean:
            found.append((str(p.relative_to(files.folder)), s))
    selection = summarise(cases) if cases else None
    lines = [BEGIN, "", "## From this folder's files", ""]
    if files.env:
        lines += ["env.txt:", "", "```", files.env, "```", ""]
    if runs:
        lines += _runs_table(runs)
        lines += [RECREATED, ""]
    if selection is not None:
        lines += _selection_lines(selection)
    auto, groups = auto_groups(cases) if cases else ("", ())
    if groups:
        lines += _auto_lines(auto, groups)
    if found:
        lines += _speedup_lines(tuple(found))
    if files.analyses:
        lines += _analysis_lines(files)
    profiled = profiled_cases(files.folder)
    if profiled:
        lines += ["### Profiled cases (ncu; each case's main kernel: the first launch of the "
                  "kernel with the longest launch)", "", *profile_table(profiled), ""]
    lines += _file_lines(files)
    lines.append(END)
    return "\n".join(lines), files, runs, selection, tuple(found)


def place_block(text: str, block: str) -> str:
    """``text`` with its generated block replaced by ``block`` (appended when it has none)."""
    start, end = text.find(BEGIN), text.find(END)
    if start >= 0 and end > start:
        return text[:start] + block + text[end + len(END):]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def readme_for(folder: str | Path, *, title: str = "", note: str = "") -> ReadmeResult:
    """``folder``'s README with the block written from its files: the committed README's own
    text kept, or, for a folder without one, ``title`` and ``note`` before the block."""
    folder = Path(folder)
    block, files, runs, selection, found = generated_block(folder)
    readme = folder / "README.md"
    if readme.is_file():
        text = place_block(readme.read_text(encoding="utf-8"), block)
    else:
        head = [f"# {title or folder.name}", ""] + ([note, ""] if note else [])
        text = "\n".join(head) + "\n" + block + "\n"
    return ReadmeResult(folder, files.kind, runs, selection, found, block, text)


def write_readme(folder: str | Path, *, title: str = "", note: str = "",
                 out: str | Path | None = None) -> ReadmeResult:
    """Write ``folder``'s README (to ``out`` when given, else ``folder/README.md``),
    atomically."""
    from sparsescope._atomic import write_text_atomic

    result = readme_for(folder, title=title, note=note)
    target = Path(out) if out is not None else Path(folder) / "README.md"
    os.makedirs(target.parent, exist_ok=True)
    write_text_atomic(target, result.text)
    return result
