"""What a plan kept for the matrix (``context.predict``) is keyed by: a backend's class and
parameters, and for a chooser the run's timing mode, so that a latency run's choice is not
handed to a throughput one."""

from __future__ import annotations

from sparsescope.backends.spmm_auto import SpmmCudaAuto
from sparsescope.backends.spmv_auto import CudaSpmvAuto
from sparsescope.backends.spmv_sell import CudaSpmvSell
from sparsescope.context.predict import _backend_key
from sparsescope.timing.types import TimingConfig


def test_a_chooser_s_plan_is_one_per_timing_mode():
    for make in (CudaSpmvAuto, SpmmCudaAuto):
        latency, throughput = make(trial=False), make(trial=False)
        throughput.use_timing(TimingConfig(mode="throughput"))
        assert _backend_key(latency) != _backend_key(throughput)
        again = make(trial=False)
        again.use_timing(TimingConfig(mode="throughput"))
        assert _backend_key(again) == _backend_key(throughput)


def test_a_kernel_s_plan_is_keyed_by_its_parameters():
    assert _backend_key(CudaSpmvSell(tpr=2)) == _backend_key(CudaSpmvSell(tpr=2))
    assert _backend_key(CudaSpmvSell(tpr=2)) != _backend_key(CudaSpmvSell(tpr=1))
