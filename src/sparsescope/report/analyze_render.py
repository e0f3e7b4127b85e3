"""Report of an analysis (and of a scored series of versions): Markdown, and self-contained HTML
through the report stage's Markdown converter and stylesheet.

Written files: ``analysis.json`` (the result), ``report.md``, ``report.html``; for a series,
``scores.json``, ``report.md`` and ``report.html``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sparsescope.analyze.records import AnalysisResult, Finding, Location, Score, to_jsonable


def _f(x, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if x == 0:
            return "0"
        if abs(x) >= 1000:
            return f"{x:,.0f}"
        return f"{x:.{digits}g}" if abs(x) < 1 else f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return str(x)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    if not rows:
        return "*(none)*"
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f} ms"


def render_analysis(result: AnalysisResult) -> str:
    """The Markdown report of one analysis."""
    ev = result.evidence
    out = [f"# sparsescope analyze: `{result.workload}`"
           + (f" ({result.version})" if result.version else "")]
    out += ["## Summary", "\n".join(_summary_lines(result))]
    if ev.notes:
        out.append("\n".join(f"> {n}" for n in ev.notes))
    out += ["## Kernels", _kernels_table(result)]
    out.append("## Bottleneck")
    out += _bottleneck_lines(result)
    out += _roadmap_section(result)
    out.append("## Findings")
    for f in result.findings:
        out += _finding_blocks(f)
    out.append(f"---\nsparsescope {result.sparsescope_version}, commit {result.git_commit}, "
               f"{result.created_utc}" + (f"; `{result.command}`" if result.command else ""))
    return "\n\n".join(out) + "\n"


def _summary_lines(result: AnalysisResult) -> list[str]:
    """The Summary bullets: device, time, bytes and floor, then each figure the evidence has."""
    ev = result.evidence
    d = ev.device
    summary = [
        f"- Device: {d.name} ({d.sm_count} SMs, {d.peak_bw_gb_s:,.0f} GB/s peak, "
        f"{d.dram_latency_ns:.0f} ns DRAM latency; {d.source})",
        f"- Time: {_ms(ev.time_ms)} ({ev.time_source})",
        f"- Ideal bytes: {ev.ideal_bytes:,} ({ev.bytes_source}); floor {_ms(ev.floor_ms)}"
        if ev.ideal_bytes else "- Ideal bytes: not given (no floor)",
    ]
    if ev.time_ms and ev.floor_ms:
        summary.append(f"- Gap to the floor: {ev.time_ms / ev.floor_ms:.2f}x "
                       f"({100 * ev.floor_ms / ev.time_ms:.1f} % of peak bandwidth)")
    if ev.ideal_flops and ev.time_ms:
        summary.append(f"- Ideal flops: {ev.ideal_flops:,} "
                       f"({ev.ideal_flops / ev.time_ms / 1e6:,.1f} GFLOP/s)")
    if ev.correctness:
        c = ev.correctness
        summary.append(f"- Correctness: rel. error {c.get('rel_err', float('nan')):.3g} "
                       f"against the reference (tolerance {c.get('tolerance', 0):.3g}): "
                       f"{'passed' if c.get('passed') else 'FAILED'}")
    if ev.timing:
        t = ev.timing
        summary.append(f"- Timing protocol: {t.get('clock', '?')}, {t.get('warmups', '?')} "
                       f"warm-ups, {t.get('statistic', 'median')} of {t.get('repeats', '?')}, "
                       f"L2 flush {t.get('flushed', '?')}")
    if result.combined_speedup:
        summary.append(f"- Every roadmap step applied: predicted {result.combined_speedup:.2f}x")
    return summary


def _kernels_table(result: AnalysisResult) -> str:
    """One row per kernel, largest time share first, with the bound its bottleneck names. A
    kernel's share of the GPU time is shown only where a time is behind it (a profile, a
    timing breakdown): the even split static evidence assumes is no measurement."""
    timed = [k for k in result.evidence.kernels if k.time_ms is not None]
    table = _table(
        ["kernel", "time/call", "share of GPU time", "launches", "grid x block", "registers",
         "bound"],
        [[f"`{k.name}`", _ms(k.time_ms),
          f"{100 * k.time_share:.1f} %" if k.time_ms is not None else "-", k.launches,
          f"{k.grid_blocks or '-'} x {k.block_threads or '-'}",
          (k.static.registers if k.static and k.static.registers else
           (k.profile.registers if k.profile else "-")),
          next((b.bound for b in result.bottlenecks if b.kernel == k.name), "-")]
         for k in sorted(result.evidence.kernels, key=lambda k: -k.time_share)])
    if len(timed) < len(result.evidence.kernels):
        table += ("\n\nShare of GPU time: not known for a kernel without a time (static "
                  "evidence only); a profile (`--from-profile`) or a measured run gives it.")
    return table


#: How the Bottleneck line names the numbers behind a verdict (keys carry their units).
NUMBER_LABELS = {
    "achieved_bw_gb_s": "achieved", "bw_pct_of_peak": "DRAM", "dram_bytes": "DRAM bytes",
    "ideal_bytes": "ideal bytes", "l2_throughput_pct": "L2", "l1_throughput_pct": "L1",
    "sm_throughput_pct": "SM", "issue_active_pct": "issue active",
    "flops_pct_of_peak": "FP32", "required_warps_per_sm": "warps/SM needed",
    "active_warps_per_sm": "warps/SM active", "dram_latency_ns": "DRAM latency",
    "littles_law_ceiling_pct": "Little's-law ceiling",
}
_UNITS = (("_gb_s", " GB/s"), ("_pct_of_peak", " % of peak"), ("_pct", " %"), ("_ns", " ns"),
          ("_bytes", " B"))


def number_label(key: str) -> str:
    """``bw_pct_of_peak`` -> ``DRAM (% of peak)``: a name a reader knows, its unit beside it;
    keys without a label read as words."""
    unit = next((u for suffix, u in _UNITS if key.endswith(suffix)), "")
    name = NUMBER_LABELS.get(key) or key.removesuffix(
        next((s for s, _ in _UNITS if key.endswith(s)), "")).replace("_", " ")
    return f"{name} ({unit.strip()})" if unit else name


def _value(x) -> str:
    """A number for a sentence; flags as yes / no (never Python's True / False)."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    return _f(x)


def _bottleneck_lines(result: AnalysisResult) -> list[str]:
    """One bullet per bottleneck: kernel, bound, reason and the numbers behind it."""
    lines = []
    for b in result.bottlenecks:
        nums = ", ".join(f"{number_label(k)} {_value(v)}" for k, v in b.numbers.items()
                         if v is not None)
        lines.append(f"- **`{b.kernel}`: {b.bound}-bound.** {b.reason}. *({nums})*")
    return lines


def _roadmap_section(result: AnalysisResult) -> list[str]:
    """The Roadmap heading, its note and table, and the rules left unranked (if any)."""
    out = ["## Roadmap", "Ranked by the predicted speedup of the whole workload; each gain "
           "computed from the model, its assumption beside it.", _table(
               ["#", "step", "kernel", "predicted", "time after", "model", "formula",
                "assumption"],
               [[it.rank, f"{it.action} (`{it.rule}`)", f"`{it.kernel}`",
                 f"{it.predicted_speedup:.2f}x", _ms(it.predicted_time_ms), it.model,
                 it.formula, it.assumption] for it in result.roadmap])]
    if result.unranked:
        out.append("Not ranked: " + "; ".join(f"`{u.rule}` on `{u.kernel}` ({u.reason})"
                                              for u in result.unranked) + ".")
    return out


def _finding_blocks(f: Finding) -> list[str]:
    """The blocks of one finding: heading, summary, numbers, locations and remedy (each only
    when the finding has it)."""
    out = [f"### {f.title} -- `{f.kernel}` ({f.severity}, {f.basis})", f"{f.summary}."]
    # Keys and name values (a stall reason, a limiter) as written in the JSON and by ncu.
    nums = [f"`{k}` = " + (f"`{v}`" if isinstance(v, str) and "_" in v else _value(v))
            for k, v in f.numbers.items() if v is not None]
    if nums:
        out.append("Numbers: " + ", ".join(nums) + ".")
    if f.locations:
        out.append(_locations_table(f.locations))
    if f.remedy:
        out.append(f"*Remedy:* {f.remedy}.")
    return out


def _line_cell(loc: Location) -> str:
    if not loc.source_line:
        return "-"
    return f"{Path(loc.source_file).name}:{loc.source_line}" if loc.source_file else \
        str(loc.source_line)


def _source_cell(loc: Location) -> str:
    """The quoted line, or the file and line the SASS points to, said not to be quoted."""
    if not loc.source_line:
        return "-"
    if loc.source_text is not None:
        if not loc.source_text:
            return "(blank line)"
        return loc.source_text if "`" in loc.source_text else f"`{loc.source_text}`"
    where = (f"`{loc.source_file}` line {loc.source_line}" if loc.source_file else
             f"line {loc.source_line}")
    return f"not quoted: {where}" + (f"; {loc.source_note}" if loc.source_note else "")


def _locations_table(locations: Sequence[Location]) -> str:
    """Address, line, instruction, detail; a ``source`` column when any line is known."""
    headers = ["address", "line", "instruction", "detail"]
    rows = [[f"0x{loc.address:04x}", _line_cell(loc), f"`{loc.sass}`", loc.detail]
            for loc in locations]
    if any(loc.source_line for loc in locations):
        headers.append("source")
        for row, loc in zip(rows, locations, strict=True):
            row.append(_source_cell(loc))
    return _table(headers, rows)


def render_series(scores: Sequence[Score], results: Sequence[AnalysisResult], *,
                  reference: AnalysisResult | None = None, history_mae: float | None = None,
                  title: str | None = None) -> str:
    """Markdown of a predicted-then-measured series: one row per step, the MAE, and the last
    version against the reference."""
    from sparsescope.analyze.score import mean_absolute_error

    name = title or (results[0].workload if results else "series")
    out = [f"# sparsescope analyze --compare: {name}"]
    rows = []
    for s in scores:
        rows.append([f"{s.before} -> {s.after}", ", ".join(s.applied) or "-",
                     f"{s.predicted_speedup:.2f}x", f"{s.measured_speedup:.2f}x",
                     f"{s.abs_error:.2f}", f"{s.rel_error_pct:+.0f} %",
                     f"{s.before_time_ms:.4f} -> {s.after_time_ms:.4f}", s.basis])
    out += ["## Predicted and measured speedup of every step", _table(
        ["step", "addresses", "predicted", "measured", "abs. error", "rel. error",
         "time (ms)", "prediction from"], rows)]
    mae = mean_absolute_error(scores)
    lines = [f"- Mean absolute error of the predictions (this series): "
             f"{mae:.3f} (speedup units)" if mae is not None else "- No step scored."]
    if history_mae is not None:
        lines.append(f"- Mean absolute error over the stored history of this workload: "
                     f"{history_mae:.3f}")
    if results and results[0].evidence.time_ms and results[-1].evidence.time_ms:
        total = results[0].evidence.time_ms / results[-1].evidence.time_ms
        lines.append(f"- First to last version: {total:.2f}x measured")
    if reference is not None and reference.evidence.time_ms and results:
        last = results[-1]
        ratio = reference.evidence.time_ms / last.evidence.time_ms
        lines.append(f"- Last version ({last.version}) against the reference "
                     f"({reference.version or reference.workload}): "
                     f"{reference.evidence.time_ms:.4f} ms / {last.evidence.time_ms:.4f} ms = "
                     f"{ratio:.2f}x ({'faster' if ratio > 1 else 'slower'})")
    out += ["## Summary", "\n".join(lines)]
    versions = [[r.version, _ms(r.evidence.time_ms),
                 _ms(r.evidence.floor_ms), (f"{r.evidence.time_ms / r.evidence.floor_ms:.1f}x"
                                            if r.evidence.time_ms and r.evidence.floor_ms
                                            else "-"),
                 "passed" if r.evidence.correctness.get("passed") else
                 ("FAILED" if r.evidence.correctness else "-"),
                 f"`{r.roadmap[0].rule}`" if r.roadmap else "-"] for r in results]
    if reference is not None:
        versions.append([f"{reference.version} (reference)", _ms(reference.evidence.time_ms),
                         _ms(reference.evidence.floor_ms), "-",
                         "passed" if reference.evidence.correctness.get("passed") else "-", "-"])
    out += ["## Versions", _table(["version", "time", "floor", "gap", "correct",
                                    "top roadmap item"], versions)]
    moved = _changes_table(results)
    if moved:
        out += ["## What moved", "The profiles' figures of each step, before -> after (counts "
                "per call, summed over the kernels; rates of the kernel with the largest time "
                "share), to read each prediction's miss against.", moved]
    return "\n\n".join(out) + "\n"


def _change_cell(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "-"
    text = f"{_f(float(a))} -> {_f(float(b))}"
    return text + (f" ({b / a:.2f}x)" if a else "")


def _changes_table(results: Sequence[AnalysisResult]) -> str | None:
    from sparsescope.analyze.score import CHANGE_METRICS, evidence_changes

    rows = []
    for a, b in zip(results, results[1:], strict=False):
        changes = evidence_changes(a, b)
        if all(x is None or y is None for _, x, y in changes):
            continue
        rows.append([f"{a.version} -> {b.version}", *(_change_cell(x, y) for _, x, y in changes)])
    if not rows:
        return None
    return _table(["step", *(label for label, _, _ in CHANGE_METRICS)], rows)


def html_page(markdown: str, title: str) -> str:
    """A self-contained HTML page of ``markdown`` (the report stage's converter and CSS)."""
    from sparsescope.report.html import markdown_to_html, stylesheet

    body = markdown_to_html(markdown)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{html.escape(title)}</title>\n<style>\n{stylesheet()}</style>\n</head>\n"
            f"<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n")


@dataclass(frozen=True)
class WrittenReport:
    out_dir: Path
    files: tuple[Path, ...]

    def to_dict(self) -> dict:
        return {"out_dir": str(self.out_dir), "files": [str(p) for p in self.files]}


def write_analysis_report(result: AnalysisResult, out_dir: str | Path) -> WrittenReport:
    """``analysis.json``, ``report.md`` and ``report.html`` in ``out_dir`` (rendered first,
    then each written atomically)."""
    from sparsescope._atomic import write_json_atomic, write_text_atomic

    md = render_analysis(result)
    page = html_page(md, f"sparsescope analyze: {result.workload}")
    out = Path(out_dir)
    files = (write_json_atomic(out / "analysis.json", to_jsonable(result)),
             write_text_atomic(out / "report.md", md),
             write_text_atomic(out / "report.html", page))
    return WrittenReport(out, files)


def write_series_report(scores: Sequence[Score], results: Sequence[AnalysisResult],
                        out_dir: str | Path, *, reference: AnalysisResult | None = None,
                        history_mae: float | None = None) -> WrittenReport:
    from sparsescope._atomic import write_json_atomic, write_text_atomic
    from sparsescope.analyze.score import mean_absolute_error

    md = render_series(scores, results, reference=reference, history_mae=history_mae)
    page = html_page(md, "sparsescope analyze --compare")
    out = Path(out_dir)
    data = {"scores": to_jsonable(list(scores)), "mae": mean_absolute_error(scores),
            "history_mae": history_mae,
            "reference_speedup": (reference.evidence.time_ms / results[-1].evidence.time_ms
                                  if reference is not None and reference.evidence.time_ms
                                  and results and results[-1].evidence.time_ms else None)}
    files = (write_json_atomic(out / "scores.json", data), write_text_atomic(out / "report.md", md),
             write_text_atomic(out / "report.html", page))
    return WrittenReport(out, files)
