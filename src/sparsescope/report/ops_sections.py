"""Report sections for SpMM and CSR row slicing, as ``(title, markdown)`` pairs for
``write_report(runset, out, extra_sections=...)``, plus their figures and JSON tables.

* SpMM (:mod:`~sparsescope.report.ops_spmm`): time, GFLOP/s, effective bandwidth and % of the
  roofline bound of every timed case; our kernel against the best peer at each (matrix, k,
  layout); the arithmetic-intensity-against-k table of each matrix (``model.spmm``).
* Slice (:mod:`~sparsescope.report.ops_slice`): time, bandwidth and % of the dense-output bound
  of every case; the five bounds of ``model.slice_rows`` for each workload; which bound the
  measurements support (the scatter kernel's own time, memset excluded, as seed 003 timed it),
  seed 003's 128-byte-line model held against them, and -- with ncu profiles -- the scatter
  kernel's DRAM and L2 sectors against what each model predicts.
* With profiles (labels ``"<backend> <matrix> <params>: <kernel>"``, as
  ``backends.op_runner.split_marked_profiles`` makes them;
  :mod:`~sparsescope.report.ops_profiled`): the kernels of every profiled case (count, time
  under ncu, the longest one's occupancy and first stall), and the hierarchical instruction
  roofline of each op (L1, L2, DRAM points, measured or spec ceilings, stride walls,
  predication ticks, as seed 004 draws them).
* Skipped and failed cases of both ops, with their reasons.

What the ops share (the timed-case view, the pipe table, the peer comparison) is in
:mod:`~sparsescope.report.ops_common`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sparsescope.report.document import OP_NAMES
from sparsescope.report.ops_common import OpsReport, md_table, op_views, outcome_markdown
from sparsescope.report.ops_profiled import roofline_markdown
from sparsescope.report.ops_slice import bound_verdict, slice_sections
from sparsescope.report.ops_spmm import spmm_sections
from sparsescope.results.records import RunSet

# bound_verdict, md_table and op_views are imported from here by scripts/device_ops.sh.
__all__ = ["OPS", "OpsReport", "bound_verdict", "md_table", "op_views", "ops_sections",
           "write_any_report", "write_ops_report"]

SECTION_BUILDERS = {"spmm": spmm_sections, "slice": slice_sections}
"""Op -> the function that writes its sections from ``(runset, views, profiles, labels,
figure folder)``, in report order."""
OPS = tuple(SECTION_BUILDERS)
OP_TITLES = {"spmm": "SpMM", "slice": "Slice"}


def ops_sections(runset: RunSet, *, profiles: Sequence[Any] = (),
                 labels: Sequence[str] | None = None,
                 figures_dir: str | os.PathLike | None = None) -> OpsReport:
    """The SpMM and slice sections of ``runset`` (only ops present get sections); figures are
    written into ``figures_dir`` (e.g. ``<report>/figures``) when given."""
    sections, figures, tables = [], [], {}
    fig_dir = Path(figures_dir) if figures_dir is not None else None
    present = {c.op for c in runset.cases}
    ops = [op for op in OPS if op in present]
    for op in ops:
        part = SECTION_BUILDERS[op](runset, op_views(runset, op), profiles, labels, fig_dir)
        sections += part.sections
        figures += part.figures
        tables.update(part.tables)
    if profiles and ops:
        roof, written = roofline_markdown(runset, profiles, labels, fig_dir)
        figures += written
        sections.append((" and ".join(OP_TITLES[o] for o in ops) + ": instruction roofline",
                         roof))
    if ops:
        sections.append(("SpMM and slice: skipped and failed cases", outcome_markdown(runset,
                                                                                       ops)))
    return OpsReport(tuple(sections), tuple(figures), tables)


def write_ops_report(runset: RunSet, out_dir: str | os.PathLike, *, profiles: Sequence[Any] = (),
                     labels: Sequence[str] | None = None, progress: bool = False,
                     extra_sections: Sequence[tuple[str, str]] = ()):
    """Figures and op tables into ``out_dir``, then ``write_report`` with the op sections.

    The main report's SpMV tables get the run's ``spmv`` cases only (its byte model is SpMV's);
    a run without SpMV cases gets no SpMV table at all, only the device, the matrices and the
    provenance before its op sections. ``results.json`` keeps every case. ``extra_sections``
    (title, markdown) follow the op sections.
    """
    from sparsescope._atomic import write_json_atomic
    from sparsescope.report.write import write_report

    out = Path(out_dir)
    report = ops_sections(runset, profiles=profiles, labels=labels,
                          figures_dir=out / "figures")
    for name, rows in report.tables.items():
        write_json_atomic(out / "tables" / f"{name}.json", {"name": name, "rows": rows})
    # op figures an earlier render drew (profiles then, none now) must not outlive it
    drawn = {Path(f).name for f in report.figures}
    for leftover in (out / "figures").glob("ops_*.png"):
        if leftover.name not in drawn:
            leftover.unlink()
    spmv_only = replace(runset, cases=tuple(c for c in runset.cases if c.op == "spmv"))
    ops = [op for op in dict.fromkeys(c.op for c in runset.cases) if op != "spmv"]
    label = ", ".join(OP_NAMES.get(o, o) for o in ops)
    return write_report(spmv_only, out, extra_sections=[*report.sections, *extra_sections],
                        progress=progress,
                        ops_label=label or None, whole_run=runset,
                        backends_label=", ".join(dict.fromkeys(c.backend for c in runset.cases)))


def write_any_report(runset: RunSet, out_dir: str | os.PathLike, *,
                     extra_sections: Sequence[tuple[str, str]] = (), op: str | None = None):
    """The report a run needs: :func:`write_report` for an SpMV run, else
    :func:`write_ops_report` (SpMM and row-slice cases get their own sections). ``op`` names
    the run's op when the caller knows it (``sparsescope run``); otherwise the cases decide."""
    from sparsescope.report.write import write_report

    spmv = op == "spmv" if op is not None else all(c.op == "spmv" for c in runset.cases)
    if spmv:
        return write_report(runset, Path(out_dir), extra_sections=list(extra_sections))
    return write_ops_report(runset, out_dir, extra_sections=extra_sections)
