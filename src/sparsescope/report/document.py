"""The report as a list of blocks, built once and rendered to Markdown and to HTML.

Every sentence here is computed from the RunSet (through the tables); nothing is hand-written
about a particular run. Inline text uses a small Markdown subset (``**bold**``, ``*italic*``,
`` `code` ``) that both renderers understand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sparsescope.report.ceiling_causes import peak_cause
from sparsescope.report.context import ReportContext, ok_cases
from sparsescope.report.figure_types import FigureResult
from sparsescope.report.labels import label
from sparsescope.report.table_types import Table, bw_text, span
from sparsescope.results.records import RunSet
from sparsescope.stages import where_time_went
from sparsescope.timing.modes import mode_label
from sparsescope.timing.types import Measurement


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Callout:
    """A boxed note the reader must not miss (analogs, CPU run)."""

    text: str


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class TableBlock:
    table: Table
    number: int


@dataclass(frozen=True)
class FigureBlock:
    figure: FigureResult
    number: int
    """0 for a skipped figure."""


@dataclass(frozen=True)
class RawMarkdown:
    """Markdown from a later stage (``extra_sections``), rendered as given."""

    text: str


Block = Heading | Paragraph | Callout | Bullets | Code | TableBlock | FigureBlock | RawMarkdown


@dataclass(frozen=True)
class Document:
    title: str
    blocks: tuple[Block, ...]


def analog_note(ctx: ReportContext) -> str | None:
    analogs = [m for m in ctx.runset.matrices if m.analog_of]
    if not analogs:
        return None
    names = ", ".join(f"{m.name} (analog of {m.analog_of})" if m.name != m.analog_of
                      else m.name for m in analogs)
    return (f"**Generated analogs, not the real matrices.** {len(analogs)} of "
            f"{len(ctx.runset.matrices)} matrices are generated stand-ins: {names}. Each has the "
            f"rows and nonzeros of the real matrix but a synthetic column pattern, so cache "
            f"behaviour, and with it the times, can differ from the real matrix.")


def device_note(ctx: ReportContext, *, spmv: bool = True) -> str:
    """``spmv=False``: for a report of other ops, whose bounds use ``ctx.bw_gb_s`` alone."""
    d, p = ctx.device, ctx.runset.provenance
    driver = f", driver {p.driver}" if p.driver else ""
    # The driver's own name for the device, when it adds something to the spec's name.
    reported = f" ({p.device}{driver})" if p.device and p.device != ctx.device_label else (
        f" ({driver[2:]})" if driver else "")
    if not spmv:
        where = (f"**Measured on a CPU:** {ctx.device_label}{reported}" if ctx.on_cpu else
                 f"**Measured on** {ctx.device_label}{reported}, compute capability "
                 f"{d.compute_capability}")
        return f"{where}; DRAM bounds against {bw_text(ctx.bw_gb_s)} GB/s ({ctx.bw_label})."
    if ctx.on_cpu:
        text = (f"**Measured on a CPU:** {ctx.device_label}{reported}. Floor, gap and % of "
                f"peak use its measured copy bandwidth ({bw_text(ctx.bw_gb_s)} GB/s).")
        if ctx.gpu is None:
            return text + (" Warps do not describe a CPU, so the GPU models (Little's law, "
                           "latency sensitivity, DAE, gap decomposition) are left out; "
                           "`--reference-gpu NAME` computes them for a GPU from its spec.")
        return text + (f" Little's law, latency sensitivity, the DAE FIFO and cross-GPU tables "
                       f"are computed for the reference GPU **{ctx.gpu.name}** from its spec at "
                       f"{ctx.latency_ns:,.0f} ns, never from the CPU's measurements; the gap "
                       f"decomposition and per-case DAE gains need times measured on a GPU.")
    text = (f"**Measured on** {ctx.device_label}{reported}, compute capability "
            f"{d.compute_capability}; % of peak against the datasheet "
            f"{bw_text(ctx.bw_gb_s)} GB/s")
    if ctx.measured_copy_gb_s:
        text += f" and against the measured copy bandwidth {bw_text(ctx.measured_copy_gb_s)} GB/s"
    return text + f"; DRAM latency for the model: {ctx.latency_ns:,.0f} ns."


def protocol_items(ctx: ReportContext,
                   timed: Sequence[Measurement] | None = None) -> tuple[str, ...]:
    """``timed``: the measurements counted (default: the SpMV cases of the tables)."""
    t = ctx.runset.timing
    flush = {True: "yes", False: "no", None: "auto (when the working set fits in the cache)"}
    timed = [v.case.measurement for v in ctx.cases] if timed is None else list(timed)
    flushed = sum(m.flushed for m in timed)
    clocks = Counter(m.clock for m in timed)
    items = [
        f"Clock: `{t.clock}`" + (f" (cases: {', '.join(f'{k} x{n}' for k, n in clocks.items())})"
                                 if clocks and set(clocks) != {t.clock} else ""),
        f"Warm-up calls: {t.warmups} (discarded); timed repeats: {t.repeats}; minimum total "
        f"timed: " + (f"{t.min_total_ms:g} ms" if t.min_total_ms > 0 else "none"),
        f"Reported statistic: {t.statistic} (mean, std and CoV are listed beside it)",
        f"Timing mode: {mode_label(t)}: " + (
            "each call timed on its own" if t.mode == "latency" else
            "calls back to back in one event pair, the L2 warm, time per call = total / calls"),
        f"Cache flush between repeats: {flush[t.flush_l2]}; flushed in {flushed} of "
        f"{len(timed)} timed cases",
        f"CUDA graph capture: {'yes' if t.graph_capture else 'no'}",
        "Correctness: every output is compared with a float64 reference; a case above its "
        "tolerance is reported as failed and never timed in these tables",
    ]
    return tuple(items)


def byte_model(ctx: ReportContext) -> str:
    """The byte formula of each distinct (value, index, y read) configuration that was timed."""
    configs: dict[tuple[int, int, bool], list[str]] = {}
    for v in ctx.cases:
        c = v.case
        configs.setdefault((c.value_bytes, c.index_bytes, c.y_read), [])
        if c.backend not in configs[(c.value_bytes, c.index_bytes, c.y_read)]:
            configs[(c.value_bytes, c.index_bytes, c.y_read)].append(c.backend)
    if not configs:
        configs[(4, 4, False)] = ["(no timed case; the default configuration)"]
    blocks = []
    for (vb, ib, y_read), backends in configs.items():
        lines = [f"# {', '.join(backends)}",
                 f"bytes = nnz x {vb}          (values)",
                 f"      + nnz x {ib}          (column indices, INT{8 * ib})",
                 f"      + (rows + 1) x {ib}   (row pointers)",
                 f"      + cols x {vb}         (x, read once)",
                 f"      + rows x {vb}         (y written)"]
        if y_read:
            lines.append(f"      + rows x {vb}         (y read: y += A x)")
        blocks.append("\n".join(lines))
    blocks.append(f"flops = 2 x nnz      eff_bw = bytes / time      AI = flops / bytes\n"
                  f"floor = bytes / {bw_text(ctx.bw_gb_s)} GB/s      gap = time / floor")
    return "\n\n".join(blocks)


def summary_items(ctx: ReportContext, tables: Mapping[str, Table]) -> tuple[str, ...]:
    items = []
    cases = ctx.cases
    if cases:
        pct = [v.metrics.pct_peak for v in cases]
        best, worst = ctx.best, ctx.worst
        items.append(f"On {ctx.device_label}, the {len(cases)} timed SpMV case(s) reach "
                     f"**{span(pct)} %** of {bw_text(ctx.bw_gb_s)} GB/s ({ctx.bw_label}).")
        items.append(f"Best: **{best.label}** at {best.metrics.pct_peak:.1f} % "
                     f"({bw_text(best.metrics.eff_bw_gb_s)} GB/s, gap {best.metrics.gap:.1f}x "
                     f"over the floor); worst: **{worst.label}** at "
                     f"{worst.metrics.pct_peak:.1f} % (gap {worst.metrics.gap:.1f}x).")
        above = peak_cause(ctx, best)
        if above:
            items.append(f"**Above the ceiling:** {above}.")
        if best.measured is not None:
            items.append(f"Against the measured copy bandwidth "
                         f"({bw_text(ctx.measured_copy_gb_s)} GB/s) the best case reaches "
                         f"{best.measured.pct_peak:.1f} %.")
    else:
        items.append("No case ran successfully, so nothing was timed: see the skipped and "
                     "failed cases.")
    if "littles_law" in tables:
        items.append("**Little's law.** " + tables["littles_law"].reading)
    wide = [v for v in cases if v.case.index_bytes == 8]
    rows = tables["index_width"].rows
    if rows:
        waste = span([r.waste_pct for r in rows])
        if wide:
            items.append(f"{len(wide)} timed case(s) use INT64 indices: INT32 would move "
                         f"{waste} % fewer bytes; {sum(r.int32_fits for r in rows)} of "
                         f"{len(rows)} matrices fit INT32.")
        else:
            items.append(f"The timed cases use narrower indices than INT64; INT64 would waste "
                         f"{waste} % of the bytes.")
    counts = Counter(c.outcome for c in ctx.runset.cases)
    if counts.get("skipped") or counts.get("failed"):
        items.append(f"{counts.get('skipped', 0)} case(s) skipped and {counts.get('failed', 0)} "
                     f"failed; they are listed with their reasons and never timed.")
    return tuple(items)


def op_summary_item(run: RunSet, title: str) -> str:
    """One line for the cases of ``run`` (one op's): cases, matrices, backends, outcomes."""
    counts = Counter(c.outcome for c in run.cases)
    line = (f"**{title}:** {len(run.cases)} case(s) on {len({c.matrix for c in run.cases})} "
            f"matrices with {len({c.backend for c in run.cases})} backend(s): "
            f"{len(ok_cases(run))} timed, {counts.get('skipped', 0)} skipped, "
            f"{counts.get('failed', 0)} failed.")
    if counts.get("skipped") or counts.get("failed"):
        line += " Skipped and failed cases are listed with their reasons and never timed."
    return line


def _run_line(run: RunSet) -> Paragraph:
    p = run.provenance
    backends = ", ".join(dict.fromkeys(c.backend for c in run.cases)) or "none"
    return Paragraph(
        f"**Run:** `{run.run_id}` · **Date:** {p.created_utc} · **Suite:** {run.suite} (scale "
        f"{run.scale:g}) · **Backends:** {backends} · **sparsescope** {p.sparsescope_version}")


def _protocol_callout(run: RunSet, timed: Sequence[Measurement]) -> Callout:
    t = run.timing
    flush = {True: "on", False: "off", None: "auto"}[t.flush_l2]
    return Callout(f"**Timing protocol:** {t.warmups} warm-ups, {t.repeats} repeats, "
                   f"{t.statistic} reported, clock `{t.clock}`, cache flush {flush} "
                   f"({sum(m.flushed for m in timed)} of {len(timed)} timed cases flushed). "
                   f"Timing mode: {mode_label(t)} (timing.modes).")


def build_document(ctx: ReportContext, run_tables: Mapping[str, Table], sections: Sequence,
                   extra_sections: Sequence[tuple[str, str]] = (), *,
                   note: str | None = None) -> Document:
    """The report: the run, the device, the timing protocol and the matrices, then each op's
    section (``report.sections.OpSection``, in the registry's op order) with numbered
    headings, the ``extra_sections`` (title, Markdown) of later stages, and the appendix.
    Tables and figures are numbered in document order."""
    run = ctx.runset
    title = (f"{', '.join(s.title for s in sections) or 'Empty run'} performance report: "
             f"{ctx.device_label}")
    device = next((s.device for s in sections if s.device is not None), None)
    device_tbl = run_tables["device"]
    device_text = device[1] if device is not None else device_note(ctx, spmv=False)
    timed = [m for s in sections for m in s.timed or ()]
    analogs = analog_note(ctx)
    blocks: list[Block] = [_run_line(run)]
    blocks += [Callout(text) for text in (note, analogs) if text]
    blocks += [Callout(device_text), _protocol_callout(run, timed)]
    blocks += [Callout(line) for line in (where_time_went(run.stages),) if line]
    summary = tuple(item for s in sections for item in s.summary) or ("The run holds no case.",)
    blocks += [Heading(2, "1. Executive summary"), Bullets(summary),
               Heading(2, "2. Methodology"), Heading(3, "2.1 Device"), TableBlock(device_tbl, 0),
               Heading(3, "2.2 Timing protocol"), Bullets(protocol_items(ctx, timed))]
    number = 3
    for heading, parts in (m for s in sections for m in s.methodology):
        blocks += [Heading(3, f"2.{number} {heading}"), *parts]
        number += 1
    blocks.append(Heading(3, f"2.{number} Matrices"))
    if analogs:
        blocks.append(Paragraph(analogs))
    blocks.append(TableBlock(run_tables["matrices"], 0))
    number = 3
    for heading, parts in (b for s in sections for b in s.body):
        blocks += [Heading(2, f"{number}. {heading}"), *_numbered(parts, number)]
        number += 1
    for extra_title, text in extra_sections:
        blocks += [Heading(2, f"{number}. {extra_title}"), RawMarkdown(text)]
        number += 1
    blocks += _appendix(run_tables, sections)
    return Document(title, _count(blocks))


def _numbered(parts: Sequence[Block], number: int) -> list[Block]:
    """Level-3 headings of a body section as ``<number>.<i> text``."""
    out, i = [], 0
    for block in parts:
        if isinstance(block, Heading) and block.level == 3:
            i += 1
            block = Heading(3, f"{number}.{i} {block.text}")
        out.append(block)
    return out


def _count(blocks: Sequence[Block]) -> tuple[Block, ...]:
    """Tables and drawn figures numbered 1, 2, ... in document order (skipped figures 0)."""
    counters = {"table": 0, "figure": 0}
    out = []
    for block in blocks:
        if isinstance(block, TableBlock):
            counters["table"] += 1
            block = TableBlock(block.table, counters["table"])
        elif isinstance(block, FigureBlock) and block.figure.png is not None:
            counters["figure"] += 1
            block = FigureBlock(block.figure, counters["figure"])
        out.append(block)
    return tuple(out)


def _appendix(run_tables: Mapping[str, Table], sections: Sequence) -> list[Block]:
    files = [f"`tables/{name}.json`: {t.title}" for name, t in run_tables.items()]
    for s in sections:
        files += [f"`tables/{name}.json`: {t.get('title') or label(name.removeprefix('ops_'))}"
                  for name, t in s.tables.items()]
        files += [f"`{f.path}`: {f.title}" for f in s.figures if f.png is not None]
        files += [f"`figures/{f.name}.png`: {f.title}, not drawn ({f.skipped_reason})"
                  for f in s.figures if f.png is None]
        files += [f"`figures/{Path(f).name}`" for f in s.written]
    return [Heading(2, "Appendix: provenance and files"), TableBlock(run_tables["provenance"], 0),
            Paragraph("Files written with this report (every table also as JSON, with units):"),
            Bullets(tuple(files))]
