"""The registry table: every op and every backend, as data, in one place.

Adding an op: write its module (an :class:`~sparsescope.ops.base.Op`, its parameter records),
its backends and its report section, then add one :class:`OpEntry` to :data:`OPS` and its
backends to :data:`LIBRARY_BACKENDS` or, for kernels of ours, :data:`OWN_KERNELS` (which of
the two is the one declaration of "ours or a library's": :func:`is_own`). Nothing else
branches on an op's or a backend's name.

Everything here is a ``"module:Name"`` string (or, for code that registers at run time, such as
a test, the object itself), resolved on use by :func:`load`: importing this table imports no
op, no backend and no GPU library.

Third-party backends join the table as plug-ins (:mod:`sparsescope.backends.plugins`,
docs/PLUGINS.md): installed ones (entry points of group ``sparsescope.backends``) and those
``--plugin`` or ``SPARSESCOPE_PLUGINS`` name, loaded when the table is listed or asked for a
name it lacks (:func:`discover_plugins`); the two tables below stay as they are.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from sparsescope.errors import UnknownNameError, UsageError


@dataclass(frozen=True)
class OpEntry:
    """One op: where its code lives and what a run uses by default."""

    name: str
    """Registry name, e.g. ``spmv``; ``CaseResult.op``."""
    title: str
    """How reports name it, e.g. ``SpMV``."""
    op: Any
    """``"module:Class"`` of its :class:`~sparsescope.ops.base.Op` (or the class)."""
    params: Any
    """``"module:Class"`` of its parameter record (an ``ops.params.OpParams``)."""
    derived: Any
    """``"module:Class"`` of the counts it derives per case (an ``ops.params.OpDerived``)."""
    section: Any
    """``"module:function"`` writing its report sections (``report.sections.OpSection``)."""
    default_suite: str = ""
    """Suite a run of this op uses when none is named."""
    defaults: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Device kind (``cpu``/``gpu``) -> backends run by default."""


OPS: dict[str, OpEntry] = {e.name: e for e in (
    OpEntry("spmv", "SpMV", "sparsescope.ops.spmv:SpmvOp", "sparsescope.ops.params:SpmvParams",
            "sparsescope.ops.params:SpmvDerived", "sparsescope.report.spmv_section:spmv_section",
            default_suite="seed6",
            defaults={"cpu": ("scipy-cpu",),
                      "gpu": ("torch-cusparse-i64", "torch-cusparse-i32", "cupy-cusparse-i32",
                              "cuda-csr-scalar", "cuda-csr-vector", "cuda-spmv-auto")}),
    OpEntry("spmm", "SpMM", "sparsescope.ops.spmm:SpmmOp", "sparsescope.ops.params:SpmmParams",
            "sparsescope.ops.params:SpmmDerived", "sparsescope.report.ops_spmm:spmm_section",
            default_suite="dlmc3",
            defaults={"cpu": ("spmm-scipy-cpu",),
                      "gpu": ("spmm-torch-i64", "spmm-torch-i32", "spmm-cupy-i32", "spmm-ginkgo",
                              "spmm-cuda-rowwarp",
                              "spmm-cuda-rowgroup", "spmm-cuda-auto")}),
    OpEntry("slice", "CSR row slicing", "sparsescope.ops.slice_rows:SliceOp",
            "sparsescope.ops.params:SliceParams", "sparsescope.ops.params:SliceDerived",
            "sparsescope.report.ops_slice:slice_section", default_suite="slice003",
            defaults={"cpu": ("slice-scipy-cpu",),
                      "gpu": ("slice-torch", "slice-cupy-i32", "slice-brainevent",
                              "slice-cuda-scatter", "slice-cuda-gather")}),
)}

_B = "sparsescope.backends."
#: Libraries (and the CPU references): what the report sets our kernels against.
#: (op, backend name) -> ``"module:Class"``.
LIBRARY_BACKENDS: dict[tuple[str, str], Any] = {
    ("spmv", "scipy-cpu"): _B + "scipy_cpu:ScipyCpuBackend",
    ("spmv", "torch-cusparse-i64"): _B + "torch_cusparse:TorchCusparseI64",
    ("spmv", "torch-cusparse-i32"): _B + "torch_cusparse:TorchCusparseI32",
    ("spmv", "cupy-cusparse-i32"): _B + "cupy_cusparse:CupyCusparseI32",
    ("spmv", "nvmath-cusparse-i32"): _B + "nvmath_cusparse:NvmathCusparseI32",
    ("spmm", "spmm-scipy-cpu"): _B + "spmm_scipy:SpmmScipyCpu",
    ("spmm", "spmm-torch-i64"): _B + "spmm_torch:SpmmTorchI64",
    ("spmm", "spmm-torch-i32"): _B + "spmm_torch:SpmmTorchI32",
    ("spmm", "spmm-cupy-i32"): _B + "spmm_cupy:SpmmCupyI32",
    ("spmm", "spmm-nvmath-i32"): _B + "spmm_nvmath:SpmmNvmathI32",
    ("spmm", "spmm-ginkgo"): _B + "spmm_ginkgo:SpmmGinkgo",
    # the dense peer: A stored dense once, each call a cuBLAS GEMM (DENSE_BACKENDS)
    ("spmm", "spmm-cublas-dense"): _B + "spmm_dense:SpmmCublasDense",
    ("slice", "slice-scipy-cpu"): _B + "slice_scipy:SliceScipyCpu",
    ("slice", "slice-torch"): _B + "slice_torch:SliceTorch",
    ("slice", "slice-cupy-i32"): _B + "slice_cupy:SliceCupyI32",
    ("slice", "slice-brainevent"): _B + "slice_brainevent:SliceBrainevent",
}

#: Our own kernels (``backends/kernels/*.cu``, and the selectors that choose among them): the
#: report sets each against the best library of its op (:func:`is_own`).
#: (op, backend name) -> ``"module:Class"``.
OWN_KERNELS: dict[tuple[str, str], Any] = {
    ("spmv", "cuda-csr-scalar"): _B + "cuda_kernels:CudaCsrScalar",
    ("spmv", "cuda-csr-vector"): _B + "cuda_kernels:CudaCsrVector",
    # Our own SpMV kernels, chosen among by predicted time in cuda-spmv-auto (by the rules of
    # matrix statistics in cuda-spmv-auto-rules).
    ("spmv", "cuda-spmv-adaptive"): _B + "spmv_adaptive:CudaSpmvAdaptive",
    ("spmv", "cuda-spmv-merge"): _B + "spmv_merge:CudaSpmvMerge",
    ("spmv", "cuda-spmv-sell"): _B + "spmv_sell:CudaSpmvSell",
    ("spmv", "cuda-spmv-delta16"): _B + "spmv_sell:CudaSpmvDelta16",
    ("spmv", "cuda-spmv-blocked16"): _B + "spmv_sell:CudaSpmvBlocked16",
    ("spmv", "cuda-spmv-delta16-tiles"): _B + "spmv_compressed:CudaSpmvTileDelta16",
    ("spmv", "cuda-spmv-auto"): _B + "spmv_auto:CudaSpmvAuto",
    ("spmv", "cuda-spmv-auto-rules"): _B + "spmv_auto:CudaSpmvAutoRules",
    ("spmm", "spmm-cuda-rowwarp"): _B + "spmm_cuda:SpmmCudaRowWarp",
    ("spmm", "spmm-cuda-rowgroup"): _B + "spmm_rowgroup:SpmmCudaRowGroup",
    ("spmm", "spmm-cuda-blocktc"): _B + "spmm_blocktc:SpmmCudaBlockTc",
    ("spmm", "spmm-cuda-paneltc"): _B + "spmm_paneltc:SpmmCudaPanelTc",
    ("spmm", "spmm-cuda-colmajor"): _B + "spmm_colmajor:SpmmCudaColMajor",
    ("spmm", "spmm-cuda-ell"): _B + "spmm_ell:SpmmCudaEll",
    ("spmm", "spmm-cuda-rowtile"): _B + "spmm_rowtile:SpmmCudaRowTile",
    ("spmm", "spmm-cuda-transposed"): _B + "spmm_transposed:SpmmCudaTransposed",
    ("spmm", "spmm-cuda-auto"): _B + "spmm_auto:SpmmCudaAuto",
    ("spmm", "spmm-cuda-auto-rules"): _B + "spmm_auto:SpmmCudaAutoRules",
    ("slice", "slice-cuda-scatter"): _B + "slice_cuda:SliceCudaScatter",
    ("slice", "slice-cuda-gather"): _B + "slice_cuda:SliceCudaGather",
}

#: Every backend, libraries and ours: (op, backend name) -> ``"module:Class"`` (or, for one
#: registered at run time, the object itself).
BACKENDS: dict[tuple[str, str], Any] = {**LIBRARY_BACKENDS, **OWN_KERNELS}

#: Names of our own kernels: those of :data:`OWN_KERNELS`, and any registered at run time with
#: ``own=True`` (:func:`register_backend`). Whether a backend is ours is where it is declared,
#: never a test of its name.
OWN_BACKENDS: set[str] = {name for (_, name) in OWN_KERNELS}


def is_own(backend: str) -> bool:
    """Whether ``backend`` (a name, or a kernel variant's label ``name[...]``) is ours."""
    return backend.split("[", 1)[0] in OWN_BACKENDS


#: Dense baselines: library backends that store the matrix dense, zeros included, and run a
#: dense product. The report sets the sparse backends against them (the dense break-even,
#: ``report.break_even``) instead of counting them among the sparse libraries our kernels
#: are compared with (:func:`is_dense`).
DENSE_BACKENDS: set[str] = {"spmm-cublas-dense"}


def is_dense(backend: str) -> bool:
    """Whether ``backend`` (a name, or a variant's label ``name[...]``) is a dense
    baseline (:data:`DENSE_BACKENDS`)."""
    return backend.split("[", 1)[0] in DENSE_BACKENDS


def is_sparse_library(backend: str) -> bool:
    """Whether ``backend`` is a sparse library baseline: not ours (:func:`is_own`) and not a
    dense baseline (:func:`is_dense`). "The best library" every comparison sets our kernels
    against is the fastest of these (cuSPARSE through PyTorch, CuPy or nvmath, Ginkgo, a
    plug-in's); the dense baselines enter only the dense break-even."""
    return not is_own(backend) and not is_dense(backend)


def load(ref: Any) -> Any:
    """The object a ``"module:Name"`` string names (anything else is returned as it is)."""
    if not isinstance(ref, str):
        return ref
    module_name, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def op_entry(name: str) -> OpEntry:
    try:
        return OPS[name]
    except KeyError:
        raise UnknownNameError("op", name, list(OPS)) from None


#: What loads the plug-ins (:func:`discover_plugins`), named like every entry of this table
#: and resolved on use by :func:`load`: the plug-in module registers into this table, so this
#: table names it rather than importing it.
PLUGIN_DISCOVERY = "sparsescope.backends.plugins:discover"


def discover_plugins() -> None:
    """Load the plug-ins installed (entry points of group ``sparsescope.backends``) or named by
    ``SPARSESCOPE_PLUGINS``, once per process (:data:`PLUGIN_DISCOVERY`): called before the
    table is listed and when a name is not in it, so a built-in looked up by name never loads
    a plug-in. A plug-in that fails is a ``PluginError`` naming it."""
    load(PLUGIN_DISCOVERY)()


def backend_names(op: str | None = None) -> list[str]:
    """Backend names (of ``op``, or of every op), sorted; plug-ins included
    (:func:`discover_plugins`)."""
    discover_plugins()
    return sorted(name for (o, name) in BACKENDS if op is None or o == op)


def backend_op(name: str) -> str:
    """The op backend ``name`` implements (names are unique across ops); a name not in the
    table is looked for among the plug-ins (:func:`discover_plugins`) before it is unknown."""
    for attempt in range(2):
        for (op, other) in BACKENDS:
            if other == name:
                return op
        if attempt == 0:
            discover_plugins()
    raise UnknownNameError("backend", name, backend_names())


def register_op(entry: OpEntry) -> None:
    """Add (or replace) an op at run time: what a plug-in or a test does."""
    OPS[entry.name] = entry


def check_backend_factory(name: str, factory: Any) -> None:
    """Refuse a backend class that does not declare the bytes it moves.

    Every backend declares one call's bytes (``traffic``, :class:`~sparsescope.model.traffic.
    Traffic`): the runner stores them with the case and the time model predicts from them. A
    class must derive from :class:`~sparsescope.backends.base.Backend` (through
    ``SpmvBackend`` or ``OpBackend``, which declare plain CSR's bytes by default) and keep
    ``traffic`` a method (overridden for a format of its own); anything else is a
    :class:`UsageError` naming the backend. A ``"module:Name"`` string is checked when it is loaded
    (:func:`load_backend_factory`), and a plain function (a factory returning an instance) is
    not checked: what it returns is the runner's to judge.
    """
    if not isinstance(factory, type):
        return
    from sparsescope.backends.base import Backend

    problem = ""
    if not issubclass(factory, Backend):
        problem = f"{factory.__qualname__} does not derive from sparsescope.backends.base.Backend"
    elif not callable(getattr(factory, "traffic", None)):
        problem = f"{factory.__qualname__}.traffic is not callable"
    if problem:
        raise UsageError(
            f"backend {name!r} must declare the bytes it moves: {problem}. Derive it from "
            "Backend, SpmvBackend or OpBackend (sparsescope.backends.base), which declare plain "
            "CSR's bytes by default, or override traffic(case, prepared) to return its format's "
            "Traffic")


def register_backend(op: str, name: str, factory: Any, *, own: bool = False) -> None:
    """Add (or replace) backend ``name`` of ``op`` at run time; ``own``: a kernel of ours
    (:func:`is_own`), not a library's (replacing a backend keeps what the table declared of
    it). A class that does not declare its bytes
    (:func:`check_backend_factory`) is refused here, with a :class:`UsageError`; a
    ``"module:Name"`` string is checked when :func:`load_backend_factory` resolves it."""
    check_backend_factory(name, factory)
    BACKENDS[(op, name)] = factory
    if own:
        OWN_BACKENDS.add(name)


def load_backend_factory(name: str) -> Any:
    """The factory of backend ``name``, loaded and checked (:func:`check_backend_factory`)."""
    factory = load(BACKENDS[(backend_op(name), name)])
    check_backend_factory(name, factory)
    return factory


def unregister(op: str) -> None:
    """Remove ``op`` and its backends (tests clean up with it)."""
    OPS.pop(op, None)
    for key in [k for k in BACKENDS if k[0] == op]:
        del BACKENDS[key]
        OWN_BACKENDS.discard(key[1])
        DENSE_BACKENDS.discard(key[1])
