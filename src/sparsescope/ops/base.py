"""What an op is: :class:`Op` (parameters, inputs, float64 reference, check, byte model) and
:class:`OpCase`, the case every backend of the op computes.

An op turns (matrix, parameters, value dtype, seed) into an :class:`OpCase`: the matrix every
backend computes on, its inputs, the float64 reference, the tolerance, the op's byte model, its
typed parameters (an :class:`~sparsescope.ops.params.OpParams`) and the counts it derived (an
:class:`~sparsescope.ops.params.OpDerived`). Ops are listed in the registry table
(:mod:`sparsescope.registry`) and found with :func:`sparsescope.ops.registry.get_op`.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import UsageError
from sparsescope.model.case_model import ModelBytes
from sparsescope.model.prediction import ModelPrediction, not_modelled
from sparsescope.ops.params import OpDerived, OpParams
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
            if isinstance(value, str):  # "3,3,49" from a command line
                value = value.split(",")
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
    params: OpParams
    """Resolved parameters (defaults filled, validated)."""
    matrix: sp.csr_matrix = field(repr=False)
    """Canonical float64 CSR the backends compute on (slice: weights applied, maybe padded)."""
    inputs: Any = field(repr=False)
    """spmv: x; spmm: X (in the layout asked); slice: ``ops.slice_rows.SliceInputs``."""
    reference: np.ndarray = field(repr=False)
    """float64 result every output is compared with."""
    tolerance: float
    traffic: Any
    """The op's byte/flop model of the case (SpmvTraffic, SpmmTraffic or SliceTraffic)."""
    derived: OpDerived = field(default_factory=OpDerived)
    """Counts the op derived while building the case (kept with the case result)."""
    csr_traffic: Any = None
    """The :class:`~sparsescope.model.traffic.Traffic` of plain CSR at the case's index width:
    what a backend on CSR declares."""

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


class Op(ABC):
    """What an operation computes and how it is checked and modelled."""

    name: str = ""
    description: str = ""
    params: tuple[ParamSpec, ...] = ()
    """How each field of :attr:`params_type` is validated (and offered on the command line)."""
    params_type: type[OpParams] = OpParams
    derived_type: type[OpDerived] = OpDerived
    tolerances: dict[str, float] = {}

    def resolve_params(self, params: Mapping[str, Any] | OpParams | None = None) -> OpParams:
        """The typed parameter record: defaults filled in, each value checked; an unknown name
        is a :class:`UsageError`."""
        if isinstance(params, self.params_type):
            return params
        if isinstance(params, OpParams):
            params = params.as_dict()
        params = dict(params or {})
        known = {p.name: p for p in self.params}
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise UsageError(f"op {self.name!r} has no parameter {', '.join(unknown)}; its "
                             f"parameters: {', '.join(known) or 'none'}")
        return self.params_type(**{name: spec.check(params.get(name, spec.default))
                                   for name, spec in known.items()})

    def tolerance(self, value_dtype: str) -> float:
        return self.tolerances.get(value_dtype, 1e-5)

    @abstractmethod
    def make_case(self, csr: sp.spmatrix, params: Mapping[str, Any] | OpParams | None = None,
                  *, value_dtype: str = "float32", index_bytes: int = 4, seed: int = 0,
                  tolerance: float | None = None, strict: bool = False) -> OpCase:
        """Validate, build the inputs and the float64 reference (raises before any launch)."""

    @abstractmethod
    def check(self, out: np.ndarray, case: OpCase) -> Correctness:
        """The output against the case's reference."""

    @abstractmethod
    def traffic_for(self, rows: int, cols: int, nnz: int, params: OpParams,
                    derived: OpDerived, *, value_bytes: int, index_bytes: int,
                    y_read: bool = False) -> Any:
        """The op's byte model of a recorded case, from the matrix's sizes and the case's typed
        parameters and derived counts."""

    def model_bytes(self, traffic: Any) -> ModelBytes:
        """The bytes and flops the op's model (:meth:`traffic_for`) charges a case: what % of
        peak, floor and gap are judged against. Default: the model's ``total_bytes`` and
        ``flops``."""
        return ModelBytes(int(traffic.total_bytes), int(traffic.flops))

    def predict(self, case: OpCase, traffic: Any, shape: Any, rates: Any, *,
                flushed: bool) -> ModelPrediction:
        """The case's predicted time on the device of ``rates`` (``model.predict.DeviceRates``)
        from the backend's declared ``traffic`` and kernel ``shape``; "not modelled" with the
        reason for an op without a time model (the default)."""
        return not_modelled(f"no time model for {self.name} yet: its report shows % of peak "
                            "by the declared bytes only")

    def workload_params(self, suite: str, matrix: str, given: set[str]) -> list[dict[str, Any]]:
        """Parameter sets a suite prescribes for one of its matrices, when the run's own
        choices (``given``: the parameter names it set) leave room for them; none by default."""
        return []
