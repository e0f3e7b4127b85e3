"""``population``: 204 generated matrices for collection sweeps and for kernel selection that
must hold beyond the six seed analogs (issues 15 and 17).

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
