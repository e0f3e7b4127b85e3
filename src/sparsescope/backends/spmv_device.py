"""What sparsescope's own SpMV backends share: kernels of ``kernels/spmv_own.cu`` compiled by
NVRTC on use, device buffers, launches, poisoning, timing and the optional L2 window.

A backend subclass turns the canonical CSR into a host-side format (:meth:`build_format`,
pure NumPy, testable without a GPU) and uploads it into a :class:`PreparedOwn`, a list of
launches plus buffers (:meth:`upload`). ``prepare`` is the two in a row; the benchmark calls
them separately to reuse one format across kernel variants. INT32 indices only (the format
builders check the sizes); float32 or float64 values.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsescope.backends import _gpu
from sparsescope.backends.base import Capability, SpmvBackend
from sparsescope.backends.format_cache import FORMATS
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.traffic import Traffic
from sparsescope.timing.types import Measurement, TimingConfig

SOURCE = "spmv_own.cu"
BLOCK = 256
FIXUP_BLOCK = 256
#: Largest nonzero count the INT32 kernels index (chunk padding included).
MAX_NNZ = 2**31 - 64

CAPABILITY = dict(ops=("spmv",), value_dtypes=("float32", "float64"), index_bytes=(4,),
                  device="gpu", y_read=False)


def cuda_type(value_dtype: str) -> str:
    return _gpu.CUDA_VALUE_TYPES[value_dtype]


def tile_kernel(value_dtype: str, idx: int, hint: int, iters: int, hub: int = 0,
                block: int = BLOCK, finish: int = 0, warp_rows: int = 0) -> str:
    """``spmv_tile``'s name expression, every template argument named (FINISH and WARP_ROWS
    too: nvcc's cubin names the instance with all of them, and the SASS reader finds it by
    that name)."""
    return (f"spmv_tile<{cuda_type(value_dtype)}, {idx}, {hint}, {block}, {iters}, {hub}, "
            f"{int(finish)}, {int(warp_rows)}>")


def sell_kernel(value_dtype: str, idx: int, hint: int, unroll: int, minb: int,
                tpr: int = 1, width: int = 1, stage: int = 0) -> str:
    """``spmv_sell<T, IDX, B, HINT, UNROLL, MINB, TPR>`` (register pipeline), or with
    ``stage`` > 0 ``spmv_sell_dae<T, IDX, B, HINT, STAGE, MINB, TPR>`` (streams staged in
    shared memory by cp.async, ``stage`` steps per chunk; ``unroll`` unused); ``width`` = B,
    columns per stored entry (1 x B blocks of cuda-spmv-blocked16; 1 for plain SELL)."""
    t = cuda_type(value_dtype)
    if stage:
        return f"spmv_sell_dae<{t}, {idx}, {width}, {hint}, {stage}, {minb}, {tpr}>"
    return f"spmv_sell<{t}, {idx}, {width}, {hint}, {unroll}, {minb}, {tpr}>"


def fixup_kernel(value_dtype: str) -> str:
    return f"spmv_fixup<{cuda_type(value_dtype)}>"


def programmatic_kernel(name: str) -> bool:
    """Whether kernel ``name`` waits (``pdl_wait`` in ``spmv_own.cu``) before it reads what
    the launch before it writes (x; the partials) or writes its outputs, so that it may be
    launched with programmatic dependent launch: the tile kernel ``spmv_tile`` and the split
    rows' ``spmv_fixup``."""
    return name.startswith(("spmv_tile<", "spmv_fixup<"))


@functools.cache
def kernel_function(name: str):
    """The compiled ``cupy.RawKernel`` of one instantiation (one NVRTC module per name; only
    the instantiations a run uses are compiled)."""
    import cupy

    module = cupy.RawModule(code=_gpu.kernel_source(SOURCE), options=("-std=c++17",),
                            name_expressions=(name,))
    return module.get_function(name)


def resident_blocks(name: str, block: int) -> int:
    """Blocks of ``block`` threads of own kernel ``name`` one SM holds at once
    (:func:`sparsescope.backends._gpu.resident_blocks`)."""
    return _gpu.resident_blocks(kernel_function(name), block)


def sm_count() -> int:
    return _gpu.device_sm_count()


@dataclass
class Launch:
    """One kernel launch of a SpMV call."""

    kernel: str
    grid: int
    block: int
    args: tuple


@dataclass
class PreparedOwn:
    """Device buffers and launches of one prepared case."""

    rows: int
    cols: int
    nnz: int
    value_dtype: str
    x: Any
    """cupy.ndarray, cols entries; set by run/time."""
    y: Any
    """cupy.ndarray, rows entries, written once per call (poisoned before the checked run)."""
    partials: Any
    """cupy.ndarray of split-row partial sums (at least one entry), poisoned with y."""
    launches: list[Launch]
    bytes_moved: int
    """Bytes the format makes one SpMV read and write at least (its own byte model)."""
    traffic: Traffic | None = None
    """The same bytes by array, as the backend declares them (set by ``upload``)."""
    kernel_shape: KernelShape | None = None
    """The main kernel's shape for the time model (set by ``upload``)."""
    buffers: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)


def check_int32(csr: sp.csr_matrix) -> None:
    rows, cols = csr.shape
    if max(rows, cols, csr.nnz) > MAX_NNZ:
        raise ValueError(f"{rows} x {cols} with {csr.nnz} nonzeros does not fit the INT32 "
                         f"kernels (at most {MAX_NNZ})")


def padded(array: np.ndarray, dtype, fill=0) -> np.ndarray:
    """``array`` cast to ``dtype`` and padded with ``fill`` to a multiple of 4 plus one chunk
    of 4 (a kernel reads whole aligned chunks, clamped to the tile's last one)."""
    n = array.size
    out = np.full(4 * ((n + 3) // 4 + 1), fill, dtype=dtype)
    out[:n] = array
    return out




class OwnSpmvBackend(SpmvBackend):
    """Base of the own SpMV backends; subclasses implement :meth:`build_format` and
    :meth:`upload`. Keyword parameters override the class defaults (variants in benchmarks)."""

    capability = Capability(**CAPABILITY)
    #: Parameters a subclass accepts, with their defaults.
    defaults: dict[str, Any] = {}
    #: Keep x in L2 with an access-policy window while timing (see spmv_l2).
    l2_window: bool = False
    #: Per-kernel breakdown (PyTorch profiler) after timing.
    breakdown: bool = True

    def __init__(self, *, l2_window: bool = False, breakdown: bool = True, **params) -> None:
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no parameter {', '.join(unknown)}; "
                            f"its parameters: {', '.join(self.defaults) or 'none'}")
        self.params = {**self.defaults, **params}
        self.l2_window = l2_window
        self.breakdown = breakdown

    # -- the two halves of prepare ----------------------------------------------------------
    @abstractmethod
    def build_format(self, csr: sp.csr_matrix) -> Any:
        """The packed format, built on the host (NumPy; testable without a GPU)."""

    @abstractmethod
    def upload(self, fmt: Any, csr: sp.csr_matrix, value_dtype: str) -> PreparedOwn:
        """Copy the format to the device and allocate the output."""

    def format_key(self) -> tuple:
        """Parameters the host format depends on (the benchmark caches formats by it)."""
        return (type(self).__name__,)

    def availability(self) -> tuple[bool, str]:
        return _gpu.cupy_cuda_status()

    def prefetch_case(self, case: Any, value_dtype: str, index_bytes: int) -> None:
        """Pack the case's matrix into this kernel's format on a background thread
        (``format_cache``), dropping the formats of any other matrix first."""
        csr = case.matrix
        if index_bytes != 4 or max(*csr.shape, csr.nnz) > MAX_NNZ:
            return  # prepare refuses it, in turn, with the reason
        FORMATS.retain(csr)
        FORMATS.prefetch(csr, self.format_key(), self.build_format)

    def prepare(self, matrix_csr: sp.csr_matrix, value_dtype: str,
                index_bytes: int) -> PreparedOwn:
        if index_bytes != 4:
            raise ValueError(f"own SpMV kernels take INT32 indices, not INT{8 * index_bytes}")
        check_int32(matrix_csr)
        fmt = FORMATS.get(matrix_csr, self.format_key(), self.build_format)
        return self.upload(fmt, matrix_csr, value_dtype)

    # -- shared device plumbing --------------------------------------------------------------
    @staticmethod
    def new_prepared(csr: sp.csr_matrix, value_dtype: str, nslots: int, launches: list[Launch],
                     bytes_moved: int, buffers: dict[str, Any], notes: dict[str, str]
                     ) -> PreparedOwn:
        import cupy

        dtype = _gpu.VALUE_DTYPES[value_dtype]
        rows, cols = (int(n) for n in csr.shape)
        return PreparedOwn(rows=rows, cols=cols, nnz=int(csr.nnz), value_dtype=value_dtype,
                           x=cupy.zeros(max(cols, 1), dtype=dtype),
                           y=cupy.zeros(max(rows, 1), dtype=dtype),
                           partials=cupy.zeros(max(nslots, 1), dtype=dtype),
                           launches=launches, bytes_moved=int(bytes_moved), buffers=buffers,
                           notes=notes)

    @staticmethod
    def fixup_launch(value_dtype: str, split_rows, split_ptr, prepared_args: tuple) -> Launch:
        """The ``spmv_fixup`` launch of ``split_rows`` (device arrays): one warp per row."""
        nsplit = int(split_rows.size)
        grid = max(1, -(-nsplit * 32 // FIXUP_BLOCK))
        return Launch(fixup_kernel(value_dtype), grid, FIXUP_BLOCK,
                      (np.int32(nsplit), split_rows, split_ptr) + prepared_args)

    def launch_call(self, p: PreparedOwn, programmatic: bool = False) -> None:
        """The call's launches in order; ``programmatic``: each of a kernel that waits
        (:func:`programmatic_kernel`) with programmatic dependent launch
        (``hardware.programmatic_launch``)."""
        from sparsescope.hardware.programmatic_launch import launch_programmatic

        for step in p.launches:
            kernel = kernel_function(step.kernel)
            if programmatic and programmatic_kernel(step.kernel):
                launch_programmatic(kernel, step.grid, step.block, step.args)
            else:
                kernel((step.grid,), (step.block,), step.args)

    def programmatic(self, p: PreparedOwn, config: TimingConfig) -> bool:
        """Whether a timed call is launched with PDL: in the throughput mode (calls back to
        back; a call timed alone has no call before it to overlap, and must not overlap the L2
        flush), for a call whose every kernel waits for it (a SELL kernel does not, so its call
        launches as usual, fix-up included), where PDL can be launched. The case's notes say
        which launch was timed (``launch``)."""
        if config.mode != "throughput" or not p.launches:
            return False
        if not all(programmatic_kernel(step.kernel) for step in p.launches):
            return False
        from sparsescope.hardware.programmatic_launch import available

        ok, why = available()
        p.notes["launch"] = ("programmatic dependent launch (PDL): each kernel starts while the "
                             "launch before it runs and waits before it reads x or the "
                             "partials" if ok else
                             f"ordinary launches (PDL not available: {why})")
        return ok

    def set_x(self, p: PreparedOwn, x: np.ndarray) -> None:
        if p.cols:
            p.x[:p.cols].set(np.ascontiguousarray(x, dtype=p.x.dtype))

    def poison_output(self, prepared: PreparedOwn) -> bool:
        prepared.y.fill(np.nan)
        prepared.partials.fill(np.nan)
        return True

    def run(self, prepared: PreparedOwn, x: np.ndarray) -> np.ndarray:
        import cupy

        self.set_x(prepared, x)
        self.launch_call(prepared)
        cupy.cuda.get_current_stream().synchronize()
        return prepared.y[:prepared.rows].get()

    def time(self, prepared: PreparedOwn, x: np.ndarray, config: TimingConfig) -> Measurement:
        import cupy

        from sparsescope.timing.cuda import time_cuda

        self.set_x(prepared, x)
        p = prepared
        programmatic = self.programmatic(p, config)

        def measure() -> Measurement:
            return time_cuda(lambda: self.launch_call(p, programmatic), config, library="cupy",
                             working_set_bytes=p.bytes_moved, breakdown=self.breakdown)

        if not self.l2_window:
            return measure()
        from sparsescope.backends.spmv_l2 import L2Window

        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            window = L2Window(p.x.data.ptr, p.x.nbytes, stream.ptr)
            p.notes["l2_window"] = window.describe()
            with window:
                result = measure()
            stream.synchronize()
        return result

    def library_versions(self) -> dict[str, str]:
        import cupy

        runtime = cupy.cuda.runtime.runtimeGetVersion()
        driver = cupy.cuda.runtime.driverGetVersion()
        return {"cupy": cupy.__version__,
                "cuda_runtime": f"{runtime // 1000}.{runtime % 1000 // 10}",
                "cuda_driver_api": f"{driver // 1000}.{driver % 1000 // 10}",
                "nvrtc": ".".join(str(v) for v in cupy.cuda.nvrtc.getVersion())}

    def own_traffic(self, prepared: PreparedOwn) -> Traffic | None:
        return prepared.traffic

    def shape(self, prepared: PreparedOwn) -> KernelShape | None:
        return prepared.kernel_shape

    def host_shape(self, fmt: Any, csr: sp.csr_matrix, value_dtype: str,
                   sms: int) -> KernelShape | None:
        """The kernel's shape from the host format alone (no device: the cross-GPU what-if of
        ``sparsescope model``); resident blocks unknown (0). None for an empty matrix."""
        return None

    @abstractmethod
    def format_traffic(self, fmt: Any, csr: sp.csr_matrix, value_bytes: int) -> Traffic:
        """The bytes of the built format ``fmt`` (what ``upload`` declares)."""

    def host_plan(self, csr: sp.csr_matrix, value_dtype: str, index_bytes: int,
                  sms: int) -> tuple[Traffic | None, KernelShape | None]:
        fmt = FORMATS.get(csr, self.format_key(), self.build_format)
        value_bytes = int(np.dtype(_gpu.VALUE_DTYPES[value_dtype]).itemsize)
        return (self.format_traffic(fmt, csr, value_bytes),
                self.host_shape(fmt, csr, value_dtype, sms))

    @staticmethod
    def device_shape(shape: KernelShape | None) -> KernelShape | None:
        """``shape`` with the blocks an SM holds by the compiled kernel's resources."""
        if shape is None:
            return None
        return replace(shape, resident_blocks_per_sm=resident_blocks(shape.kernel,
                                                                     shape.block_threads))

    def notes(self, prepared: PreparedOwn) -> dict[str, str]:
        return {**prepared.notes, "bytes_moved": str(prepared.bytes_moved),
                "kernels": " + ".join(f"{s.kernel} grid {s.grid} x {s.block}"
                                      for s in prepared.launches)}
