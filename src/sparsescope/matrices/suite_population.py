"""Generated populations: ``population``, 204 matrices for collection sweeps and for kernel
selection that must hold beyond the six seed analogs (issues 15 and 17); ``spmm-population``,
60 SpMM shapes at the sizes people run (issue 18, :data:`SPMM_POPULATION`).

Design (fixed, no random draw: the same suite on every machine):

- every generator kind, 34 matrices each: ``banded``, ``powerlaw``, ``scattered``,
  ``uniform``, ``rmat``, ``pruned``;
- nonzeros log-spaced over 10^4 .. 2 x 10^7 within each kind (entry j of 34 at
  ``10^(4 + log10(2000) x j / 33)``), so every kind spans the whole range;
- mean row length cycling over 3, 6, 12, 24, 48, 96 (rows = nnz / mean), so short-row graphs
  and long-row FEM shapes meet every size; ``pruned`` instead takes DNN-layer shapes, 512 to
  8,192 rows and columns, at 50 to 98 % sparsity;
- each kind's own structure knob cycling (band half-width and block, power-law exponent and
  long rows, scattered fraction, R-MAT skew, pruned row spread), so row-length distributions
  range from constant to heavy-tailed.

Every third entry (``j % 3 == 2``) is *held out*: no kernel choice, rule or model constant may
be tuned on it, and results are reported on it separately (:func:`is_held_out`).
"""

from __future__ import annotations

import math

from sparsescope.matrices.suites import Suite, SuiteEntry

KINDS = ("banded", "powerlaw", "scattered", "uniform", "rmat", "pruned")
PER_KIND = 34
NNZ_LO, NNZ_HI = 10_000, 20_000_000
ROW_MEANS = (3, 6, 12, 24, 48, 96)
#: Each kind's structure knob, cycled over its entries.
KNOBS: dict[str, tuple[dict, ...]] = {
    "banded": ({"block": 1}, {"block": 3}, {"block": 6, "jitter": 0.1},
               {"block": 3, "jitter": 0.6}),
    "powerlaw": ({"row_alpha": 1.5, "long_rows": 0}, {"row_alpha": 1.8},
                 {"row_alpha": 2.5, "long_rows": 8, "long_row_frac": 0.05},
                 {"row_alpha": 1.8, "col_gamma": 1.5}),
    "scattered": ({"far_fraction": 0.01}, {"far_fraction": 0.1}, {"far_fraction": 0.5}),
    "uniform": ({},),
    "rmat": ({"a": 0.45, "b": 0.25, "c": 0.25, "d": 0.05}, {}, {"a": 0.7, "b": 0.1, "c": 0.1,
                                                                "d": 0.1}),
    "pruned": ({"row_std": 0.0}, {"row_std": 0.3}, {"row_std": 1.0}),
}
#: DNN-layer sizes of ``pruned`` entries (rows x cols, each side from here) and densities.
LAYER_SIDES = (512, 1024, 2048, 4096, 8192)
DENSITIES = (0.5, 0.3, 0.2, 0.1, 0.05, 0.02)


def _nnz(j: int) -> int:
    """Entry j's nonzeros: log-spaced from NNZ_LO (j = 0) to NNZ_HI (j = PER_KIND - 1)."""
    return round(NNZ_LO * (NNZ_HI / NNZ_LO) ** (j / (PER_KIND - 1)))


def _pruned_entry(name: str, j: int, knob: dict, held: str) -> SuiteEntry:
    rows = LAYER_SIDES[j % len(LAYER_SIDES)]
    cols = LAYER_SIDES[(j // len(LAYER_SIDES) + j) % len(LAYER_SIDES)]
    density = DENSITIES[j % len(DENSITIES)]
    nnz = max(1, math.ceil(rows * cols * density))
    return SuiteEntry(name, "pruned", rows, cols, nnz, dict(knob),
                      description=f"pruned layer {rows} x {cols}, {100 * (1 - density):.0f} % "
                                  f"sparse{held}")


def _entry(kind: str, j: int) -> SuiteEntry:
    knob = KNOBS[kind][j % len(KNOBS[kind])]
    held = ", held out" if j % 3 == 2 else ""
    name = f"{kind}-{j:02d}"
    if kind == "pruned":
        return _pruned_entry(name, j, knob, held)
    nnz = _nnz(j)
    mean = ROW_MEANS[j % len(ROW_MEANS)]
    rows = max(32, math.ceil(nnz / mean))
    params = dict(knob)
    if kind == "banded":  # the band is wide enough for the mean row (runs of `block`)
        params["halfwidth"] = max(2, mean)
    knobs = ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
    return SuiteEntry(name, kind, rows, rows, nnz, params,
                      description=f"{kind}, {nnz / rows:.1f} nnz/row{', ' if knobs else ''}"
                                  f"{knobs}{held}")


POPULATION = Suite(
    "population",
    f"{len(KINDS) * PER_KIND} generated matrices: every kind, 10^4 to 2 x 10^7 nonzeros, "
    "row means 3 to 96, each kind's structure varied; every third held out",
    tuple(_entry(kind, j) for kind in KINDS for j in range(PER_KIND)))


def is_held_out(name: str) -> bool:
    """Whether population entry ``name`` (``kind-jj``) is in the held-out third."""
    kind, _, j = name.rpartition("-")
    if kind not in KINDS or not j.isdigit():
        raise ValueError(f"{name!r} is not a population entry (kind-jj)")
    return int(j) % 3 == 2


#: ``spmm-population`` (issue 18): the shapes SpMM users run. Graphs for GNN aggregation
#: (power-law and R-MAT, 10^4 to 5 x 10^6 rows), pruned transformer / CNN weights (512 to
#: 4,096 rows and columns at 50 to 98 % sparsity, DLMC's range), banded / FEM matrices.
GRAPH_ROWS = (10_000, 30_000, 100_000, 300_000, 1_000_000, 2_000_000, 3_000_000, 5_000_000)
GRAPH_DEGREES = (4, 16, 48)
#: Shapes above this many nonzeros are left out (the float64 reference of Y at k = 512 must
#: fit a host's memory).
SPMM_MAX_NNZ = 100_000_000
WEIGHT_SIDES = (512, 1024, 2048, 4096)
WEIGHT_SPARSITY = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98)
FEM_ROWS = (20_000, 60_000, 200_000, 500_000, 1_500_000)
FEM_ROW_MEANS = (9, 27, 81)


def _spmm_entries() -> tuple[SuiteEntry, ...]:
    entries = []
    graphs = [(r, d) for r in GRAPH_ROWS for d in GRAPH_DEGREES if r * d <= SPMM_MAX_NNZ]
    for i, (rows, degree) in enumerate(graphs):
        kind = "rmat" if i % 3 == 1 else "powerlaw"
        params = {} if kind == "rmat" else {"row_alpha": (1.6, 2.0, 2.4)[i % 3]}
        entries.append(SuiteEntry(f"graph-{i:02d}", kind, rows, rows, rows * degree, params,
                                  description=f"{kind} graph, {rows:,} nodes, mean degree "
                                              f"{degree}"))
    for i, (side, sparsity) in enumerate((s, p) for s in WEIGHT_SIDES for p in WEIGHT_SPARSITY):
        cols = WEIGHT_SIDES[(WEIGHT_SIDES.index(side) + i) % len(WEIGHT_SIDES)]
        nnz = math.ceil(side * cols * (1 - sparsity))
        entries.append(SuiteEntry(f"weights-{i:02d}", "pruned", side, cols, nnz,
                                  {"row_std": (0.0, 0.3, 1.0)[i % 3] * nnz / side / 4},
                                  description=f"pruned weights {side} x {cols}, "
                                              f"{100 * sparsity:.0f} % sparse"))
    fems = [(r, m) for r in FEM_ROWS for m in FEM_ROW_MEANS if r * m <= SPMM_MAX_NNZ]
    for i, (rows, mean) in enumerate(fems):
        entries.append(SuiteEntry(f"fem-{i:02d}", "banded", rows, rows, rows * mean,
                                  {"halfwidth": 2 * mean, "block": 3},
                                  description=f"banded FEM, {rows:,} rows, {mean} nnz/row"))
    return tuple(entries)


SPMM_POPULATION = Suite(
    "spmm-population",
    "SpMM shapes: power-law / R-MAT graphs to 5 M rows, pruned weights 512-4,096 at 50-98 % "
    "sparsity, banded FEM; every third held out",
    _spmm_entries())


def is_held_out_spmm(name: str) -> bool:
    """Whether ``spmm-population`` entry ``name`` (``family-ii``) is in the held-out third."""
    family, _, i = name.rpartition("-")
    if family not in ("graph", "weights", "fem") or not i.isdigit():
        raise ValueError(f"{name!r} is not an spmm-population entry (family-ii)")
    return int(i) % 3 == 2


def split_suite(suite: Suite, held_out) -> tuple[Suite, Suite]:
    """``(NAME-held-out, NAME-tuning)``: the suite's held-out third and the rest, in the
    suite's order, so a run or sweep can name either part (``suite:spmm-population-held-out``).
    """
    held = tuple(e for e in suite.entries if held_out(e.name))
    rest = tuple(e for e in suite.entries if not held_out(e.name))
    return (Suite(f"{suite.name}-held-out", f"the held-out third of {suite.name} ({len(held)}: "
                  "no rule or constant may be tuned on it)", held, suite.scalable),
            Suite(f"{suite.name}-tuning", f"{suite.name} less its held-out third "
                  f"({len(rest)})", rest, suite.scalable))


#: The parts of both populations, registered as suites beside them.
POPULATION_PARTS = (*split_suite(POPULATION, is_held_out),
                    *split_suite(SPMM_POPULATION, is_held_out_spmm))
