"""An op's auto kernel against the best library configuration, per (k, layout) group.

Per (matrix, k, layout) triple where the auto backend and at least one sparse library backend
(``registry.is_sparse_library``: never the dense break-even peer) both ran::

    speedup = fastest library median / auto's median

and per group (each (k, layout), each layout over every k, and all) the triples, the geomean,
the smallest speedup and the triples below 0.95x.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from sparsescope.report.readme.selection import geomean
from sparsescope.report.readme.speedups import _params

AUTOS = ("spmm-cuda-auto",)
"""The auto backends read this way (SpMV's auto is scored by :mod:`.selection`)."""
LOW = 0.95


@dataclass(frozen=True)
class AutoGroup:
    """One row of the table."""

    k: str
    """The k, or ``all``."""
    layout: str
    """The layout, or ``all``."""
    triples: int
    geomean: float
    min: float
    below: int
    """Triples below 0.95x."""


def auto_groups(cases: list[dict]) -> tuple[str, tuple[AutoGroup, ...]]:
    """(the auto backend, its groups), or ("", ()) when no auto of :data:`AUTOS` ran."""
    from sparsescope.registry import is_sparse_library

    times: dict[tuple, dict[str, float]] = {}
    for c in cases:
        if c["outcome"] != "ok":
            continue
        p = _params(c)
        key = (c["matrix"], str(p.get("k", "")), str(p.get("layout", "")))
        times.setdefault(key, {})[c["backend"]] = statistics.median(
            c["measurement"]["samples_ms"])
    auto = next((a for a in AUTOS if any(a in t for t in times.values())), "")
    if not auto:
        return "", ()
    triples = []
    for (_, k, layout), t in times.items():
        lib = [v for b, v in t.items() if is_sparse_library(b)]
        if auto in t and lib:
            triples.append((k, layout, min(lib) / t[auto]))

    def group(k: str, layout: str) -> AutoGroup:
        x = [s for kk, ll, s in triples if k in ("all", kk) and layout in ("all", ll)]
        return AutoGroup(k, layout, len(x), geomean(x), min(x), sum(s < LOW for s in x))

    pairs = sorted({(k, ll) for k, ll, _ in triples},
                   key=lambda p: (int(p[0]) if p[0].isdigit() else 0, p[1]))
    layouts = sorted({ll for _, ll, _ in triples})
    rows = [group(k, ll) for k, ll in pairs] + [group("all", "all")]
    rows += [group("all", ll) for ll in layouts]
    return auto, tuple(rows)
