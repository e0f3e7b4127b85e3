"""Timing: the one protocol (warm-ups, repeats, cache flush, statistics), raw samples kept.

``time_host`` times a synchronous call with the host clock; ``time_cuda`` times GPU work with
CUDA events (torch or CuPy, imported on use). Importing this package loads no GPU library.
"""

from sparsescope.timing.cuda import time_cuda
from sparsescope.timing.host import time_host
from sparsescope.timing.types import Measurement, TimingConfig

__all__ = ["Measurement", "TimingConfig", "time_cuda", "time_host"]
