"""The plan of a sweep: one :class:`SweepTask` per (matrix, backend, op parameters)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparsescope.backends.runner import BackendChoice
from sparsescope.ops.params import OpParams
from sparsescope.sweep.sources import MatrixSource


@dataclass(frozen=True)
class SweepTask:
    """One case to run: which matrix (a reference, loaded by the worker), backend, op and
    parameters (the op's typed :class:`OpParams`)."""

    source: MatrixSource
    backend: str
    """How results name the backend: its registry name, or a variant's label."""
    op: str
    params: OpParams
    options: tuple[tuple[str, Any], ...] = ()
    """A kernel variant's constructor options (``(("unroll", 4),)``); empty for a backend."""
    registry_name: str = ""
    """A variant's registry name (``cuda-spmv-sell``); empty: ``backend`` is the name."""

    @property
    def name(self) -> str:
        """The backend's registry name."""
        return self.registry_name or self.backend

    def choice(self) -> BackendChoice:
        """What the runner runs: the backend, or the variant with its options and label."""
        return BackendChoice(self.name, self.options, self.backend if self.registry_name else "")


def params_key(params: OpParams | Mapping[str, Any]) -> str:
    """The parameters as canonical JSON (sorted keys): the ``params`` column of a store key."""
    from sparsescope.results.io import record_to_dict

    values = params.as_dict() if isinstance(params, OpParams) else dict(params)
    return json.dumps(record_to_dict(values), sort_keys=True)


def task_key(task: SweepTask, matrix_hash: str) -> tuple[str, str, str, str]:
    """(matrix hash, backend, op, params): a case's key in the store, less device and
    version (those are the same for every case of one sweep). The backend part of one of our
    own kernels carries their code's fingerprint (:func:`store_backend`)."""
    return (matrix_hash, store_backend(task.backend), task.op, params_key(task.params))


def store_backend(backend: str) -> str:
    """The backend column of a store key: a library backend's name as it is; one of our own
    kernels (``registry.is_own``) as ``name@FINGERPRINT`` (:func:`own_code_fingerprint`), so
    that a sweep resumed after our kernels' code changed runs their cases again, while the
    libraries' cases, which no change of ours can alter, stay stored."""
    from sparsescope.registry import is_own

    return f"{backend}@{own_code_fingerprint()}" if is_own(backend) else backend


@functools.lru_cache(maxsize=1)
def own_code_fingerprint() -> str:
    """The first 12 hex digits of SHA-256 over every ``backends/*.py`` and
    ``backends/kernels/*.cu`` file (names and contents, sorted): any change to our kernels or
    their host code (conservatively, any backend module) gives a new fingerprint."""
    import hashlib
    from pathlib import Path

    import sparsescope.backends as backends

    root = Path(backends.__file__).parent
    digest = hashlib.sha256()
    for path in sorted([*root.glob("*.py"), *root.glob("kernels/*.cu")]):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def plan_tasks(sources: Sequence[MatrixSource], backends: Sequence[str | BackendChoice],
               op: str,
               op_params: Mapping[str, Sequence[Any]] | Sequence[OpParams] | None = None
               ) -> list[SweepTask]:
    """Every (source, parameters, backend) task, sources outermost. ``backends``: registry
    names or kernel variants (:class:`BackendChoice`). ``op_params``: the op's choices
    (``{"k": [8, 64]}``, every combination) or a list of parameter records."""
    from sparsescope.ops.registry import get_op, params_for

    if op_params is None or isinstance(op_params, Mapping):
        params_list = params_for(op, op_params)
    else:
        op_obj = get_op(op)
        params_list = [op_obj.resolve_params(p) for p in op_params]
    choices = [b if isinstance(b, BackendChoice) else BackendChoice(b) for b in backends]
    return [SweepTask(source=src, backend=c.result_name, op=op, params=params,
                      options=c.options, registry_name=c.name if c.label else "")
            for src in sources for params in params_list for c in choices]
