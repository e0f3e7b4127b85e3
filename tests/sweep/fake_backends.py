"""Fake backends for the sweep tests (importable by Dask workers: this folder is on sys.path)."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import replace

from sparsescope.backends.scipy_cpu import ScipyCpuBackend


def _in_dask_worker() -> bool:
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


class KillerBackend(ScipyCpuBackend):
    """SciPy, except that under a Dask worker it kills its own process (SIGKILL)."""

    name = "killer-cpu"

    def run(self, prepared, x):
        if _in_dask_worker():
            os.kill(os.getpid(), signal.SIGKILL)
        return super().run(prepared, x)


class SlowBackend(ScipyCpuBackend):
    """SciPy, 0.3 s per check (a sweep slow enough to be killed part-way)."""

    name = "slow-cpu"

    def run(self, prepared, x):
        time.sleep(0.3)
        return super().run(prepared, x)


class HangBackend(ScipyCpuBackend):
    """SciPy, except that under a Dask worker it first touches ``$SPARSESCOPE_TEST_HANG_DIR/
    started-PID`` and then hangs for ``$SPARSESCOPE_TEST_HANG_S`` seconds (default 30): a case
    that never finishes while the sweep waits for it."""

    name = "hang-cpu"

    def run(self, prepared, x):
        if _in_dask_worker():
            folder = os.environ.get("SPARSESCOPE_TEST_HANG_DIR")
            if folder:
                with open(os.path.join(folder, f"started-{os.getpid()}"), "w"):
                    pass
            time.sleep(float(os.environ.get("SPARSESCOPE_TEST_HANG_S", "30")))
        return super().run(prepared, x)


class TwinCpuBackend(ScipyCpuBackend):
    """SciPy under another name: a second CPU backend with the same index widths."""

    name = "twin-cpu"


class SleepGpuBackend(ScipyCpuBackend):
    """A stand-in GPU: its case checked by SciPy on the host, then "timed" by sleeping
    ``$SPARSESCOPE_TEST_GPU_S`` seconds (default 0.05), as a GPU's timing waits on the device
    without taking a CPU core. Device ``gpu``: a sweep of it may load the next matrix while it
    sleeps."""

    name = "sleep-gpu"
    capability = replace(ScipyCpuBackend.capability, device="gpu", index_bytes=(4,),
                         description="SciPy checked, timed by a sleep (a stand-in GPU)")

    def time(self, prepared, x, config):
        time.sleep(float(os.environ.get("SPARSESCOPE_TEST_GPU_S", "0.05")))
        return super().time(prepared, x, replace(config, warmups=0, repeats=1))


class EvenRowsKillerBackend(ScipyCpuBackend):
    """SciPy, except that under a Dask worker it kills its own process (SIGKILL) on a matrix
    with an even number of rows: some cases of a sweep kill every worker they reach."""

    name = "even-killer-cpu"

    def run(self, prepared, x):
        if prepared.shape[0] % 2 == 0 and _in_dask_worker():
            os.kill(os.getpid(), signal.SIGKILL)
        return super().run(prepared, x)
