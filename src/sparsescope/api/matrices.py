"""``sparsescope matrices``: the suites and generators, one matrix's structure statistics,
generated matrices written to files."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Catalogue:
    """Every suite (with its entries at a scale) and every generator."""

    suites: tuple = ()
    """(name, ``matrices.suites.Suite``, its entries) per suite."""
    generators: tuple = ()
    """(kind, default parameters, summary) per generator."""


def matrix_catalogue(scale: float = 1.0) -> Catalogue:
    """The suites' entries at ``scale`` and the generators with their parameters."""
    from sparsescope.matrices import SUITES, suite_entries
    from sparsescope.matrices.generators import GENERATORS, generator_params, generator_summary

    suites = tuple((name, suite, tuple(suite_entries(name, scale)))
                   for name, suite in SUITES.items())
    generators = tuple((kind, generator_params(kind), generator_summary(kind))
                       for kind in GENERATORS)
    return Catalogue(suites, generators)


def load_matrix(spec: str, *, scale: float = 1.0, seed: int = 0, strict: bool = False):
    """A ``matrices.Matrix`` from a path, ``suitesparse:Group/Name``, or one suite entry
    ``suite:NAME#ENTRY[@SCALE]`` (generated at its ``@SCALE`` or ``scale``, with ``seed``;
    the old forms ``NAME:ENTRY`` and ``NAME#ENTRY`` warn, see
    :mod:`sparsescope.matrices.names`)."""
    from sparsescope.matrices.selection import load_named_matrix

    return load_named_matrix(spec, scale=scale, seed=seed, strict=strict)


def matrix_selection(suite: str | None = None, matrices: Sequence[str] = (), *,
                     scale: float = 1.0, entries: Sequence[str] = ()):
    """What a command's matrix arguments select (``matrices.names.MatrixSelection``): one
    suite's entries at one scale, or files. ``suite`` is a ``--suite`` option's text,
    ``matrices`` files or suite names (``suite:seed6#cant@0.05``), ``entries`` entries of
    the suite by name. The suite and entries are checked here; old forms warn once each."""
    from sparsescope.matrices.selection import matrix_selection as select

    return select(suite, matrices, scale=scale, entries=entries)


def suite_matrix(suite: str | None = None, matrix: str | None = None, *, scale: float = 1.0):
    """The one suite entry ``--suite`` / ``--matrix`` name (``matrices.names.SuiteMatrix``:
    suite, entry, scale), checked; None when ``matrix`` is a file and no suite is given."""
    from sparsescope.matrices.selection import one_suite_matrix

    return one_suite_matrix(suite, matrix, scale=scale)


def matrix_stats(spec: str, *, window_rows: int = 0, scale: float = 1.0, seed: int = 0,
                 strict: bool = False):
    """(the matrix :func:`load_matrix` loads, its ``matrices.MatrixStats``); ``window_rows``:
    the rows over which x's 128-byte lines count as re-read."""
    from sparsescope.errors import UsageError
    from sparsescope.matrices import compute_stats

    if window_rows < 0:
        raise UsageError("--window-rows must be >= 0")
    matrix = load_matrix(spec, scale=scale, seed=seed, strict=strict)
    return matrix, compute_stats(matrix.csr, window_rows=window_rows)


@dataclass(frozen=True)
class GeneratedMatrix:
    """A matrix generated and written."""

    path: Path
    name: str
    kind: str
    rows: int
    cols: int
    nnz: int
    seed: int
    generate_s: float
    params: dict = field(default_factory=dict)
    analog_of: str | None = None


def generate_matrix(kind: str, rows: int, nnz: int, out: str | Path, *,
                    cols: int | None = None, seed: int = 0,
                    params: dict | None = None) -> GeneratedMatrix:
    """Generate one matrix of ``kind`` and write it to ``out`` (its suffix picks the format);
    the path is checked before generating."""
    from sparsescope._outputs import check_out_file
    from sparsescope.matrices import generate, write_matrix

    check_out_file(out)  # before generating: a bad path must not cost the generation
    params = dict(params or {})
    start = time.perf_counter()
    csr = generate(kind, rows, nnz, cols=cols, seed=seed, **params)
    seconds = time.perf_counter() - start
    path = write_matrix(csr, out)
    return GeneratedMatrix(Path(path), Path(path).stem, kind, csr.shape[0], csr.shape[1],
                           csr.nnz, seed, seconds, params)


def generate_suite(suite: str, out_dir: str | Path, *, scale: float = 1.0, seed: int = 0,
                   file_format: str = "npz",
                   progress=lambda entries, total: entries) -> Iterator[GeneratedMatrix]:
    """Every entry of ``suite`` at ``scale`` generated and written to
    ``out_dir/<entry>.<file_format>`` (the folder checked first), one at a time;
    ``progress(entries, total)`` wraps the entries (a progress bar)."""
    from sparsescope._outputs import check_out_dir
    from sparsescope.matrices import suite_entries, write_matrix
    from sparsescope.matrices.suites import build_entry

    entries = suite_entries(suite, scale)
    out = check_out_dir(out_dir)
    chosen: Iterable = progress(entries, len(entries))
    for entry in chosen:
        start = time.perf_counter()
        matrix = build_entry(entry, seed)
        seconds = time.perf_counter() - start
        path = write_matrix(matrix, out / f"{entry.name}.{file_format}")
        yield GeneratedMatrix(Path(path), matrix.name, matrix.kind, matrix.rows, matrix.cols,
                              matrix.nnz, seed, seconds, analog_of=matrix.analog_of)
        del matrix
