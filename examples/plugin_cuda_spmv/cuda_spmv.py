"""spmv.cu as a sparsescope backend (docs/PLUGINS.md), through CuPy's RawModule:
``sparsescope run --plugin examples/plugin_cuda_spmv/cuda_spmv.py --backend plugin-cuda-csr``.
Plain CSR at INT32: the bytes it moves are the default's (CSR's), so it declares none."""
from pathlib import Path

import numpy as np

from sparsescope.backends.base import Capability, SpmvBackend
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.timing.cuda import time_cuda

SOURCE, BLOCK = Path(__file__).with_name("spmv.cu"), 256


def launch_shape(rows: int) -> KernelShape:  # for the time model: a thread per row
    return KernelShape(kernel="spmv_csr", decomposition="rows", block_threads=BLOCK,
                       grid_blocks=max(1, -(-rows // BLOCK)), source="declared by the plug-in")


class PluginCudaCsr(SpmvBackend):
    name = "plugin-cuda-csr"
    capability = Capability(ops=("spmv",), value_dtypes=("float32",), index_bytes=(4,),
                            device="gpu", description="plug-in example: CSR, a thread per row")

    def availability(self):
        try:
            import cupy
            return cupy.cuda.runtime.getDeviceCount() > 0, "no CUDA device"
        except Exception as exc:  # no CuPy, or no driver: the case is skipped, with this
            return False, f"CuPy cannot reach a GPU ({type(exc).__name__})"

    def prepare(self, csr, value_dtype, index_bytes):
        import cupy as cp
        kernel = cp.RawModule(code=SOURCE.read_text()).get_function("spmv_csr")
        return dict(kernel=kernel, rows=csr.shape[0], indptr=cp.asarray(csr.indptr, cp.int32),
                    col=cp.asarray(csr.indices, cp.int32), val=cp.asarray(csr.data, cp.float32),
                    x=cp.zeros(csr.shape[1], cp.float32), y=cp.zeros(csr.shape[0], cp.float32))

    def launch(self, p):
        p["kernel"]((launch_shape(p["rows"]).grid_blocks,), (BLOCK,),
                    (np.int32(p["rows"]), p["indptr"], p["col"], p["val"], p["x"], p["y"]))

    def poison_output(self, p):  # NaN in y before the checked run: a skipped row fails it
        p["y"].fill(np.nan)
        return True

    def run(self, p, x):
        p["x"].set(np.ascontiguousarray(x, np.float32))
        self.launch(p)
        return p["y"].get()

    def time(self, p, x, config):
        p["x"].set(np.ascontiguousarray(x, np.float32))
        moved = sum(p[k].nbytes for k in ("indptr", "col", "val", "x", "y"))
        return time_cuda(lambda: self.launch(p), config, library="cupy", working_set_bytes=moved)

    def library_versions(self):
        import cupy
        return {"cupy": cupy.__version__}

    def shape(self, p):  # the prepared launch, for the prediction before timing
        return launch_shape(p["rows"])

    def host_plan(self, csr, value_dtype, index_bytes, sms):  # `sparsescope model`, no GPU
        return csr_spmv_traffic(*csr.shape, csr.nnz), launch_shape(csr.shape[0])


def sparsescope_backends():
    return [PluginCudaCsr]
