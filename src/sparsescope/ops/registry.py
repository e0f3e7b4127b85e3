"""Finding ops: :func:`get_op` by name (from the registry table, :mod:`sparsescope.registry`),
and the parameter sets of a run (:func:`expand_params`, :func:`params_for`).

The op classes live in their own modules (``ops.spmv``, ``ops.spmm``, ``ops.slice_rows``); what
an op is, in :mod:`sparsescope.ops.base`. Re-exported here for callers that build cases.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from sparsescope import registry
from sparsescope.errors import UsageError
from sparsescope.ops.base import Op, OpCase, ParamSpec, canonical_csr
from sparsescope.ops.params import OpParams

__all__ = ["Op", "OpCase", "ParamSpec", "canonical_csr", "expand_params", "get_op", "list_ops",
           "params_for"]

_INSTANCES: dict[str, Op] = {}


def list_ops() -> list[str]:
    return list(registry.OPS)


def get_op(name: str) -> Op:
    """The op registered as ``name`` (one instance per op class)."""
    entry = registry.op_entry(name)
    op = _INSTANCES.get(name)
    if op is None or type(op) is not registry.load(entry.op):
        op = _INSTANCES[name] = registry.load(entry.op)()
    return op


def expand_params(op: str | Op, choices: Mapping[str, Sequence[Any]] | None = None
                  ) -> list[OpParams]:
    """Every combination of the given values, e.g. ``{"k": [8, 64], "layout": ["row"]}`` ->
    two parameter records (resolved and validated); no choices -> the defaults alone."""
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
               suite: str | None = None, matrix: str | None = None) -> list[OpParams]:
    """The parameter sets of one matrix of a run: every combination of ``choices``; for an op
    whose suite prescribes workloads (``slice003``: 16-5,000 rows per matrix) and a run that
    names none of their parameters, the suite's workloads times those combinations."""
    op_obj = get_op(op)
    choices = {k: v for k, v in (choices or {}).items() if v is not None}
    combos = expand_params(op_obj, choices)
    if suite is None or matrix is None:
        return combos
    workloads = op_obj.workload_params(suite.partition("#")[0], matrix, set(choices))
    if not workloads:
        return combos
    return [op_obj.resolve_params({**combo.as_dict(), **workload})
            for workload in workloads for combo in combos]
