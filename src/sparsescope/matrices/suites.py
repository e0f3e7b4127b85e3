"""Named suites of generated matrices.

``seed6`` holds stand-ins for six SuiteSparse matrices used in the seed reports, with exactly their
rows and nnz at scale 1 and a generator imitating their structure; ``awkward`` holds small
matrices built to break kernels (empty rows, one row holding most entries, 1 x 1, 1 x N, N x 1,
sizes that are not multiples of 32, a single entry).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.matrices.generators import generate
from sparsescope.matrices.names import check_suite, parse_matrix_name
from sparsescope.matrices.types import Matrix


@dataclass(frozen=True)
class SuiteEntry:
    """One matrix of a suite: how to generate it."""

    name: str
    """Short name used in tables, e.g. ``cant``."""
    kind: str
    """Generator name (a key of ``GENERATORS``)."""
    rows: int
    cols: int
    nnz: int
    params: dict[str, float] = field(default_factory=dict)
    """Generator parameters beyond rows, cols, nnz and seed."""
    analog_of: str | None = None
    """The real matrix this one imitates (same rows and nnz at scale 1), or None."""
    suitesparse: str | None = None
    """``Group/Name`` of the real matrix in the SuiteSparse collection, or None."""
    description: str = ""

    def source(self, seed: int) -> str:
        extra = "".join(f", {k}={v}" for k, v in sorted(self.params.items()))
        return (f"generated:{self.kind}(rows={self.rows}, cols={self.cols}, nnz={self.nnz}, "
                f"seed={seed}{extra})")


@dataclass(frozen=True)
class Suite:
    """A named, ordered list of matrices."""

    name: str
    description: str
    entries: tuple[SuiteEntry, ...]
    scalable: bool = True
    """Whether ``scale`` shrinks the entries (the awkward suite keeps its exact sizes)."""


def _square(name, kind, n, nnz, analog, group, description, **params) -> SuiteEntry:
    return SuiteEntry(name, kind, n, n, nnz, dict(params), analog,
                      f"{group}/{analog}", description)


SEED6 = Suite("seed6", "stand-ins for six SuiteSparse matrices (exact rows and nnz at scale 1)", (
    _square("webbase-1M", "powerlaw", 1_000_005, 3_105_536, "webbase-1M", "Williams",
            "web graph: power-law rows and columns, a few very long rows",
            long_rows=4, long_row_frac=0.0047),
    _square("cant", "banded", 62_451, 4_007_383, "cant", "Williams",
            "FEM cantilever: banded, 3-dof blocks"),
    _square("pwtk", "banded", 217_918, 11_634_424, "pwtk", "Boeing",
            "pressurised wind tunnel stiffness: banded, 3-dof blocks"),
    _square("ldoor", "banded", 952_203, 46_522_475, "ldoor", "GHS_psdef",
            "large door FEM: banded, 3-dof blocks"),
    _square("circuit5M", "powerlaw", 5_558_326, 59_524_291, "circuit5M", "Freescale",
            "circuit simulation: power-law rows, a few rows spanning a quarter of the columns",
            long_rows=3, long_row_frac=0.23),
    _square("cage15", "scattered", 5_154_859, 99_199_551, "cage15", "vanHeukelum",
            "DNA electrophoresis: mostly local columns, 10% scattered", far_fraction=0.1),
))


def _small(name, kind, rows, cols, nnz, description, **params) -> SuiteEntry:
    return SuiteEntry(name, kind, rows, cols, nnz, dict(params),
                      description=description)


AWKWARD = Suite("awkward", "small matrices that break kernels (fixed sizes; scale is ignored)", (
    _small("empty-rows", "uniform", 100, 100, 30, "30 entries in 100 rows: most rows empty"),
    _small("heavy-row", "powerlaw", 77, 77, 100, "one full row holds 77 of the 100 entries",
           long_rows=1, long_row_frac=1.0),
    _small("one-by-one", "uniform", 1, 1, 1, "1 x 1"),
    _small("one-row", "uniform", 1, 1000, 300, "1 x 1000"),
    _small("one-col", "uniform", 1000, 1, 300, "1000 x 1"),
    _small("banded-1001", "banded", 1001, 1001, 7007, "banded, size not a multiple of 32"),
    _small("scattered-999", "scattered", 999, 999, 9990, "scattered, size not a multiple of 32"),
    _small("rmat-257", "rmat", 257, 257, 3000, "R-MAT on 257 rows (not a power of two)"),
    _small("wide-33x95", "uniform", 33, 95, 500, "rectangular 33 x 95"),
    _small("single-entry", "uniform", 513, 513, 1, "one entry in a 513 x 513 matrix"),
), scalable=False)

#: suite name -> Suite
SUITES: dict[str, Suite] = {suite.name: suite for suite in (SEED6, AWKWARD)}


def list_suites() -> list[str]:
    """Names of the known suites."""
    return list(SUITES)


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise UnknownNameError("suite", name, list(SUITES))
    return SUITES[name]


def scale_entry(entry: SuiteEntry, scale: float) -> SuiteEntry:
    """Shrink rows and cols by ``scale`` (at least 1), keeping nnz per row about the same.

    rows' = max(1, round(rows * scale)), cols' likewise, nnz' = round(nnz * rows' / rows),
    clipped to [1, rows' * cols']. Scale 1 returns the entry unchanged.
    """
    if scale == 1.0:
        return entry
    rows = max(1, round(entry.rows * scale))
    cols = max(1, round(entry.cols * scale))
    nnz = min(rows * cols, max(1, round(entry.nnz * rows / entry.rows)))
    return replace(entry, rows=rows, cols=cols, nnz=nnz)


def split_suite_name(text: str) -> tuple[str, tuple[str, ...]]:
    """``"seed6#cant,pwtk"`` -> ``("seed6", ("cant", "pwtk"))``; ``"seed6"`` -> ``("seed6",
    ())`` (every entry); ``"suite:seed6#cant"`` -> ``("seed6", ("cant",))``. Parsed by
    :func:`sparsescope.matrices.names.parse_matrix_name`, the one parser of suite names (no
    deprecation warning at this level: the commands warn where a user typed an old form). A
    name's ``@SCALE`` is refused here: the scale is the ``scale`` argument."""
    name = parse_matrix_name(text, SUITES, suite_option=True)
    if name.scale is not None:
        raise UsageError(f"{text}: give the scale as the scale argument here, not as @SCALE")
    return name.suite, name.entries


def suite_entries(name: str, scale: float = 1.0) -> list[SuiteEntry]:
    """The entries of suite ``name`` at ``scale`` (ignored by suites that are not scalable).
    ``NAME#A,B`` (or ``suite:NAME#A,B``) names only entries A and B of suite NAME, in that
    order (a run split over several calls); an unknown suite or an entry the suite lacks
    raises :class:`UnknownNameError` naming ``name``."""
    parsed = parse_matrix_name(name, SUITES, suite_option=True)
    if parsed.scale is not None:
        raise UsageError(f"{name}: give the scale as the scale argument here, not as @SCALE")
    suite = check_suite(parsed, SUITES)
    if not 0 < scale <= 1:
        raise UsageError(f"scale must be in (0, 1] (a fraction of the suite), got {scale}")
    entries = (list(suite.entries) if not suite.scalable
               else [scale_entry(entry, scale) for entry in suite.entries])
    if not parsed.entries:
        return entries
    by_name = {e.name: e for e in entries}
    return [by_name[e] for e in parsed.entries]


def find_entry(name: str, entry_name: str, scale: float = 1.0) -> SuiteEntry:
    entries = suite_entries(name, scale)
    for entry in entries:
        if entry.name == entry_name:
            return entry
    raise UnknownNameError(f"entry of suite {name!r}", entry_name, [e.name for e in entries])


def build_entry(entry: SuiteEntry, seed: int = 0) -> Matrix:
    """Generate one suite entry, or read it back from the generated-matrix cache
    (:mod:`sparsescope.matrices.generated_cache`: the same matrix, generated once per
    machine)."""
    from sparsescope.matrices.generated_cache import generate_cached

    csr = generate_cached(generate, entry.kind, entry.rows, entry.nnz, cols=entry.cols,
                          seed=seed, params=dict(entry.params))
    return Matrix(name=entry.name, csr=csr, source=entry.source(seed), kind=entry.kind,
                  analog_of=entry.analog_of, seed=seed)


def load_suite(name: str, scale: float = 1.0, seed: int = 0) -> Iterator[Matrix]:
    """Generate the matrices of a suite lazily, one at a time (argument errors raise at once)."""
    entries = suite_entries(name, scale)
    return (build_entry(entry, seed) for entry in entries)
