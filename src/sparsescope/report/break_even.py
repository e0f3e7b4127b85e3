"""The dense break-even of SpMM: where storing the matrix sparse stops paying.

At each (matrix, k, layout) with both a sparse case and a dense one (``registry.is_dense``:
``spmm-cublas-dense``, the matrix stored dense and multiplied by cuBLAS)::

    break-even = best sparse time / dense time          (FP32; and TF32 where timed)
    density    = nnz / (rows x cols)

Below 1 the sparse product pays; at or above 1 the dense GEMM is as fast or faster. The best
sparse time is the fastest float32-accurate sparse case of the group, ours or a library's
(a sparse kernel running plain TF32 products is left out: it is not float32-accurate); the
dense time is split by the products' precision the case recorded (its ``precision`` note:
``float32`` or ``TF32``).

Across matrices, the density where the ratio crosses 1 is estimated per (k, layout, math) by a
least-squares line through ``log10(ratio)`` against ``log10(density)``::

    log10(ratio) = a + b log10(density)       crossing: density* = 10^(-a / b), for b > 0

a power law because, both calls being bound by their bytes at small k, the sparse time grows
with the nonzeros (density x rows x cols) and the dense time with rows x cols, so the ratio
grows about as the density (b near 1). It is given only from :data:`MIN_FIT_MATRICES` matrices
of distinct densities, flagged as extrapolated outside the densities measured, and set beside
the bracket the points themselves give (the densest matrix where sparse pays, the sparsest
where dense wins), which says when density alone does not decide.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

from sparsescope.registry import is_dense, is_own
from sparsescope.results.records import CaseResult, MatrixRecord

#: Fewest matrices of distinct densities a crossing is fitted from: a line through two points
#: fits them exactly, leaving nothing to check it by.
MIN_FIT_MATRICES = 3

MATH_TITLES = {"fp32": "FP32", "tf32": "TF32"}

#: How the report names a dense baseline wherever it lists backends (:func:`backend_title`).
DENSE_ROLE = "dense break-even peer"


def backend_title(backend: str) -> str:
    """``backend`` as a report's backend column shows it: a dense baseline (``registry.
    is_dense``) with its role, ``spmm-cublas-dense (dense break-even peer)``, so it is never
    read as a sparse library; any other backend as it is."""
    return f"{backend} ({DENSE_ROLE})" if is_dense(backend) else backend


@dataclass(frozen=True)
class BreakEvenRow:
    """One (matrix, k, layout) with a sparse and a dense time."""

    matrix: str
    k: int
    layout: str
    rows: int
    cols: int
    nnz: int
    density: float
    """nnz / (rows x cols)."""
    sparse_backend: str
    """The fastest float32-accurate sparse backend of the group."""
    sparse_own: bool
    """Whether that backend is one of our kernels (``registry.is_own``)."""
    sparse_ms: float
    dense_fp32_ms: float | None
    """The dense call's time with FP32 products; None where not timed."""
    dense_tf32_ms: float | None
    """The dense call's time with TF32 products; None where not timed."""

    def ratio(self, math_mode: str) -> float | None:
        """best sparse time / dense time in ``math_mode`` (``fp32`` or ``tf32``), or None."""
        dense = self.dense_fp32_ms if math_mode == "fp32" else self.dense_tf32_ms
        return self.sparse_ms / dense if dense else None

    def verdict(self) -> str:
        """``sparse pays`` / ``dense wins`` against each dense time measured."""
        parts = []
        for mode in ("fp32", "tf32"):
            r = self.ratio(mode)
            if r is not None:
                word = "sparse pays" if r < 1.0 else "dense wins"
                parts.append(f"{word} ({MATH_TITLES[mode]})")
        return "; ".join(parts)

    def to_json(self) -> dict:
        return {**asdict(self), "ratio_fp32": self.ratio("fp32"),
                "ratio_tf32": self.ratio("tf32"), "verdict": self.verdict()}


@dataclass(frozen=True)
class Crossing:
    """Where the ratio crosses 1 across the matrices of one (k, layout, math)."""

    k: int
    layout: str
    math: str
    matrices: int
    density_min: float
    density_max: float
    slope: float | None
    """b of the log-log fit; None when not fitted."""
    intercept: float | None
    """a of the log-log fit; None when not fitted."""
    r2: float | None
    """The fit's coefficient of determination (None without a fit, or when every ratio is the
    same)."""
    density: float | None
    """The estimated crossing density; None where none is estimated."""
    extrapolated: bool
    """Whether ``density`` lies outside [density_min, density_max]."""
    sparse_pays_up_to: float | None
    """The densest matrix where the sparse product pays (ratio < 1), or None."""
    dense_wins_from: float | None
    """The sparsest matrix where the dense call is as fast or faster (ratio >= 1), or None."""
    reading: str
    """The estimate (or why there is none) in one sentence."""

    def to_json(self) -> dict:
        return asdict(self)


def _products_in_tf32(case: CaseResult) -> bool:
    """Whether the case's products ran in plain TF32: its ``precision`` note's first word is
    ``TF32`` (the note ``report.ops_spmm.precision_label`` shows; ``3xTF32`` is
    float32-accurate)."""
    return case.notes.get("precision", "").split(" ")[0] == "TF32"


def _timed(case: CaseResult) -> bool:
    t = case.time_ms
    return case.outcome == "ok" and t is not None and math.isfinite(t) and t > 0


def _groups(cases: Iterable[CaseResult], matrices: Mapping[str, MatrixRecord] | None = None
            ) -> dict[tuple, list[CaseResult]]:
    """Timed cases by (matrix, op, parameters); only groups holding a dense case have a
    break-even (the dense baselines are SpMM's, so those parameters hold k and layout)."""
    groups: dict[tuple, list[CaseResult]] = {}
    for c in cases:
        if _timed(c) and (matrices is None or c.matrix in matrices):
            groups.setdefault((c.matrix, c.op, c.params), []).append(c)
    return {key: members for key, members in groups.items()
            if any(is_dense(c.backend) for c in members)}


def _float32_sparse(case: CaseResult) -> bool:
    """A sparse case whose products are float32-accurate (not a dense baseline, not float64,
    not plain TF32)."""
    return not is_dense(case.backend) and case.value_bytes == 4 and not _products_in_tf32(case)


def break_even_rows(cases: Iterable[CaseResult],
                    matrices: Mapping[str, MatrixRecord]) -> list[BreakEvenRow]:
    """One row per (matrix, k, layout) with a float32 sparse case and a dense case timed, in
    the order the groups first appear; a matrix without a record (no shape) is left out."""
    rows = []
    for (name, _, params), members in _groups(cases, matrices).items():
        dense = [c for c in members if is_dense(c.backend)]
        sparse = [c for c in members if _float32_sparse(c)]
        if not sparse:
            continue
        k, layout = params.k, params.layout
        best = min(sparse, key=lambda c: c.time_ms)
        tf32 = [c.time_ms for c in dense if _products_in_tf32(c)]
        fp32 = [c.time_ms for c in dense if not _products_in_tf32(c)]
        st = matrices[name].stats
        cells = st.rows * st.cols
        rows.append(BreakEvenRow(
            matrix=name, k=int(k), layout=layout, rows=st.rows, cols=st.cols, nnz=st.nnz,
            density=st.nnz / cells if cells else 0.0, sparse_backend=best.backend,
            sparse_own=is_own(best.backend), sparse_ms=best.time_ms,
            dense_fp32_ms=min(fp32) if fp32 else None,
            dense_tf32_ms=min(tf32) if tf32 else None))
    return rows


def dense_without_sparse(cases: Iterable[CaseResult]) -> int:
    """(matrix, k, layout) groups with a dense case timed and no float32 sparse one."""
    return sum(not any(_float32_sparse(c) for c in members)
               for members in _groups(cases).values())


def log_log_fit(points: Sequence[tuple[float, float]]) -> tuple[float, float, float | None]:
    """(a, b, R^2) of the least-squares line ``log10(y) = a + b log10(x)`` through ``points``
    (x, y > 0; at least two distinct x)::

        b = S_xy / S_xx     a = mean(Y) - b mean(X)     R^2 = 1 - SS_res / SS_tot

    (X, Y: the logs). R^2 is None when every Y is the same (SS_tot = 0). Hand check: (0.01,
    0.1), (0.1, 1), (1, 10) -> a = 1, b = 1, R^2 = 1."""
    xs = [math.log10(x) for x, _ in points]
    ys = [math.log10(y) for _, y in points]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("a fit needs at least two distinct densities")
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - (a + b * x)) ** 2 for x, y in zip(xs, ys, strict=True))
    return a, b, (1.0 - ss_res / ss_tot) if ss_tot > 0 else None


def crossing(rows: Sequence[BreakEvenRow], k: int, layout: str, math_mode: str) -> Crossing:
    """The crossing of the ratio in ``math_mode`` over ``rows`` (one per matrix, all of the
    same k and layout); the module docstring says how and when it is estimated."""
    points = [(r.density, ratio) for r in rows
              if (ratio := r.ratio(math_mode)) is not None and r.density > 0]
    pays = [d for d, q in points if q < 1.0]
    wins = [d for d, q in points if q >= 1.0]
    base = dict(k=k, layout=layout, math=math_mode, matrices=len(points),
                density_min=min((d for d, _ in points), default=0.0),
                density_max=max((d for d, _ in points), default=0.0),
                sparse_pays_up_to=max(pays, default=None),
                dense_wins_from=min(wins, default=None))
    bracket = _bracket_sentence(base["sparse_pays_up_to"], base["dense_wins_from"])
    distinct = len({d for d, _ in points})
    if distinct < MIN_FIT_MATRICES:
        return Crossing(**base, slope=None, intercept=None, r2=None, density=None,
                        extrapolated=False,
                        reading=f"{distinct} matrices of distinct density: too few for a fit "
                                f"({MIN_FIT_MATRICES} needed). {bracket}")
    a, b, r2 = log_log_fit(points)
    fit = dict(slope=b, intercept=a, r2=r2)
    fitted = f"log-log fit over {len(points)} matrices, slope {b:.2f}, R² " + (
        f"{r2:.2f}" if r2 is not None else "undefined (every ratio equal)")
    if b <= 0:
        return Crossing(**base, **fit, density=None, extrapolated=False,
                        reading=f"the ratio does not rise with density over these matrices "
                                f"({fitted}): no crossing estimated. {bracket}")
    density = 10.0 ** (-a / b)
    outside = not base["density_min"] <= density <= base["density_max"]
    if density > 1.0:
        text = (f"the fit stays below 1 up to a full matrix ({fitted}; it would cross at "
                f"density {density:.3g}): sparse pays at every density, extrapolated beyond "
                f"the densities measured ({base['density_min']:.3g}-"
                f"{base['density_max']:.3g}). {bracket}")
    else:
        where = (f", extrapolated beyond the densities measured ({base['density_min']:.3g}-"
                 f"{base['density_max']:.3g})" if outside else "")
        text = f"sparse stops paying at density {density:.3g} ({fitted}{where}). {bracket}"
    return Crossing(**base, **fit, density=density, extrapolated=outside, reading=text)


def _bracket_sentence(pays: float | None, wins: float | None) -> str:
    if pays is None and wins is None:
        return "No matrix was measured."
    if wins is None:
        return f"Sparse pays on every matrix measured (up to density {pays:.3g})."
    if pays is None:
        return f"Dense wins on every matrix measured (from density {wins:.3g})."
    if pays < wins:
        return (f"Measured: sparse pays up to density {pays:.3g}, dense wins from "
                f"{wins:.3g}.")
    return (f"Measured: sparse pays at density {pays:.3g} while dense already wins at "
            f"{wins:.3g}: density alone does not decide.")


def crossings(rows: Sequence[BreakEvenRow]) -> list[Crossing]:
    """One :class:`Crossing` per (k, layout, math) timed, k ascending, row before col, FP32
    before TF32."""
    out = []
    for k, layout in sorted({(r.k, r.layout) for r in rows}):
        group = [r for r in rows if (r.k, r.layout) == (k, layout)]
        for mode in ("fp32", "tf32"):
            if any(r.ratio(mode) is not None for r in group):
                out.append(crossing(group, k, layout, mode))
    return out
