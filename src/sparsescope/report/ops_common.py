"""What the SpMM and row-slice report sections share: the timed-case view with its byte model,
the pipe table, case keys, our kernel against the best peer, the skipped/failed table, the
figure canvas, and :class:`OpsReport`, which every op's sections come back as.

Each case's parameters and derived counts are its typed ``CaseResult.params`` and ``.derived``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparsescope.model.case_model import CaseModel
from sparsescope.registry import is_own, is_sparse_library
from sparsescope.report.collection_data import backend_label
from sparsescope.results.case_models import bandwidths, model_of, model_traffic
from sparsescope.results.records import CaseResult, MatrixRecord, RunSet


@dataclass(frozen=True)
class OpView:
    """A timed op case with its matrix and byte model."""

    case: CaseResult
    matrix: MatrixRecord
    traffic: Any
    """The op's byte model of the case (``Op.traffic_for``): the bounds read it."""
    model: CaseModel
    """The case judged against the model's bytes (stored with the case)."""

    @property
    def time_ms(self) -> float:
        return self.case.measurement.time_ms


@dataclass(frozen=True)
class OpsReport:
    """What :func:`sparsescope.report.ops_sections.ops_sections` produced (or one op's part)."""

    sections: tuple[tuple[str, str], ...]
    figures: tuple[Path, ...] = ()
    tables: dict[str, list[dict]] = field(default_factory=dict)
    """Table name -> rows (field names carry units), for ``tables/<name>.json``."""


def op_views(runset: RunSet, op: str) -> list[OpView]:
    """The ok, timed cases of ``op`` with their matrix records and byte models."""
    matrices = {m.name: m for m in runset.matrices}
    basis, copy = bandwidths(runset)
    views = []
    for case in runset.cases:
        if case.op != op or case.outcome != "ok" or case.measurement is None:
            continue
        record = matrices[case.matrix]
        model = model_of(case, record, basis, copy, runset.device.l2_bytes)
        if model is not None:
            views.append(OpView(case, record, model_traffic(case, record), model))
    return views


def fmt_cell(value: Any, spec: str = ".4g") -> str:
    """A table cell or number in a sentence: ``–`` for missing or non-finite, ``spec`` for
    numbers, ``str`` otherwise."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return format(value, spec) if isinstance(value, int | float) else str(value)


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A pipe table; numbers formatted with 4 significant digits."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(fmt_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def kernel_ms(case: CaseResult, token: str) -> float | None:
    """Time per call of the breakdown's kernels whose name holds ``token`` (None without)."""
    if case.measurement is None:
        return None
    hits = [k["time_ms"] for k in case.measurement.kernel_breakdown if token in k.get("name", "")]
    return sum(hits) if hits else None


def l2_bw_gb_s(runset: RunSet) -> float | None:
    """The run's measured L2 bandwidth (None when not measured)."""
    value = runset.ceilings.l2_bw_gb_s
    return value if value and value > 0 else None


def spmm_key(v: OpView) -> tuple:
    return (v.case.matrix, f"k={v.traffic.k}", v.traffic.layout)


def slice_key(v: OpView) -> tuple:
    return (v.case.matrix, f"rows={v.traffic.selected_rows}", v.traffic.weights)


def peer_rows(views: Sequence[OpView], key) -> list[dict]:
    """Per group (``key(view)``): the fastest own backend against the fastest peer, a sparse
    library (``registry.is_sparse_library``: a dense baseline is only in the break-even)."""
    groups: dict[tuple, list[OpView]] = {}
    for v in views:
        groups.setdefault(key(v), []).append(v)
    rows = []
    for group, members in groups.items():
        own = [v for v in members if is_own(v.case.backend)]
        peers = [v for v in members if is_sparse_library(v.case.backend)]
        if not own or not peers:
            continue
        best_own = min(own, key=lambda v: v.time_ms)
        best_peer = min(peers, key=lambda v: v.time_ms)
        ratio = best_peer.time_ms / best_own.time_ms
        rows.append({"case": " ".join(str(g) for g in group),
                     "own_backend": best_own.case.backend, "own_ms": best_own.time_ms,
                     "best_peer": best_peer.case.backend, "peer_ms": best_peer.time_ms,
                     # the library algorithm that won, where the peer recorded one
                     "best_peer_label": backend_label(best_peer.case),
                     "speedup_x": ratio, "at_least_as_fast": ratio >= 1.0})
    return rows


def peer_markdown(rows: list[dict], what: str, profiled: set[str] | None = None) -> str:
    """The :func:`peer_rows` table and a verdict; ``profiled`` (cases with ncu profiles, None
    when no profile was given) names the losses the profiled kernels do not cover."""
    if not rows:
        return (f"No case of this run has both an own kernel and a peer timed ({what}); "
                "the comparison needs a GPU run.")
    table = md_table(["case", "own backend", "own ms", "best peer", "peer ms", "speedup x",
                      "own >= peer"],
                     [[r["case"], r["own_backend"], r["own_ms"],
                       r.get("best_peer_label", r["best_peer"]), r["peer_ms"],
                       r["speedup_x"], "yes" if r["at_least_as_fast"] else "**no**"]
                      for r in rows])
    slower = [r["case"] for r in rows if not r["at_least_as_fast"]]
    verdict = ("Our kernel is at least as fast as the best peer on every case."
               if not slower else
               f"Our kernel is slower than the best peer on {len(slower)} of {len(rows)} cases "
               f"({', '.join(slower)}): the instruction roofline and the bounds below say where "
               "the time goes.")
    if slower and profiled is not None:
        unprofiled = [c for c in slower if c not in profiled]
        if unprofiled:
            verdict += (f" Not profiled in this run: {', '.join(unprofiled)}; the profiled "
                        "kernels below show the mechanism on the nearest profiled cases.")
    return f"{table}\n\n{verdict}"


def timed_markdown(headers: Sequence[str], rows: list[dict], what: str, peers: list[dict],
                   profiled: list[dict], with_profiles: bool) -> str:
    """An op's main section text: its timed cases (``rows``, one column per field, in order),
    then our kernel against the best peer (``profiled``: the rows of
    :func:`sparsescope.report.ops_profiled.profiled_cases`, counted only when profiles were
    given)."""
    text = (md_table(headers, [list(r.values()) for r in rows]) if rows else
            f"No {what} case was timed.")
    return text + "\n\n" + peer_markdown(peers, what, {r["case"] for r in profiled}
                                         if with_profiles else None)


def figure_markdown(fig_dir: Path | None, views: Sequence[OpView], name: str, alt: str,
                    draw: Callable[[Path], Path]) -> tuple[str, tuple[Path, ...]]:
    """``draw`` the figure ``<fig_dir>/<name>`` when a folder is given and a case was timed:
    the Markdown that shows it (after a blank line) and its path; else nothing."""
    if fig_dir is None or not views:
        return "", ()
    path = draw(fig_dir / name)
    return f"\n\n![{alt}](figures/{name})", (path,)


def outcome_markdown(runset: RunSet) -> str:
    rows = [[c.op, c.matrix, c.backend, c.outcome, c.reason] for c in runset.cases
            if c.outcome != "ok"]
    return md_table(["op", "matrix", "backend", "outcome", "reason"], rows) if rows else \
        "Every case ran and passed its correctness check."


def canvas(width: float, height: float, ncols: int = 1):
    """A matplotlib figure (Agg, 110 dpi) and its ``ncols`` axes side by side."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]


def save_png(fig, path: Path) -> Path:
    """``fig`` as a PNG at ``path``, written atomically."""
    import io

    from sparsescope._atomic import write_bytes_atomic

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return write_bytes_atomic(path, buffer.getvalue())
