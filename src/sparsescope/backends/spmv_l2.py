"""Keep x resident in L2 while a kernel runs: a CUDA access-policy window on a stream.

``L2Window(x_ptr, x_bytes, stream_ptr)`` is a context manager. On entry it sets aside
``min(x_bytes, persisting max)`` bytes of L2 for persisting accesses (``cuCtxSetLimit
(CU_LIMIT_PERSISTING_L2_CACHE_SIZE)``, a limit of this process's context, not a device
setting) and gives the stream a window over x with ``hitRatio = set-aside / window``,
``hitProp = PERSISTING``, ``missProp = STREAMING``; kernels launched on that stream then keep
x's lines in the set-aside part of L2. On exit it clears the window, demotes every persisting
line (``cuCtxResetPersistingL2Cache``) and restores the previous limit, so nothing outlives
the measurement. Called through the driver API (``libcuda.so.1``, already loaded by any CUDA
program) with ctypes: no extra package.

Caveat for timing: lines that persist are not evicted by the protocol's L2 flush (the flush
buffer's accesses are normal), so with a window x is read from L2, not DRAM, after the first
repeat: the measured gain is an upper bound of what the window buys a single cold SpMV.
"""

from __future__ import annotations

import ctypes
import functools

from sparsescope.errors import DeviceError

CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
CU_ACCESS_PROPERTY_STREAMING = 1
CU_ACCESS_PROPERTY_PERSISTING = 2
CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE = 108
CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE = 109


class _AccessPolicyWindow(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t),
                ("hitRatio", ctypes.c_float), ("hitProp", ctypes.c_int),
                ("missProp", ctypes.c_int)]


class _StreamAttrValue(ctypes.Union):
    """``CUstreamAttrValue`` (= ``CUlaunchAttributeValue``): a 64-byte union."""

    _fields_ = [("accessPolicyWindow", _AccessPolicyWindow), ("pad", ctypes.c_char * 64)]


@functools.lru_cache(maxsize=1)
def _driver() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise DeviceError(f"cannot load the CUDA driver library libcuda.so.1: {exc}") from exc


def _check(code: int, what: str) -> None:
    if code != 0:
        raise DeviceError(f"{what} failed with CUDA driver error {code}")


def l2_persisting_limits(device: int = 0) -> tuple[int, int]:
    """(largest persisting set-aside, largest access-policy window) of a device, bytes."""
    lib = _driver()
    persist, window = ctypes.c_int(0), ctypes.c_int(0)
    _check(lib.cuDeviceGetAttribute(ctypes.byref(persist),
                                    CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, device),
           "cuDeviceGetAttribute(MAX_PERSISTING_L2_CACHE_SIZE)")
    _check(lib.cuDeviceGetAttribute(ctypes.byref(window),
                                    CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, device),
           "cuDeviceGetAttribute(MAX_ACCESS_POLICY_WINDOW_SIZE)")
    return int(persist.value), int(window.value)


class L2Window:
    """Context manager: an access-policy window over ``[x_ptr, x_ptr + x_bytes)`` on a stream."""

    def __init__(self, x_ptr: int, x_bytes: int, stream_ptr: int, device: int = 0) -> None:
        self.x_ptr, self.x_bytes, self.stream_ptr = int(x_ptr), int(x_bytes), int(stream_ptr)
        max_persist, max_window = l2_persisting_limits(device)
        self.window_bytes = min(self.x_bytes, max_window)
        self.set_aside_bytes = min(self.window_bytes, max_persist)
        self.hit_ratio = (self.set_aside_bytes / self.window_bytes) if self.window_bytes else 0.0
        self._previous_limit = ctypes.c_size_t(0)

    def _set_window(self, nbytes: int) -> None:
        value = _StreamAttrValue()
        value.accessPolicyWindow.base_ptr = self.x_ptr
        value.accessPolicyWindow.num_bytes = nbytes
        value.accessPolicyWindow.hitRatio = self.hit_ratio if nbytes else 0.0
        value.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING
        value.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING
        _check(_driver().cuStreamSetAttribute(ctypes.c_void_p(self.stream_ptr),
                                              CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                                              ctypes.byref(value)),
               "cuStreamSetAttribute(ACCESS_POLICY_WINDOW)")

    def __enter__(self) -> L2Window:
        lib = _driver()
        _check(lib.cuCtxGetLimit(ctypes.byref(self._previous_limit),
                                 CU_LIMIT_PERSISTING_L2_CACHE_SIZE), "cuCtxGetLimit")
        _check(lib.cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE,
                                 ctypes.c_size_t(self.set_aside_bytes)), "cuCtxSetLimit")
        self._set_window(self.window_bytes)
        return self

    def __exit__(self, *exc) -> None:
        lib = _driver()
        self._set_window(0)
        _check(lib.cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache")
        _check(lib.cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, self._previous_limit),
               "cuCtxSetLimit (restore)")

    def describe(self) -> str:
        return (f"access-policy window over x ({self.window_bytes} B), {self.set_aside_bytes} B "
                f"of L2 set aside, hitRatio {self.hit_ratio:.3f}")
