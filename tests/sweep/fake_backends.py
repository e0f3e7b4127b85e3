"""Fake backends for the sweep tests (importable by Dask workers: this folder is on sys.path)."""

from __future__ import annotations

import os
import signal
import time

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
