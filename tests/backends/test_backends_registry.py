"""The backend registry: lazy names, lookups, defaults; the SciPy backend itself."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy

from sparsescope import registry
from sparsescope.backends import Capability, get_backend, list_backends
from sparsescope.backends.registry import default_backends
from sparsescope.backends.scipy_cpu import ScipyCpuBackend
from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.ops.spmv import make_x, reference_spmv
from sparsescope.timing import TimingConfig


def test_importing_the_registry_imports_no_backend_module():
    code = ("import json, sys, sparsescope.backends, sparsescope.backends.registry\n"
            "print(json.dumps(sorted(m for m in sys.modules"
            " if m.startswith('sparsescope.backends.')"
            " or m.split('.')[0] in {'torch', 'cupy', 'cupyx', 'cuda'})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ["sparsescope.backends.base", "sparsescope.backends.registry"]


def test_registry_entries_are_lazy_strings():
    assert registry.BACKENDS[("spmv", "scipy-cpu")] == (
        "sparsescope.backends.scipy_cpu:ScipyCpuBackend")
    assert list_backends() == sorted(name for (_, name) in registry.BACKENDS)
    assert list_backends("spmv") == sorted(
        name for (op, name) in registry.BACKENDS if op == "spmv")
    assert "scipy-cpu" in list_backends("spmv") and "scipy-cpu" not in list_backends("spmm")


def test_get_backend_builds_a_new_instance():
    backend = get_backend("scipy-cpu")
    assert isinstance(backend, ScipyCpuBackend)
    assert backend is not get_backend("scipy-cpu")
    assert backend.name == "scipy-cpu"
    assert backend.capability == Capability(
        ops=("spmv",), value_dtypes=("float32", "float64"), index_bytes=(4, 8), device="cpu",
        y_read=False, description="SciPy CSR @ x (sparsetools csr_matvec, one thread)")
    assert backend.availability() == (True, "")


def test_unknown_backend_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match="unknown backend 'cusparse9'; known: .*scipy-cpu"):
        get_backend("cusparse9")


def test_callable_factories_are_accepted(monkeypatch):
    monkeypatch.setitem(registry.BACKENDS, ("spmv", "scipy-again"), ScipyCpuBackend)
    assert isinstance(get_backend("scipy-again"), ScipyCpuBackend)


def test_default_backends():
    assert default_backends("cpu") == ["scipy-cpu"]
    assert default_backends("gpu") == ["torch-cusparse-i64", "torch-cusparse-i32",
                                       "cupy-cusparse-i32", "cuda-csr-scalar",
                                       "cuda-csr-vector", "cuda-spmv-auto"]
    with pytest.raises(UsageError, match="device kind must be one of cpu, gpu"):
        default_backends("tpu")
    assert default_backends("cpu", "spmm") == ["spmm-scipy-cpu"]
    assert default_backends("cpu", "slice") == ["slice-scipy-cpu"]


@pytest.mark.parametrize("dtype, index_bytes, index_dtype", [
    ("float32", 4, np.int32), ("float64", 8, np.int64), ("float32", 8, np.int64)])
def test_scipy_prepare_keeps_the_requested_widths(small_matrix, dtype, index_bytes, index_dtype):
    prepared = ScipyCpuBackend().prepare(small_matrix.csr, dtype, index_bytes)
    assert prepared.dtype == np.dtype(dtype)
    assert prepared.indices.dtype == index_dtype and prepared.indptr.dtype == index_dtype
    assert prepared.nnz == small_matrix.nnz
    x = make_x(small_matrix.cols, dtype=dtype)
    y = ScipyCpuBackend().run(prepared, x)
    assert y.dtype == np.dtype(dtype) and y.shape == (small_matrix.rows,)
    np.testing.assert_allclose(y, reference_spmv(small_matrix.csr, x), rtol=1e-5, atol=1e-6)


def test_scipy_time_and_versions(small_matrix):
    backend = ScipyCpuBackend()
    prepared = backend.prepare(small_matrix.csr, "float32", 4)
    m = backend.time(prepared, make_x(small_matrix.cols), TimingConfig(warmups=1, repeats=4,
                                                                       flush_l2=False))
    assert len(m.samples_ms) == 4 and all(s > 0 for s in m.samples_ms) and not m.flushed
    assert backend.library_versions() == {"numpy": np.__version__, "scipy": scipy.__version__}
    assert backend.notes(prepared) == {"index_dtype": "int32", "value_dtype": "float32"}


def test_capability_reasons():
    cap = ScipyCpuBackend.capability
    assert cap.unsupported_reason("spmv", "float32", 4) == ""
    assert cap.unsupported_reason("spmm", "float32", 4) == "op 'spmm' not supported (supports spmv)"
    assert cap.unsupported_reason("spmv", "float16", 4) == (
        "value dtype float16 not supported (supports float32, float64)")
    assert cap.unsupported_reason("spmv", "float32", 2) == (
        "INT16 indices not supported (supports INT32, INT64)")
