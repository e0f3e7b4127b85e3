"""Results: the records of a run, versioned JSON validated on read, and the SQLite store.

``records`` (the contract), ``io`` (JSON, validation, atomic writes), ``store`` (SQLite with
provenance), ``provenance`` (where and how a run happened). Nothing here imports a GPU library.
"""

from __future__ import annotations

import importlib

from sparsescope.results.records import (
    OUTCOMES,
    SCHEMA_VERSION,
    CaseResult,
    Correctness,
    MatrixRecord,
    Provenance,
    RunSet,
)

_LAZY = {
    "read_runset": "io", "write_runset": "io", "runset_to_dict": "io", "runset_from_dict": "io",
    "ResultsStore": "store", "collect_provenance": "provenance",
}

__all__ = ["OUTCOMES", "SCHEMA_VERSION", "CaseResult", "Correctness", "MatrixRecord",
           "Provenance", "RunSet", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"sparsescope.results.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'sparsescope.results' has no attribute {name!r}")
