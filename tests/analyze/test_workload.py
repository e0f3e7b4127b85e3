"""Workload definitions: the launch-spec grammar, ideal-byte inference, host arrays, callables."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.analyze.workload import (
    Workload,
    bf16_bits_to_float,
    callable_workload,
    cuda_workload,
    eval_dims,
    eval_int,
    host_arrays,
    inferred_bytes,
    parse_args_spec,
    resolve_callable,
)
from sparsescope.errors import UsageError

SPMV_ARGS = ("n:i32=1024; rp:i32[n+1]=arange(0,16); ci:i32[n*16]=randint(0,n); "
             "v:f32[n*16]=rand; x:f32[n]=rand; y:f32[n]=zeros!out")


def test_eval_int_and_dims():
    assert eval_int("(n+255)//256", {"n": 1000}) == 4
    assert eval_int("2**10 - 1", {}) == 1023
    assert eval_dims("64, 8", {}) == (64, 8)
    assert eval_dims("(n + 1) // 2", {"n": 9}) == (5,)
    with pytest.raises(UsageError, match="unknown name 'm'"):
        eval_int("m * 2", {"n": 1})
    with pytest.raises(UsageError, match="only integers"):
        eval_int("n / 2", {"n": 4})
    with pytest.raises(UsageError, match="positive"):
        eval_dims("0", {})


def test_parse_spec_and_inferred_bytes():
    specs = parse_args_spec(SPMV_ARGS)
    assert [s.name for s in specs] == ["n", "rp", "ci", "v", "x", "y"]
    assert specs[-1].output and not specs[1].output
    # rowptr (n+1) + col, val (16 n each) + x + y, 4 bytes each
    assert inferred_bytes(specs) == 4 * (1025 + 16 * 1024 * 2 + 1024 + 1024)


@pytest.mark.parametrize("text,message", [
    ("n:i33=4", "unknown type"), ("x:f32[4]=noise", "unknown initialiser"),
    ("n=4", "expected name:type"), ("n:i32=4!out", "scalar cannot be an output"),
    ("a:f32[2]=rand; a:f32[2]=rand", "names repeat"), ("", "empty")])
def test_parse_spec_errors(text, message):
    with pytest.raises(UsageError, match=message):
        parse_args_spec(text)


def test_host_arrays_are_reproducible_and_typed():
    specs = parse_args_spec(SPMV_ARGS + "; t:f32[8]=sorted; h:bf16[4]=full(1.5)")
    a, b = host_arrays(specs, seed=3), host_arrays(specs, seed=3)
    assert a["rp"].dtype == np.int32 and list(a["rp"][:3]) == [0, 16, 32]
    assert a["ci"].min() >= 0 and a["ci"].max() < 1024 and a["ci"].size == 16 * 1024
    assert np.array_equal(a["v"], b["v"]) and a["v"].dtype == np.float32
    assert np.all(np.diff(a["t"]) >= 0)
    assert a["h"].dtype == np.uint16 and np.all(bf16_bits_to_float(a["h"]) == 1.5)
    assert int(a["n"]) == 1024


def test_bf16_rounding():
    bits = host_arrays(parse_args_spec("x:bf16[1]=full(1.00390625)"))["x"]
    # 1 + 2^-8 lies halfway between bf16 1.0 and 1.0078125: round to even (1.0)
    assert bf16_bits_to_float(bits)[0] == 1.0


def test_cuda_workload_round_trip(tmp_path):
    cu = tmp_path / "k.cu"
    cu.write_text("extern \"C\" __global__ void k(int n, float* y) {}")
    w = cuda_workload(cu, "k", "(n+255)//256", "256", "n:i32=1000; y:f32[n]=zeros!out")
    assert w.ideal_bytes == 4000 and w.bytes_source.startswith("inferred")
    assert w.launch.dims() == ((4,), (256,))
    assert Workload.from_dict(w.to_dict()) == w
    with pytest.raises(UsageError, match="no such file"):
        cuda_workload(tmp_path / "none.cu", "k", "1", "1", "n:i32=1")


def test_callable_workload_reads_describe(tmp_path):
    mod = tmp_path / "toy_workload.py"
    mod.write_text(
        "from sparsescope.analyze.workload import describe\n"
        "@describe(ideal_bytes=lambda: 3 * 4, reference='toy_workload:ref', kernel='toy',\n"
        "          addresses=('overfetch',), cuda_source='toy.cu')\n"
        "def run():\n    return [1.0, 2.0, 3.0]\n"
        "def ref():\n    return [1.0, 2.0, 3.0]\n")
    w = callable_workload(f"{mod}:run", version="v9")
    assert (w.ideal_bytes, w.bytes_source, w.kernel) == (12, "declared", "toy")
    assert w.addresses == ("overfetch",) and w.version == "v9"
    assert w.cuda_source == tmp_path / "toy.cu"
    assert resolve_callable(f"{mod}:ref")() == [1.0, 2.0, 3.0]
    assert callable_workload(f"{mod}:run", ideal_bytes=99).ideal_bytes == 99
    with pytest.raises(UsageError, match="no callable"):
        resolve_callable(f"{mod}:missing")
    with pytest.raises(UsageError, match="module:function"):
        resolve_callable("no_colon")


def test_spmv_kernel_of_ours_as_a_cuda_workload():
    """The device script's SpMV case: a template kernel of the backends by name expression."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src" / "sparsescope" / "backends" / \
        "kernels" / "spmv_csr.cu"
    w = cuda_workload(src, "csr_vector<float, int, 8>", "(rows*8+255)//256", "256",
                      "rows:i64=131072; rp:i32[rows+1]=arange(0,16); "
                      "ci:i32[rows*16]=randint(0,rows); v:f32[rows*16]=rand; x:f32[rows]=rand; "
                      "y:f32[rows]=zeros!out")
    assert w.kernel == "csr_vector" and w.name == "spmv_csr"
    assert w.launch.dims() == ((4096,), (256,))
    # rowptr, col, val, x, y: 4 bytes each
    assert w.ideal_bytes == 4 * (131073 + 2 * 16 * 131072 + 2 * 131072)
