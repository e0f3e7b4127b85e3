"""Programmatic dependent launch (PDL) without a GPU: the launch arguments' C types, which
kernels may be launched so, and when a timed call is."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest

from sparsescope.backends.spmv_device import programmatic_kernel, tile_kernel
from sparsescope.hardware.programmatic_launch import kernel_parameters


def _device_array(ptr: int):
    """What a cupy.ndarray shows a launch: its memory's address."""
    return SimpleNamespace(data=SimpleNamespace(ptr=ptr))


def test_arguments_go_by_address_or_by_value_in_their_own_width():
    values, types = kernel_parameters((np.int32(7), _device_array(0x7F00), np.float64(0.5),
                                       np.int64(2**40), np.float32(1.5), np.uint32(3)))
    assert values == (7, 0x7F00, 0.5, 2**40, 1.5, 3)
    assert types == (ctypes.c_int32, ctypes.c_void_p, ctypes.c_double, ctypes.c_int64,
                     ctypes.c_float, ctypes.c_uint32)


@pytest.mark.parametrize("bad", [3, 2.5, np.int16(1), "x"])
def test_an_argument_of_unknown_device_width_is_refused(bad):
    with pytest.raises(TypeError, match="argument 1 of a PDL launch"):
        kernel_parameters((np.int32(1), bad))


def test_only_the_tile_kernel_and_its_fixup_wait_before_they_read_x_or_the_partials():
    assert programmatic_kernel(tile_kernel("float32", 0, 1, 2, finish=1))
    assert programmatic_kernel("spmv_fixup<float>")
    assert not programmatic_kernel("spmv_sell<float, 0, 1, 1, 4, 6, 1>")
    assert not programmatic_kernel("csr_scalar<float, int>")


def test_a_timed_call_is_programmatic_only_back_to_back_and_where_pdl_launches(monkeypatch):
    from sparsescope.backends.spmv_adaptive import CudaSpmvAdaptive
    from sparsescope.backends.spmv_device import Launch, PreparedOwn
    from sparsescope.hardware import programmatic_launch
    from sparsescope.timing.types import TimingConfig

    backend = CudaSpmvAdaptive()
    prepared = PreparedOwn(rows=1, cols=1, nnz=1, value_dtype="float32", x=None, y=None,
                           partials=None, bytes_moved=0, launches=[
                               Launch(tile_kernel("float32", 0, 1, 1), 1, 256, ())])
    throughput = TimingConfig(mode="throughput")
    monkeypatch.setattr(programmatic_launch, "available", lambda: (True, ""))
    assert backend.programmatic(prepared, throughput)
    assert prepared.notes["launch"].startswith("programmatic dependent launch (PDL)")
    assert not backend.programmatic(prepared, TimingConfig())  # latency: timed alone
    # a SELL call with its fix-up: the SELL kernel does not wait, so neither launches so
    sell = PreparedOwn(rows=1, cols=1, nnz=1, value_dtype="float32", x=None, y=None,
                       partials=None, bytes_moved=0, launches=[
                           Launch("spmv_sell<float, 0, 1, 1, 4, 6, 1>", 1, 256, ()),
                           Launch("spmv_fixup<float>", 1, 256, ())])
    assert not backend.programmatic(sell, throughput)
    monkeypatch.setattr(programmatic_launch, "available",
                        lambda: (False, "cuda.bindings is not installed"))
    assert not backend.programmatic(prepared, throughput)
    assert prepared.notes["launch"] == ("ordinary launches (PDL not available: cuda.bindings "
                                        "is not installed)")


def test_a_launch_asks_the_driver_for_programmatic_stream_serialization(monkeypatch):
    """``launch_programmatic`` against a stand-in of ``cuda.bindings.driver`` (no GPU here):
    the grid, block, stream, the attribute, the kernel's handle and its parameters reach
    ``cuLaunchKernelEx``; a failed status is an error naming it."""
    import sys
    import types

    from sparsescope.hardware.programmatic_launch import launch_programmatic

    class Record(types.SimpleNamespace):
        pass

    calls = []
    success = types.SimpleNamespace(name="CUDA_SUCCESS")
    status = [success]

    def cu_launch_kernel_ex(*arguments):
        calls.append(arguments)
        return (status[0],)

    driver = types.SimpleNamespace(
        CUlaunchConfig=Record, CUlaunchAttribute=lambda: Record(value=Record()),
        CUlaunchAttributeID=types.SimpleNamespace(
            CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION="PSS"),
        CUresult=types.SimpleNamespace(CUDA_SUCCESS=success),
        CUstream=lambda ptr: ("stream", ptr), CUfunction=lambda ptr: ("function", ptr),
        cuLaunchKernelEx=cu_launch_kernel_ex)
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = driver
    monkeypatch.setitem(sys.modules, "cuda", types.ModuleType("cuda"))
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", driver)
    kernel = SimpleNamespace(kernel=SimpleNamespace(ptr=0xABC))
    launch_programmatic(kernel, 279, 256, (np.int32(5), _device_array(0x7F00)), stream_ptr=42)
    (config, function, params, extra), = calls
    assert (config.gridDimX, config.gridDimY, config.gridDimZ) == (279, 1, 1)
    assert (config.blockDimX, config.blockDimY, config.blockDimZ) == (256, 1, 1)
    assert config.hStream == ("stream", 42) and config.sharedMemBytes == 0
    (attribute,) = config.attrs
    assert config.numAttrs == 1 and attribute.id == "PSS"
    assert attribute.value.programmaticStreamSerializationAllowed == 1
    assert function == ("function", 0xABC) and extra == 0
    assert params == ((5, 0x7F00), (ctypes.c_int32, ctypes.c_void_p))
    status[0] = types.SimpleNamespace(name="CUDA_ERROR_INVALID_VALUE")
    with pytest.raises(RuntimeError, match="CUDA_ERROR_INVALID_VALUE"):
        launch_programmatic(kernel, 1, 32, (), stream_ptr=42)
