"""The tile kernels launched with programmatic dependent launch (PDL) on a GPU: each call may
start while the one before it runs, so it must wait before it reads x or writes y, partials
and the split-row counters. Checked against float64 after one call, after 64 calls back to
back (``finish=1`` resets its counters every call), and along a chain where a CuPy kernel
rewrites x between calls; and the throughput mode's timing launches so, the latency mode's
does not."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive
from sparsescope.backends.spmv_compressed import CudaSpmvTileDelta16
from sparsescope.backends.spmv_merge import CudaSpmvMerge
from sparsescope.ops.spmv import make_x
from sparsescope.timing import TimingConfig

pytestmark = pytest.mark.gpu

BACKENDS = [
    ("adaptive-i1", lambda: CudaSpmvAdaptive(iters=1)),
    ("adaptive-i2-fin", lambda: CudaSpmvAdaptive(iters=2, finish=1)),
    ("merge-i1-fin", lambda: CudaSpmvMerge(iters=1, finish=1)),
    ("merge-i2-hub4k-fin", lambda: CudaSpmvMerge(iters=2, hub=4096, finish=1)),
    ("tiles16-merge-fin", lambda: CudaSpmvTileDelta16(tiling="merge", finish=1)),
]


def _pdl_or_skip():
    from sparsescope.hardware.programmatic_launch import available

    ok, why = available()
    if not ok:
        pytest.skip(why)


def _rel(y, ref) -> float:
    return float(np.linalg.norm(y.astype(np.float64) - ref) / max(np.linalg.norm(ref), 1e-300))


@pytest.mark.parametrize("label,factory", BACKENDS, ids=[b[0] for b in BACKENDS])
def test_pdl_calls_match_float64_back_to_back_and_behind_a_writer_of_x(label, factory,
                                                                        awkward_matrices):
    import cupy

    _pdl_or_skip()
    backend = factory()
    for matrix in awkward_matrices:
        csr = matrix.csr
        prepared = backend.prepare(csr, "float32", 4)
        if not prepared.launches:  # an empty matrix: nothing to launch
            continue
        x = make_x(csr.shape[1], seed=3, dtype="float32")
        backend.set_x(prepared, x)
        ref = csr @ x.astype(np.float64)
        tolerance = 1e-5 * max(1.0, float(np.linalg.norm(abs(csr) @ np.abs(x))
                                          / max(np.linalg.norm(ref), 1e-300)))
        backend.poison_output(prepared)
        for _ in range(64):
            backend.launch_call(prepared, programmatic=True)
        cupy.cuda.get_current_stream().synchronize()
        got = prepared.y[:prepared.rows].get()
        assert _rel(got, ref) <= tolerance, (matrix.name, "64 back to back")
        xd = x.astype(np.float64)
        for _ in range(8):  # an ordinary kernel rewrites x; the PDL call must wait for it
            prepared.x[:prepared.cols] *= 0.5
            prepared.x[:prepared.cols] += 1
            xd = xd * 0.5 + 1
            backend.launch_call(prepared, programmatic=True)
        cupy.cuda.get_current_stream().synchronize()
        ref = csr @ xd
        got = prepared.y[:prepared.rows].get()
        assert _rel(got, ref) <= 1e-5 * max(1.0, float(np.linalg.norm(abs(csr) @ np.abs(xd))
                                                       / max(np.linalg.norm(ref), 1e-300))), \
            (matrix.name, "x rewritten between calls")


def test_the_throughput_mode_times_pdl_launches_and_the_latency_mode_does_not(banded_4m):
    _pdl_or_skip()
    backend = CudaSpmvAdaptive(iters=1, finish=1, breakdown=False)
    prepared = backend.prepare(banded_4m.csr, "float32", 4)
    x = make_x(banded_4m.csr.shape[1], seed=1, dtype="float32")
    throughput = TimingConfig(warmups=2, repeats=3, mode="throughput")
    assert backend.programmatic(prepared, throughput)
    m = backend.time(prepared, x, throughput)
    assert m.median_ms > 0
    assert prepared.notes["launch"].startswith("programmatic dependent launch (PDL)")
    assert not backend.programmatic(prepared, TimingConfig(warmups=1, repeats=3))
    # a SELL kernel does not wait, so it is never launched so
    from sparsescope.backends.spmv_sell import CudaSpmvSell

    sell = CudaSpmvSell()
    assert not sell.programmatic(sell.prepare(banded_4m.csr, "float32", 4), throughput)
