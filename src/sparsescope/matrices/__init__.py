"""Matrices: read, validate, generate, name suites, and describe structure.

Public API::

    read_matrix(path, *, strict=False, name=None) -> Matrix   .mtx(.gz) .smtx .npz suitesparse:G/N
    write_matrix(csr_or_matrix, path) -> Path                 .mtx(.gz) .smtx .npz
    generate(kind, rows, nnz, *, cols=None, seed=0, **params) -> canonical scipy CSR
    GENERATORS                                                   kind -> generator function
    SUITES, list_suites(), suite_entries(name, scale=1.0), load_suite(name, scale=1.0, seed=0)
    fetch_suitesparse("Group/Name", *, cache_dir=None, download=True) -> Path of the .mtx
    compute_stats(csr, window_rows=32) -> MatrixStats

Imports NumPy and SciPy only; fast_matrix_market, tqdm and platformdirs load on use.
"""

from sparsescope.matrices._csr import MatrixWarning
from sparsescope.matrices.generators import GENERATORS, generate
from sparsescope.matrices.io import read_matrix, write_matrix
from sparsescope.matrices.stats import compute_stats
from sparsescope.matrices.suite_dlmc import register as _register_op_suites
from sparsescope.matrices.suite_population import POPULATION as _POPULATION
from sparsescope.matrices.suite_population import POPULATION_PARTS as _POPULATION_PARTS
from sparsescope.matrices.suite_population import SPMM_POPULATION as _SPMM_POPULATION
from sparsescope.matrices.suites import SUITES, list_suites, load_suite, suite_entries
from sparsescope.matrices.suitesparse import fetch_suitesparse
from sparsescope.matrices.types import Matrix, MatrixStats

_register_op_suites()  # suites dlmc3 and slice003 and the "pruned" generator (issue 6)
SUITES.setdefault(_POPULATION.name, _POPULATION)  # the generated population (issues 15, 17)
SUITES.setdefault(_SPMM_POPULATION.name, _SPMM_POPULATION)  # SpMM at real sizes (issue 18)
for _part in _POPULATION_PARTS:  # NAME-held-out and NAME-tuning of both populations
    SUITES.setdefault(_part.name, _part)

__all__ = [
    "GENERATORS",
    "SUITES",
    "Matrix",
    "MatrixStats",
    "MatrixWarning",
    "compute_stats",
    "fetch_suitesparse",
    "generate",
    "list_suites",
    "load_suite",
    "read_matrix",
    "suite_entries",
    "write_matrix",
]
