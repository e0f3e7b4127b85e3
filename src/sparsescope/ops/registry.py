"""The op registry: name -> :class:`Op` (parameters, inputs, float64 reference, check, model).

An op turns (matrix, parameters, value dtype, seed) into an :class:`OpCase`: the matrix every
backend computes on, its inputs, the float64 reference, the tolerance, the byte/flop model, and
the notes kept with each case result (``op.<param>`` and what the report needs, e.g.
``op.nnz_selected``). ``spmv`` wraps :mod:`sparsescope.ops.spmv` unchanged.

Each op also names its backends (``"module:Class"``, loaded on use) and the defaults per device
kind; :func:`op_backends` is the dict the backend registry merges.
"""

from __future__ import annotations

import hashlib
import itertools
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.results.records import Correctness


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of an op."""

    name: str
    default: Any
    kind: type
    """``int``, ``str`` or ``tuple`` (a sequence of ints)."""
    choices: tuple = ()
    minimum: int | None = None
    maximum: int | None = None
    help: str = ""

    def check(self, value: Any) -> Any:
        """The value converted to :attr:`kind`; :class:`UsageError` when it does not fit."""
        if self.kind is tuple:
            if value is None:
                return None
            try:
                return tuple(int(v) for v in value)
            except (TypeError, ValueError):
                raise UsageError(f"{self.name} must be a sequence of integers, got "
                                 f"{value!r}") from None
        try:
            converted = self.kind(value)
        except (TypeError, ValueError):
            raise UsageError(f"{self.name} must be {self.kind.__name__}, got {value!r}") from None
        if self.kind is int and converted != value and not isinstance(value, str):
            raise UsageError(f"{self.name} must be an integer, got {value!r}")
        if self.choices and converted not in self.choices:
            raise UsageError(f"{self.name} must be one of {', '.join(map(str, self.choices))}, "
                             f"got {value!r}")
        if self.minimum is not None and converted < self.minimum:
            raise UsageError(f"{self.name} must be >= {self.minimum}, got {value!r}")
        if self.maximum is not None and converted > self.maximum:
            raise UsageError(f"{self.name} must be <= {self.maximum}, got {value!r}")
        return converted


@dataclass(frozen=True)
class OpCase:
    """Everything a backend and the correctness gate need for one (matrix, op, params) case."""

    op: str
    params: dict[str, Any]
    """Resolved parameters (defaults filled, validated)."""
    matrix: sp.csr_matrix = field(repr=False)
    """Canonical float64 CSR the backends compute on (slice: weights applied, maybe padded)."""
    inputs: Any = field(repr=False)
    """spmv: x; spmm: X (in the layout asked); slice: ``ops.slice_rows.SliceInputs``."""
    reference: np.ndarray = field(repr=False)
    """float64 result every output is compared with."""
    tolerance: float
    traffic: Any
    """The byte/flop model of the case (SpmvTraffic, SpmmTraffic or SliceTraffic)."""
    notes: dict[str, str] = field(default_factory=dict)
    """Kept in CaseResult.notes: ``op.<param>`` and derived counts the report needs."""

    @property
    def output_shape(self) -> tuple[int, ...]:
        return tuple(self.reference.shape)


def canonical_csr(csr: sp.spmatrix, *, strict: bool = False) -> sp.csr_matrix:
    """A canonical float64 CSR: sorted columns, no duplicates, no explicit value changed.

    A matrix with unsorted or duplicate columns is refused with ``strict`` (naming the first
    row at fault), else copied, duplicates summed, columns sorted, with a MatrixWarning -- the
    matrices stage's rule for files, applied here to in-memory matrices.
    """
    from sparsescope.matrices import MatrixWarning

    csr = sp.csr_matrix(csr, dtype=np.float64)
    indptr = np.asarray(csr.indptr, dtype=np.int64)
    steps = np.diff(csr.indices.astype(np.int64))
    # A step from entry p to p + 1 lies inside a row unless p + 1 starts the next row.
    crossing = np.zeros(steps.size, dtype=bool)
    starts = indptr[1:-1]
    crossing[starts[(starts > 0) & (starts <= steps.size)] - 1] = True
    bad = np.flatnonzero(~crossing & (steps <= 0))
    if bad.size == 0:
        csr.has_canonical_format = True
        return csr
    row = int(np.searchsorted(indptr, bad[0], side="right") - 1)
    what = "duplicate" if steps[bad[0]] == 0 else "unsorted"
    message = f"row {row} has {what} column indices ({bad.size} such steps in the matrix)"
    if strict:
        raise UsageError(f"{message}; refusing the matrix (strict)")
    warnings.warn(f"{message}: duplicates summed and columns sorted before use",
                  MatrixWarning, stacklevel=3)
    fixed = csr.copy()
    fixed.sum_duplicates()
    fixed.sort_indices()
    return fixed


def _rows_note(rows: Sequence[int]) -> str:
    if len(rows) <= 64:
        return ",".join(str(int(r)) for r in rows)
    digest = hashlib.sha1(np.asarray(rows, dtype=np.int64).tobytes()).hexdigest()[:12]
    return f"{len(rows)} indices (sha1 {digest})"


class Op(ABC):
    """What an operation computes and how it is checked and modelled."""

    name: str = ""
    description: str = ""
    params: tuple[ParamSpec, ...] = ()
    backends: dict[str, str] = {}
    """Backend name -> ``"module:Class"`` for backends implementing this op."""
    defaults: dict[str, tuple[str, ...]] = {}
    """Device kind (``cpu``/``gpu``) -> backends run by default."""
    tolerances: dict[str, float] = {}

    def resolve_params(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Defaults filled in, each value checked; an unknown name is a :class:`UsageError`."""
        params = dict(params or {})
        known = {p.name: p for p in self.params}
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise UsageError(f"op {self.name!r} has no parameter {', '.join(unknown)}; its "
                             f"parameters: {', '.join(known) or 'none'}")
        return {name: spec.check(params.get(name, spec.default)) for name, spec in known.items()}

    def param_notes(self, params: Mapping[str, Any]) -> dict[str, str]:
        notes = {}
        for name, value in params.items():
            if value is None:
                continue
            notes[f"op.{name}"] = _rows_note(value) if isinstance(value, tuple) else str(value)
        return notes

    def tolerance(self, value_dtype: str) -> float:
        return self.tolerances.get(value_dtype, 1e-5)

    @abstractmethod
    def make_case(self, csr: sp.spmatrix, params: Mapping[str, Any] | None = None, *,
                  value_dtype: str = "float32", index_bytes: int = 4, seed: int = 0,
                  tolerance: float | None = None, strict: bool = False) -> OpCase:
        """Validate, build the inputs and the float64 reference (raises before any launch)."""

    @abstractmethod
    def check(self, out: np.ndarray, case: OpCase) -> Correctness:
        """The output against the case's reference."""

    @abstractmethod
    def traffic_for(self, rows: int, cols: int, nnz: int, notes: Mapping[str, str], *,
                    value_bytes: int, index_bytes: int, y_read: bool = False) -> Any:
        """The byte model of a recorded case, from the matrix's sizes and the case's notes."""


class SpmvOp(Op):
    """``y = A x`` (:mod:`sparsescope.ops.spmv`); its backends live in backends.registry."""

    name = "spmv"
    description = "SpMV y = A x"

    def __init__(self) -> None:
        from sparsescope.ops import spmv

        self.tolerances = dict(spmv.DEFAULT_TOLERANCE)

    def make_case(self, csr, params=None, *, value_dtype="float32", index_bytes=4, seed=0,
                  tolerance=None, strict=False) -> OpCase:
        from sparsescope.model.spmv import spmv_traffic
        from sparsescope.ops.spmv import make_x, reference_spmv

        params = self.resolve_params(params)
        csr = canonical_csr(csr, strict=strict)
        x = make_x(csr.shape[1], seed=seed, dtype=value_dtype)
        vb = np.dtype(value_dtype).itemsize
        return OpCase(self.name, params, csr, x, reference_spmv(csr, x),
                      tolerance if tolerance is not None else self.tolerance(value_dtype),
                      spmv_traffic(*csr.shape, csr.nnz, value_bytes=vb, index_bytes=index_bytes))

    def check(self, out, case) -> Correctness:
        from sparsescope.ops.spmv import check_output

        return check_output(out, case.reference, case.tolerance)

    def traffic_for(self, rows, cols, nnz, notes, *, value_bytes, index_bytes, y_read=False):
        from sparsescope.model.spmv import spmv_traffic

        return spmv_traffic(rows, cols, nnz, value_bytes=value_bytes, index_bytes=index_bytes,
                            y_read=y_read)


class SpmmOp(Op):
    """``Y = A X``, X dense ``cols x k`` row- or column-major (:mod:`sparsescope.ops.spmm`)."""

    name = "spmm"
    description = "SpMM Y = A X, X dense cols x k"
    backends = {
        "spmm-scipy-cpu": "sparsescope.backends.spmm_scipy:SpmmScipyCpu",
        "spmm-torch-i64": "sparsescope.backends.spmm_torch:SpmmTorchI64",
        "spmm-torch-i32": "sparsescope.backends.spmm_torch:SpmmTorchI32",
        "spmm-cupy-i32": "sparsescope.backends.spmm_cupy:SpmmCupyI32",
        "spmm-ginkgo": "sparsescope.backends.spmm_ginkgo:SpmmGinkgo",
        "spmm-cuda-rowwarp": "sparsescope.backends.spmm_cuda:SpmmCudaRowWarp",
    }
    defaults = {"cpu": ("spmm-scipy-cpu",),
                "gpu": ("spmm-torch-i64", "spmm-torch-i32", "spmm-cupy-i32", "spmm-ginkgo",
                        "spmm-cuda-rowwarp")}

    def __init__(self) -> None:
        from sparsescope.ops import spmm

        self.tolerances = dict(spmm.DEFAULT_TOLERANCE)
        self.params = (
            ParamSpec("k", 8, int, minimum=1, maximum=spmm.MAX_K, help="columns of X"),
            ParamSpec("layout", "row", str, choices=spmm.LAYOUTS,
                      help="X row-major (row) or column-major (col)"),
        )

    def make_case(self, csr, params=None, *, value_dtype="float32", index_bytes=4, seed=0,
                  tolerance=None, strict=False) -> OpCase:
        from sparsescope.model.spmm import spmm_traffic
        from sparsescope.ops import spmm

        params = self.resolve_params(params)
        csr = canonical_csr(csr, strict=strict)
        x = spmm.make_dense_x(csr.shape[1], params["k"], seed=seed, dtype=value_dtype,
                              layout=params["layout"])
        cond = spmm.condition(csr, x)
        base = tolerance if tolerance is not None else self.tolerance(value_dtype)
        notes = self.param_notes(params)
        notes["op.condition"] = f"{cond:.4g}"
        traffic = spmm_traffic(*csr.shape, csr.nnz, params["k"], layout=params["layout"],
                               value_bytes=np.dtype(value_dtype).itemsize,
                               index_bytes=index_bytes)
        return OpCase(self.name, params, csr, x, spmm.reference_spmm(csr, x), base * cond,
                      traffic, notes)

    def check(self, out, case) -> Correctness:
        from sparsescope.ops.spmm import check_output

        return check_output(out, case.reference, case.tolerance)

    def traffic_for(self, rows, cols, nnz, notes, *, value_bytes, index_bytes, y_read=False):
        from sparsescope.model.spmm import spmm_traffic

        return spmm_traffic(rows, cols, nnz, int(notes.get("op.k", "1")),
                            layout=notes.get("op.layout", "row"), value_bytes=value_bytes,
                            index_bytes=index_bytes)


class SliceOp(Op):
    """``out[r, :] = A[rows[r], :]`` dense (:mod:`sparsescope.ops.slice_rows`, seed 003)."""

    name = "slice"
    description = "CSR row slice out[r, :] = A[rows[r], :] (dense out)"
    backends = {
        "slice-scipy-cpu": "sparsescope.backends.slice_scipy:SliceScipyCpu",
        "slice-torch": "sparsescope.backends.slice_torch:SliceTorch",
        "slice-cupy-i32": "sparsescope.backends.slice_cupy:SliceCupyI32",
        "slice-brainevent": "sparsescope.backends.slice_brainevent:SliceBrainevent",
        "slice-cuda-scatter": "sparsescope.backends.slice_cuda:SliceCudaScatter",
        "slice-cuda-gather": "sparsescope.backends.slice_cuda:SliceCudaGather",
    }
    defaults = {"cpu": ("slice-scipy-cpu",),
                "gpu": ("slice-torch", "slice-cupy-i32", "slice-brainevent",
                        "slice-cuda-scatter", "slice-cuda-gather")}

    def __init__(self) -> None:
        from sparsescope.ops import slice_rows

        self.tolerances = dict(slice_rows.DEFAULT_TOLERANCE)
        self.params = (
            ParamSpec("rows_selected", 64, int, minimum=1,
                      help="rows drawn at random (with repeats) when rows is not given"),
            ParamSpec("rows", None, tuple, help="explicit row indices (repeats allowed)"),
            ParamSpec("weights", "per-nnz", str, choices=slice_rows.WEIGHTS,
                      help="scalar: every nonzero one value; per-nnz: A's values"),
            ParamSpec("out_of_range", "error", str, choices=slice_rows.OUT_OF_RANGE,
                      help="error (default) or zero rows for indices outside [0, rows)"),
        )

    def make_case(self, csr, params=None, *, value_dtype="float32", index_bytes=4, seed=0,
                  tolerance=None, strict=False) -> OpCase:
        from sparsescope.model.slice_rows import slice_traffic
        from sparsescope.ops import slice_rows as sr

        params = self.resolve_params(params)
        csr = canonical_csr(csr, strict=strict)
        chosen = (params["rows"] if params["rows"] is not None
                  else sr.make_rows(csr.shape[0], params["rows_selected"], seed))
        rows, invalid = sr.validate_rows(chosen, csr.shape[0], params["out_of_range"])
        params["rows_selected"] = int(rows.size)
        matrix = sr.sliced_matrix(csr, params["weights"], pad=invalid > 0)
        inputs = sr.SliceInputs(rows=rows, source_rows=csr.shape[0], invalid=invalid,
                                weights=params["weights"], out_of_range=params["out_of_range"])
        vb = np.dtype(value_dtype).itemsize
        nnz_sel, sectors, lines = sr.selection_counts(matrix, rows, vb)
        notes = self.param_notes(params)
        notes.update({"op.nnz_selected": str(nnz_sel), "op.sectors_32b": str(sectors),
                      "op.lines_128b": str(lines), "op.invalid_rows": str(invalid)})
        traffic = slice_traffic(rows.size, csr.shape[1], nnz_sel, value_bytes=vb,
                                index_bytes=index_bytes, weights=params["weights"],
                                sector_writes=sectors)
        return OpCase(self.name, params, matrix, inputs, sr.reference_slice(matrix, rows),
                      tolerance if tolerance is not None else self.tolerance(value_dtype),
                      traffic, notes)

    def check(self, out, case) -> Correctness:
        from sparsescope.ops.slice_rows import check_output

        return check_output(out, case.reference, case.tolerance)

    def traffic_for(self, rows, cols, nnz, notes, *, value_bytes, index_bytes, y_read=False):
        from sparsescope.model.slice_rows import slice_traffic

        return slice_traffic(int(notes["op.rows_selected"]), cols, int(notes["op.nnz_selected"]),
                             value_bytes=value_bytes, index_bytes=index_bytes,
                             weights=notes.get("op.weights", "per-nnz"),
                             sector_writes=int(notes["op.sectors_32b"]))


OPS: dict[str, Op] = {op.name: op for op in (SpmvOp(), SpmmOp(), SliceOp())}


def list_ops() -> list[str]:
    return list(OPS)


def get_op(name: str) -> Op:
    try:
        return OPS[name]
    except KeyError:
        raise UnknownNameError("op", name, list(OPS)) from None


def op_backends() -> dict[str, str]:
    """Backend name -> ``"module:Class"`` of every op's own backends (spmv's are in
    ``backends.registry`` already)."""
    merged: dict[str, str] = {}
    for op in OPS.values():
        merged.update(op.backends)
    return merged


def expand_params(op: str | Op, choices: Mapping[str, Sequence[Any]] | None = None
                  ) -> list[dict[str, Any]]:
    """Every combination of the given values, e.g. ``{"k": [8, 64], "layout": ["row"]}`` ->
    two parameter dicts (resolved and validated); no choices -> the defaults alone."""
    op = get_op(op) if isinstance(op, str) else op
    choices = {name: list(values) for name, values in (choices or {}).items()
               if values is not None}
    for name, values in choices.items():
        if not values:
            raise UsageError(f"no value given for {name}")
    names = list(choices)
    combos = itertools.product(*(choices[n] for n in names)) if names else [()]
    return [op.resolve_params(dict(zip(names, combo, strict=True))) for combo in combos]


def params_for(op: str, choices: Mapping[str, Sequence[Any]] | None = None, *,
               suite: str | None = None, matrix: str | None = None) -> list[dict[str, Any]]:
    """The parameter sets of one matrix of a run: every combination of ``choices``; for a
    slice run that names no rows, the suite's seed workloads (``slice003``: 16-5,000 rows per
    matrix) times those combinations."""
    from sparsescope.matrices.suite_dlmc import workload_params

    choices = {k: v for k, v in (choices or {}).items() if v is not None}
    combos = expand_params(op, choices)
    if {"rows", "rows_selected"} & set(choices) or suite is None or matrix is None:
        return combos
    workloads = workload_params(suite, matrix, op)
    if not workloads:
        return combos
    resolve = get_op(op).resolve_params
    return [resolve({**{k: v for k, v in combo.items() if v is not None}, **workload})
            for workload in workloads for combo in combos]
