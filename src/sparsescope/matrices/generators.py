"""Deterministic synthetic sparse matrices with exact rows and nnz and realistic structure.

Every generator has the signature ``fn(rows, nnz, *, cols=None, seed=0, **params)`` and returns
canonical CSR (float64 values in (0, 1], int32 indices when they fit, sorted columns, no
duplicates) with exactly ``nnz`` entries; the same arguments always give the same matrix (with
the same NumPy: the stream of ``numpy.random.default_rng(seed)`` is fixed).
Each picks row lengths summing exactly to ``nnz`` and then fills every row with sorted distinct
columns from one or more windows (see :mod:`sparsescope.matrices._sampling`).

========== ==================================================================================
banded     FEM-like: each row's columns lie in a window of ``2*halfwidth+1`` columns around the
           diagonal, in runs of ``block`` consecutive columns (dof blocks); lengths within
           +-``jitter`` of the mean.
powerlaw   Pareto(``row_alpha``) row lengths plus ``long_rows`` very long rows of
           ``long_row_frac * cols`` entries; column popularity follows a power law (column
           position ``cols * u**col_gamma``: low columns are hubs).
scattered  local plus scattered: a fraction ``1 - far_fraction`` of each row in a window of
           ``2*halfwidth+1`` columns around the diagonal, the rest uniform over the columns
           outside it.
uniform    uniform random: multinomial row lengths, uniform distinct columns.
rmat       R-MAT (Chakrabarti et al. 2004) with quadrant probabilities a, b, c, d: row lengths
           from the R-MAT row marginal, columns from the R-MAT column law given the row.
========== ==================================================================================
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.matrices._sampling import (
    apportion,
    assemble,
    check_sizes,
    multinomial_lengths,
    segment_positions,
    sorted_distinct,
    window_starts,
)


def _setup(rows: int, nnz: int, cols: int | None, seed: int):
    rows, nnz = int(rows), int(nnz)
    cols = rows if cols is None else int(cols)
    check_sizes(rows, cols, nnz)
    return rows, nnz, cols, np.random.default_rng(seed)


def _single_window(lengths, lo, width, rng, **kwargs):
    """fill() for kinds whose rows draw from one window each."""
    lo = np.broadcast_to(np.asarray(lo, dtype=np.int64), lengths.shape)
    width = np.broadcast_to(np.asarray(width, dtype=np.int64), lengths.shape)

    def fill(r0: int, r1: int, out: np.ndarray) -> None:
        ids = np.arange(r0, r1, dtype=np.int64) if kwargs.get("transform") else None
        out[:] = sorted_distinct(lengths[r0:r1], lo[r0:r1], width[r0:r1], rng, row_ids=ids,
                                 **kwargs)

    return fill


def banded(rows: int, nnz: int, *, cols: int | None = None, seed: int = 0,
           halfwidth: int | None = None, block: int = 3, jitter: float = 0.25) -> sp.csr_matrix:
    """FEM-like band: columns within ``halfwidth`` of the diagonal, in runs of ``block``.

    ``halfwidth`` defaults to ``ceil(4 * nnz / rows)``; it is widened when the band could not
    hold ``nnz`` entries. Bandwidth (max |col - row|, square case) is at most ``2*halfwidth``.
    """
    rows, nnz, cols, rng = _setup(rows, nnz, cols, seed)
    if block < 1 or not 0.0 <= jitter < 1.0:
        raise UsageError("banded needs block >= 1 and 0 <= jitter < 1")
    mean = nnz / rows
    half = int(halfwidth) if halfwidth is not None else max(math.ceil(4 * mean), int(block))
    width = min(cols, max(2 * half + 1, math.ceil(mean / (1.0 - jitter)) + 1))
    width = max(width, min(cols, math.ceil(nnz / rows)))
    weights = 1.0 + jitter * (2.0 * rng.random(rows) - 1.0)
    lengths = apportion(weights, nnz, width)
    lo = window_starts(rows, cols, width)
    return assemble(rows, cols, lengths, _single_window(lengths, lo, width, rng, group=block),
                    rng)


def _power_transform(gamma: float):
    def transform(y, draws, row_ids):
        return np.power(y, gamma, out=y)
    return transform


def powerlaw(rows: int, nnz: int, *, cols: int | None = None, seed: int = 0,
             row_alpha: float = 1.8, col_gamma: float = 3.0, long_rows: int = 3,
             long_row_frac: float = 0.01, min_row: int = 1) -> sp.csr_matrix:
    """Power-law rows and column popularity, plus ``long_rows`` rows of ``long_row_frac*cols``.

    Long rows are capped at ``0.9 * nnz`` in total; the other rows get at least ``min_row``
    entries when nnz allows, the rest in proportion to Pareto(``row_alpha``) weights, and no more
    than a long row. A column
    lands at ``cols * u**col_gamma`` (u uniform): density ~ x**(1/col_gamma - 1), a power law.
    """
    rows, nnz, cols, rng = _setup(rows, nnz, cols, seed)
    if row_alpha <= 0 or col_gamma <= 0 or long_rows < 0 or not 0 < long_row_frac <= 1:
        raise UsageError("powerlaw needs row_alpha > 0, col_gamma > 0, long_rows >= 0 and "
                         "0 < long_row_frac <= 1")
    n_long = min(int(long_rows), rows)
    long_len = 0
    if n_long:
        long_len = min(cols, max(1, round(long_row_frac * cols)), int(0.9 * nnz) // n_long)
    if long_len == 0:
        n_long = 0
    elif nnz - n_long * long_len > (rows - n_long) * cols:
        # Nearly dense: the other rows cannot hold the rest, so the long rows take more.
        long_len = math.ceil((nnz - (rows - n_long) * cols) / n_long)
    lengths = np.zeros(rows, dtype=np.int64)
    long_ids = rng.choice(rows, size=n_long, replace=False) if n_long else np.empty(0, np.int64)
    lengths[long_ids] = long_len
    others = np.ones(rows, dtype=bool)
    others[long_ids] = False
    rest = nnz - n_long * long_len
    n_others = rows - n_long
    if n_others == 0:
        lengths = apportion(np.ones(rows), nnz, cols)
    else:
        # The long rows stay the longest: the Pareto tail is capped at their length if it fits.
        cap = long_len if n_long and rest <= n_others * long_len else cols
        floor = min(int(min_row), rest // n_others, cap)
        weights = (1.0 - rng.random(n_others)) ** (-1.0 / row_alpha)
        lengths[others] = floor + apportion(weights, rest - floor * n_others, cap - floor)
    fill = _single_window(lengths, 0, cols, rng, transform=_power_transform(col_gamma))
    return assemble(rows, cols, lengths, fill, rng)


def scattered(rows: int, nnz: int, *, cols: int | None = None, seed: int = 0,
              halfwidth: int | None = None, far_fraction: float = 0.1,
              jitter: float = 0.5) -> sp.csr_matrix:
    """Local plus scattered: most columns near the diagonal, ``far_fraction`` uniform elsewhere.

    Each row has three disjoint column ranges: left of its window, the window of
    ``2*halfwidth+1`` columns (default ``halfwidth = ceil(2 * nnz / rows)``), right of it. The far
    entries are split between left and right by a binomial draw in proportion to their sizes;
    concatenating the three sorted pieces gives a sorted row with no duplicate.
    """
    rows, nnz, cols, rng = _setup(rows, nnz, cols, seed)
    if not 0.0 <= far_fraction <= 1.0 or not 0.0 <= jitter < 1.0:
        raise UsageError("scattered needs 0 <= far_fraction <= 1 and 0 <= jitter < 1")
    mean = nnz / rows
    half = int(halfwidth) if halfwidth is not None else max(1, math.ceil(2 * mean))
    width = min(cols, 2 * half + 1)
    weights = 1.0 + jitter * (2.0 * rng.random(rows) - 1.0)
    lengths = apportion(weights, nnz, cols)
    lo = window_starts(rows, cols, width)
    outside = cols - width
    far = np.clip(np.rint(far_fraction * lengths).astype(np.int64), lengths - width, outside)
    near = lengths - far
    left_size = lo
    right_size = outside - lo
    p_left = np.divide(left_size, outside, out=np.zeros(rows), where=outside > 0)
    left = np.clip(rng.binomial(far, p_left), far - right_size, left_size)
    right = far - left
    pieces = ((left, np.zeros(rows, np.int64), left_size), (near, lo, np.full(rows, width)),
              (right, lo + width, right_size))

    def fill(r0: int, r1: int, out: np.ndarray) -> None:
        offset = np.zeros(r1 - r0, dtype=np.int64)
        row_start = np.cumsum(lengths[r0:r1]) - lengths[r0:r1]
        for count, start, size in pieces:
            part = count[r0:r1]
            cols_part = sorted_distinct(part, start[r0:r1], size[r0:r1], rng)
            out[segment_positions(row_start + offset, part)] = cols_part
            offset += part

    return assemble(rows, cols, lengths, fill, rng)


def uniform(rows: int, nnz: int, *, cols: int | None = None, seed: int = 0) -> sp.csr_matrix:
    """Uniform random: multinomial row lengths, uniform distinct sorted columns per row."""
    rows, nnz, cols, rng = _setup(rows, nnz, cols, seed)
    lengths = multinomial_lengths(np.ones(rows), nnz, cols, rng)
    return assemble(rows, cols, lengths, _single_window(lengths, 0, cols, rng), rng)


def _levels(n: int) -> int:
    return max(0, (n - 1).bit_length())


def _row_bit(row_ids: np.ndarray, level: int, row_levels: int) -> np.ndarray:
    """Bit ``level`` (0 = most significant of ``row_levels``) of each row index; 0 past the end."""
    if level >= row_levels:
        return np.zeros(len(row_ids), dtype=bool)
    return ((row_ids >> (row_levels - 1 - level)) & 1).astype(bool)


def _rmat_transform(rows: int, cols: int, a: float, b: float, c: float, d: float):
    """Monotone map u -> column position under R-MAT, by arithmetic decoding of the column bits.

    At column level l the bit is 0 with probability a/(a+b) when the row's bit l is 0 and
    c/(c+d) when it is 1 (rows with fewer levels use the marginal (a+c)). Only [0, cols) of the
    2**levels columns exists: u is first scaled by F_row(cols / 2**levels), the probability of
    that range, and the result divided by cols / 2**levels, so y' lies in [0, 1).
    """
    row_levels, col_levels = _levels(rows), _levels(cols)
    eps = 1e-12
    p_top = min(max(a / (a + b), eps), 1 - eps) if a + b > 0 else 0.5
    p_bottom = min(max(c / (c + d), eps), 1 - eps) if c + d > 0 else 0.5
    p_marginal = min(max(a + c, eps), 1 - eps)
    cut = cols / float(1 << col_levels)

    def p_zero(row_ids, level):
        if level >= row_levels:
            return np.full(len(row_ids), p_marginal)
        return np.where(_row_bit(row_ids, level, row_levels), p_bottom, p_top)

    def transform(y, draws, row_ids):
        ids = np.repeat(row_ids, draws)
        if cut < 1.0:  # probability that the column falls below `cols`
            mass = np.zeros(len(row_ids))
            prefix = np.ones(len(row_ids))
            for level in range(col_levels):
                p0 = p_zero(row_ids, level)
                if (cols >> (col_levels - 1 - level)) & 1:
                    mass += prefix * p0
                    prefix *= 1.0 - p0
                else:
                    prefix *= p0
            y = y * np.repeat(mass, draws)
        position = np.zeros(len(y))
        for level in range(col_levels):
            p0 = p_zero(ids, level)
            one = y >= p0
            position += one * 0.5 ** (level + 1)
            y = np.where(one, (y - p0) / (1.0 - p0), y / p0)
        position += np.clip(y, 0.0, 1.0) * 0.5 ** col_levels
        return np.minimum(position / cut, np.nextafter(1.0, 0.0))

    return transform


def rmat(rows: int, nnz: int, *, cols: int | None = None, seed: int = 0, a: float = 0.57,
         b: float = 0.19, c: float = 0.19, d: float = 0.05) -> sp.csr_matrix:
    """R-MAT with quadrant probabilities ``a, b, c, d`` (normalised to sum 1), without duplicates.

    Row i's length is multinomial with probability prod_l (a+b if bit_l(i)=0 else c+d); its
    columns are sorted distinct draws from the R-MAT column law given the row's bits.
    """
    rows, nnz, cols, rng = _setup(rows, nnz, cols, seed)
    quad = np.array([a, b, c, d], dtype=np.float64)
    if (quad < 0).any() or quad.sum() <= 0:
        raise UsageError("rmat needs a, b, c, d >= 0 with a positive sum")
    a, b, c, d = (quad / quad.sum()).tolist()
    row_levels = _levels(rows)
    ids = np.arange(rows, dtype=np.int64)
    probs = np.ones(rows)
    for level in range(row_levels):
        probs *= np.where(_row_bit(ids, level, row_levels), c + d, a + b)
    if probs.sum() <= 0:
        probs = np.ones(rows)
    lengths = multinomial_lengths(probs, nnz, cols, rng)
    fill = _single_window(lengths, 0, cols, rng, transform=_rmat_transform(rows, cols, a, b, c, d))
    return assemble(rows, cols, lengths, fill, rng)


#: generator name -> function(rows, nnz, *, cols=None, seed=0, **params) -> canonical CSR
GENERATORS: dict[str, Callable[..., sp.csr_matrix]] = {
    "banded": banded,
    "powerlaw": powerlaw,
    "scattered": scattered,
    "uniform": uniform,
    "rmat": rmat,
}


def generator_summary(kind: str) -> str:
    """A generator's one-sentence description: the first paragraph of its docstring, on one line
    (a summary that wraps in the source is joined, never cut at the line break)."""
    doc = inspect.getdoc(GENERATORS[kind]) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def generator_params(kind: str) -> dict[str, object]:
    """The tunable parameters of a generator and their defaults."""
    signature = inspect.signature(GENERATORS[kind])
    return {name: p.default for name, p in signature.parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in ("cols", "seed")}


def generate(kind: str, rows: int, nnz: int, *, cols: int | None = None, seed: int = 0,
             **params) -> sp.csr_matrix:
    """Generate a ``kind`` matrix (see :data:`GENERATORS`) with exactly ``rows`` and ``nnz``."""
    if kind not in GENERATORS:
        raise UnknownNameError("generator", kind, list(GENERATORS))
    allowed = generator_params(kind)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise UsageError(
            f"generator {kind!r} has no parameter {', '.join(unknown)}; its parameters: "
            f"{', '.join(allowed) or 'none'}")
    for name, value in params.items():
        _check_param(kind, name, value, allowed[name])
    return GENERATORS[kind](rows, nnz, cols=cols, seed=seed, **params)


def _check_param(kind: str, name: str, value, default) -> None:
    """Every generator parameter is a width, a count, a fraction, an exponent or a probability:
    a finite number >= 0, whole where its default is whole (or None: a width worked out from
    the size). A NaN used to reach ``int()`` as a traceback, and a negative width was used."""
    import math

    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UsageError(f"generator {kind!r}: {name}={value!r} is not a finite number")
    if value < 0:
        raise UsageError(f"generator {kind!r}: {name}={value!r} must be >= 0")
    if (default is None or isinstance(default, int)) and value != int(value):
        raise UsageError(f"generator {kind!r}: {name}={value!r} must be a whole number")
