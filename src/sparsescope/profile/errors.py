"""The profile stage's error: collection failures and unreadable reports, each naming its cause."""

from __future__ import annotations

from sparsescope.errors import SparsescopeError

#: Why a profile could not be collected or read (``ProfileError.reason``).
REASONS = (
    "ncu_not_found",     # no ncu binary on PATH, CUDA_HOME or the usual install folders
    "permission",        # ERR_NVGPUCTRPERM: the user may not read the GPU performance counters
    "no_kernels",        # the kernel filter matched no launch ("No kernels were profiled")
    "target_failed",     # the profiled program exited with an error
    "ncu_failed",        # ncu itself reported an error or exited non-zero
    "not_a_report",      # a file that is not an Nsight Compute report or export
)


class ProfileError(SparsescopeError):
    """Profiling failed or a profile file is unreadable; the message says which and why.

    Attributes:
        reason: one of :data:`REASONS`.
        path: the file concerned (report or export), when there is one.
        available: for ``no_kernels``, the kernels the program launched (ncu's "Available
            Kernels" list), when ncu printed them.
    """

    exit_code = 8

    def __init__(self, reason: str, message: str, *, path: str | None = None,
                 available: tuple[str, ...] = ()) -> None:
        if reason not in REASONS:
            raise ValueError(f"unknown ProfileError reason {reason!r}")
        self.reason = reason
        self.path = None if path is None else str(path)
        self.available = tuple(available)
        super().__init__(f"{self.path}: {message}" if self.path else message)
