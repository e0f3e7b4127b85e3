"""The report as a list of blocks, built once and rendered to Markdown and to HTML.

Every sentence here is computed from the RunSet (through the tables); nothing is hand-written
about a particular run. Inline text uses a small Markdown subset (``**bold**``, ``*italic*``,
`` `code` ``) that both renderers understand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sparsescope.report.context import ReportContext, ok_cases
from sparsescope.report.figures import FigureResult
from sparsescope.report.table_types import Table, bw_text, span
from sparsescope.results.records import RunSet
from sparsescope.timing.types import Measurement

#: How the report names an op in titles and sentences.
OP_NAMES = {"spmv": "SpMV", "spmm": "SpMM", "slice": "CSR row slicing"}


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


def _ops(ctx: ReportContext) -> str:
    ops = list(dict.fromkeys(c.op for c in ctx.runset.cases)) or ["spmv"]
    return ", ".join("SpMV" if op == "spmv" else op for op in ops)


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
        return (f"**Measured on a CPU:** {ctx.device_label}{reported}. Floor, gap and % of "
                f"peak use its measured copy bandwidth ({bw_text(ctx.bw_gb_s)} GB/s). Little's "
                f"law, latency sensitivity, DAE and cross-GPU tables are computed for the "
                f"reference GPU **{ctx.gpu.name}** from the spec table at "
                f"{ctx.latency_ns:,.0f} ns: warps do not describe a CPU.")
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
        items.append(f"On {ctx.device_label}, the {len(cases)} timed {_ops(ctx)} case(s) reach "
                     f"**{span(pct)} %** of {bw_text(ctx.bw_gb_s)} GB/s ({ctx.bw_label}).")
        items.append(f"Best: **{best.label}** at {best.metrics.pct_peak:.1f} % "
                     f"({bw_text(best.metrics.eff_bw_gb_s)} GB/s, gap {best.metrics.gap:.1f}x "
                     f"over the floor); worst: **{worst.label}** at "
                     f"{worst.metrics.pct_peak:.1f} % (gap {worst.metrics.gap:.1f}x).")
        if best.measured is not None:
            items.append(f"Against the measured copy bandwidth "
                         f"({bw_text(ctx.measured_copy_gb_s)} GB/s) the best case reaches "
                         f"{best.measured.pct_peak:.1f} %.")
    else:
        items.append("No case ran successfully, so nothing was timed: see the skipped and "
                     "failed cases.")
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


def ops_summary_items(run: RunSet) -> tuple[str, ...]:
    """One line per op of ``run``: its cases, matrices and backends, and how many were timed."""
    timed = Counter(c.op for c in ok_cases(run))
    items = []
    for op in dict.fromkeys(c.op for c in run.cases):
        cases = [c for c in run.cases if c.op == op]
        counts = Counter(c.outcome for c in cases)
        items.append(f"**{OP_NAMES.get(op, op)}:** {len(cases)} case(s) on "
                     f"{len({c.matrix for c in cases})} matrices with "
                     f"{len({c.backend for c in cases})} backend(s): {timed[op]} timed, "
                     f"{counts.get('skipped', 0)} skipped, {counts.get('failed', 0)} failed.")
    if not items:
        items.append("The run holds no case.")
    elif any(c.outcome != "ok" for c in run.cases):
        items.append("Skipped and failed cases are listed with their reasons and never timed.")
    return tuple(items)


def _section(blocks: list, tables: Mapping[str, Table], figures: Mapping[str, FigureResult],
             names: Sequence[str], counters: dict[str, int]) -> None:
    for name in names:
        table = tables[name]
        counters["table"] += 1
        blocks.append(TableBlock(table, counters["table"]))
        for fig_name in table.figures:
            fig = figures.get(fig_name)
            if fig is None:
                continue
            if fig.png is not None:
                counters["figure"] += 1
                blocks.append(FigureBlock(fig, counters["figure"]))
            else:
                blocks.append(FigureBlock(fig, 0))


#: Subsections of "3. Timing and throughput" (seed 000 sections 3.1-3.3), each shown when its
#: table was built (the kernel breakdown and the seed comparison exist only for some runs).
TIMING_SUBSECTIONS = (
    ("Timing and throughput", "timing"),
    ("Kernel breakdown", "kernel_breakdown"),
    ("Timing stability", "timing_stability"),
    ("Effective bandwidth under two byte models", "bandwidth_models"),
    ("Against the seed's published H200 numbers", "seed_comparison"),
)


def _subsections(blocks: list, tables: Mapping[str, Table], figures: Mapping[str, FigureResult],
                 number: str, parts: Sequence[tuple[str, str]], counters: dict[str, int]) -> None:
    present = [(title, name) for title, name in parts if name in tables]
    for i, (title, name) in enumerate(present, start=1):
        blocks.append(Heading(3, f"{number}.{i} {title}"))
        _section(blocks, tables, figures, [name], counters)


def build_document(ctx: ReportContext, tables: Mapping[str, Table],
                   figures: Mapping[str, FigureResult],
                   extra_sections: Sequence[tuple[str, str]] = (), *,
                   ops_label: str | None = None, note: str | None = None,
                   backends_label: str | None = None,
                   ops_run: RunSet | None = None) -> Document:
    """``ops_label`` names the operations in the title when the SpMV tables are not the point
    (an SpMM or slice run); ``note`` is a call-out placed first; ``backends_label`` lists the
    backends when the cases behind the tables are not all of the run's.

    ``ops_run``: the whole run, when it has no SpMV case and ``extra_sections`` carry its ops:
    the document then has no SpMV section (byte model, timing, floor, Little's law, DAE, index
    width, outcomes), only the device, the matrices and the provenance of ``tables``; its
    summary and timing protocol count ``ops_run``'s cases."""
    if ops_run is not None:
        return _ops_document(ctx, tables, extra_sections, ops_run, ops_label=ops_label,
                             note=note, backends_label=backends_label)
    rs, p = ctx.runset, ctx.runset.provenance
    title = f"{ops_label or _ops(ctx)} performance report: {ctx.device_label}"
    backends = backends_label or ", ".join(dict.fromkeys(c.backend for c in rs.cases)) or "none"
    blocks: list[Block] = [Paragraph(
        f"**Run:** `{rs.run_id}` · **Date:** {p.created_utc} · **Suite:** {rs.suite} (scale "
        f"{rs.scale:g}) · **Backends:** {backends} · **sparsescope** {p.sparsescope_version}")]
    if note:
        blocks.append(Callout(note))
    note = analog_note(ctx)
    if note:
        blocks.append(Callout(note))
    blocks.append(Callout(device_note(ctx)))
    t = rs.timing
    flush = {True: "on", False: "off", None: "auto"}[t.flush_l2]
    blocks.append(Callout(f"**Timing protocol:** {t.warmups} warm-ups, {t.repeats} repeats, "
                          f"{t.statistic} reported, clock `{t.clock}`, cache flush {flush} "
                          f"({sum(v.case.measurement.flushed for v in ctx.cases)} of "
                          f"{len(ctx.cases)} timed cases flushed)."))
    counters = {"table": 0, "figure": 0}
    blocks += [Heading(2, "1. Executive summary"), Bullets(summary_items(ctx, tables))]
    blocks += [Heading(2, "2. Methodology"), Heading(3, "2.1 Device")]
    _section(blocks, tables, figures, ["device"], counters)
    blocks += [Heading(3, "2.2 Timing protocol"), Bullets(protocol_items(ctx)),
               Heading(3, "2.3 Byte model"),
               Paragraph("Bytes are the minimum a CSR SpMV must move, each array once "
                         "(seed 000, section 2.5); 1 GB = 10^9 bytes."),
               Code(byte_model(ctx)), Heading(3, "2.4 Matrices")]
    if note:
        blocks.append(Paragraph(note))
    _section(blocks, tables, figures, ["matrices"], counters)
    sections = (
        ("3. Timing and throughput", TIMING_SUBSECTIONS),
        ("4. Physical floor and roofline", ["floor", "roofline"]),
        ("5. Little's law and latency sensitivity", ["littles_law", "latency_sensitivity"]),
        ("6. Gap decomposition", ["gap"]),
        ("7. Decoupled access-execute (DAE) what-if", ["dae", "dae_sram", "dae_fifo",
                                                       "cross_gpu"]),
        ("8. INT32 against INT64 indices", ["index_width"]),
        ("9. Skipped and failed cases", ["outcomes"]),
    )
    for heading, names in sections:
        blocks.append(Heading(2, heading))
        if names is TIMING_SUBSECTIONS:
            _subsections(blocks, tables, figures, heading.split(".")[0], names, counters)
        else:
            _section(blocks, tables, figures, names, counters)
    number = len(sections) + 3
    for extra_title, text in extra_sections:
        blocks += [Heading(2, f"{number}. {extra_title}"), RawMarkdown(text)]
        number += 1
    _appendix(blocks, tables, figures, counters)
    return Document(title, tuple(blocks))


def _appendix(blocks: list, tables: Mapping[str, Table], figures: Mapping[str, FigureResult],
              counters: dict[str, int]) -> None:
    blocks.append(Heading(2, "Appendix: provenance and files"))
    _section(blocks, tables, figures, ["provenance"], counters)
    files = [f"`tables/{name}.json`: {tables[name].title}" for name in tables]
    files += [f"`{f.path}`: {f.title}" for f in figures.values() if f.png is not None]
    files += [f"{f.name}: not drawn ({f.skipped_reason})" for f in figures.values()
              if f.png is None]
    blocks += [Paragraph("Files written with this report (every table also as JSON, with "
                         "units):"), Bullets(tuple(files))]


def _ops_document(ctx: ReportContext, tables: Mapping[str, Table],
                  extra_sections: Sequence[tuple[str, str]], run: RunSet, *,
                  ops_label: str | None, note: str | None,
                  backends_label: str | None) -> Document:
    """The document of a run with no SpMV case (see :func:`build_document`): the run, the
    device, the timing protocol and the matrices, then the ops' own sections."""
    ops = ", ".join(OP_NAMES.get(op, op) for op in dict.fromkeys(c.op for c in run.cases))
    title = f"{ops_label or ops or 'SpMV'} performance report: {ctx.device_label}"
    p = run.provenance
    backends = backends_label or ", ".join(dict.fromkeys(c.backend for c in run.cases)) or "none"
    blocks: list[Block] = [Paragraph(
        f"**Run:** `{run.run_id}` · **Date:** {p.created_utc} · **Suite:** {run.suite} (scale "
        f"{run.scale:g}) · **Backends:** {backends} · **sparsescope** {p.sparsescope_version}")]
    if note:
        blocks.append(Callout(note))
    analogs = analog_note(ctx)
    if analogs:
        blocks.append(Callout(analogs))
    blocks.append(Callout(device_note(ctx, spmv=False)))
    timed = [c.measurement for c in ok_cases(run)]
    t = run.timing
    flush = {True: "on", False: "off", None: "auto"}[t.flush_l2]
    blocks.append(Callout(f"**Timing protocol:** {t.warmups} warm-ups, {t.repeats} repeats, "
                          f"{t.statistic} reported, clock `{t.clock}`, cache flush {flush} "
                          f"({sum(m.flushed for m in timed)} of {len(timed)} timed cases "
                          f"flushed)."))
    counters = {"table": 0, "figure": 0}
    blocks += [Heading(2, "1. Executive summary"), Bullets(ops_summary_items(run)),
               Heading(2, "2. Methodology"), Heading(3, "2.1 Device")]
    _section(blocks, tables, {}, ["device"], counters)
    blocks += [Heading(3, "2.2 Timing protocol"), Bullets(protocol_items(ctx, timed)),
               Heading(3, "2.3 Matrices")]
    if analogs:
        blocks.append(Paragraph(analogs))
    _section(blocks, tables, {}, ["matrices"], counters)
    for number, (extra_title, text) in enumerate(extra_sections, start=3):
        blocks += [Heading(2, f"{number}. {extra_title}"), RawMarkdown(text)]
    _appendix(blocks, tables, {}, counters)
    return Document(title, tuple(blocks))
