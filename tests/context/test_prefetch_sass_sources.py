"""``context.predict.prefetch_sass``: one compile per source, the sources side by side."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from sparsescope.context import predict


def test_each_source_is_compiled_once_with_its_kernels_side_by_side(monkeypatch):
    import sparsescope.sass.kernel_shape as kernel_shape

    calls, running, most = [], [0], [0]
    lock = threading.Lock()

    def fake_prefetch(source, kernels, arch):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
            calls.append((source, tuple(kernels), arch))

    monkeypatch.setattr(kernel_shape, "prefetch", fake_prefetch)
    monkeypatch.setattr("sparsescope.hardware.cpuinfo.logical_cores", lambda: 4)
    device = SimpleNamespace(refine=lambda *a: None,
                             spec=SimpleNamespace(compute_capability="9.0"))
    shapes = [SimpleNamespace(cuda_source="spmv_csr.cu", kernel="csr_vector<float, int, 8>"),
              SimpleNamespace(cuda_source="spmv_own.cu", kernel="spmv_sell<float, 1>"),
              SimpleNamespace(cuda_source="spmv_csr.cu", kernel="csr_scalar<float, int>"),
              SimpleNamespace(cuda_source="", kernel="cusparse")]
    predict.prefetch_sass(shapes, device)
    assert sorted(calls) == [
        ("spmv_csr.cu", ("csr_vector<float, int, 8>", "csr_scalar<float, int>"), "sm_90"),
        ("spmv_own.cu", ("spmv_sell<float, 1>",), "sm_90")]
    assert most[0] == 2  # the two compiles overlapped


def test_no_refiner_compiles_nothing(monkeypatch):
    import sparsescope.sass.kernel_shape as kernel_shape

    monkeypatch.setattr(kernel_shape, "prefetch", lambda *a: (_ for _ in ()).throw(
        AssertionError("compiled")))
    predict.prefetch_sass([SimpleNamespace(cuda_source="a.cu", kernel="k")],
                          SimpleNamespace(refine=None, spec=None))
