"""SpMM done as a dense GEMM (``spmm-cublas-dense``): the bytes one call moves, the call's
roofline, and the tolerance of its TF32 mode -- what the op needs to check and predict the
dense peer the sparse kernels are set against (the report's break-even).

The dense call multiplies every stored zero: A is ``rows x cols`` whatever its nonzeros, so
its bytes and flops follow the shape, not the sparsity::

    A     = rows x cols x v           (v: value bytes; padding: (rows x cols - nnz) x v)
    X     = cols x k x v  read once   Y = rows x k x v  written once
    flops = 2 x rows x cols x k

Hand check: 1,000 x 2,000 float32, 10,000 nonzeros, k 8 -> A 8,000,000 B (padding
7,960,000), X 64,000, Y 32,000; 8,096,000 B in all and 32,000,000 flops.

Pure functions of numbers only (no GPU): the backend declares the traffic, the op's predictor
(``ops.spmm.SpmmOp.predict``) reads :class:`DenseGemmShape`, tests check both by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsescope.model.prediction import ModelPrediction, PredictionTerm, not_modelled
from sparsescope.model.traffic import Traffic

#: The math modes of the dense call: plain FP32 (CUDA cores, IEEE float32 products) and TF32
#: (tensor cores: each input rounded to a 10-bit mantissa, products accumulated in float32).
MATHS = ("fp32", "tf32")

#: Unit roundoff of a TF32 input: 10 explicit mantissa bits. A truncating conversion errs by
#: up to one unit in the last place, 2^-10 relative; round-to-nearest by half that. The
#: tolerance takes the worse, truncation, since the library does not say which its kernels
#: use.
TF32_UNIT_ROUNDOFF = 2.0 ** -10


def dense_gemm_traffic(rows: int, cols: int, nnz: int, k: int, *,
                       value_bytes: int = 4) -> Traffic:
    """The bytes of one dense GEMM ``Y = A X`` over A stored dense (the module docstring's
    formula): A's values (its zeros counted as padding), X once, Y written; no index."""
    a_values = rows * cols
    return Traffic(format=f"dense {8 * value_bytes}-bit (zeros stored)",
                   values_bytes=a_values * value_bytes, indices_bytes=0, row_meta_bytes=0,
                   x_bytes=cols * k * value_bytes, y_read_bytes=0,
                   y_written_bytes=rows * k * value_bytes,
                   padding_bytes=(a_values - nnz) * value_bytes, flops=2 * a_values * k)


def tf32_tolerance(fp32_tolerance: float, condition: float,
                   unit_roundoff: float = TF32_UNIT_ROUNDOFF) -> float:
    """The relative Frobenius error a TF32 product may have against float64::

        tol_tf32 = tol_fp32 + (2 u + u^2) x cond        u = 2^-10 (TF32_UNIT_ROUNDOFF)

    Why: TF32 rounds each input, ``a -> a (1 + d1)``, ``x -> x (1 + d2)``, ``|d| <= u``, so
    each product errs by at most ``(2 u + u^2) |a| |x|``; summed over a row, ``Y``'s error is
    at most ``(2 u + u^2) (|A| |X|)``, and in the Frobenius norm, relative to ``|| A X ||``,
    ``(2 u + u^2) x cond`` with ``cond = || |A| |X| ||_F / || A X ||_F`` (the case's
    cancellation factor, ``ops.spmm.condition``). The float32 accumulation adds what the op's
    FP32 tolerance already allows (``tol_fp32``: the case's tolerance, itself scaled by cond).
    A bound, not a fit: it holds whatever the library's summation order.

    Hand check: tol_fp32 1e-5, cond 1 -> 1e-5 + 2^-9 + 2^-20 = 0.0019640786...; cond 3 and
    tol_fp32 3e-5 -> 3e-5 + 3 x 0.0019540786 = 0.0058922358...
    """
    if condition < 1.0:
        raise ValueError(f"condition must be >= 1, got {condition}")
    return fp32_tolerance + (2.0 * unit_roundoff + unit_roundoff ** 2) * condition


@dataclass(frozen=True)
class DenseGemmShape:
    """What the dense call's roofline needs beyond its bytes: its math mode and launches."""

    math: str
    """``fp32`` or ``tf32`` (:data:`MATHS`)."""
    kernel: str = "cuBLAS GEMM"
    """How the prediction names the call."""
    launches: int = 1
    """Kernels one call launches (cuBLAS's GEMM: one for a single product)."""

    def __post_init__(self) -> None:
        if self.math not in MATHS:
            raise ValueError(f"math must be one of {', '.join(MATHS)}, got {self.math!r}")


def _overhead_us(rates, launches: int) -> tuple[float, str]:
    """The call's fixed cost: latency mode ``call_us + (launches - 1) x next_launch_us``
    (measured through the timing protocol), else ``launches x launch_us``, else 0;
    throughput mode ``launches x next_launch_us`` (else ``launch_us``), as
    ``model.call_overhead`` charges one of our launches."""
    nxt = rates.next_launch_us or rates.launch_us
    if getattr(rates, "timing_mode", "latency") == "throughput":
        if nxt:
            return launches * nxt, f"{launches} x {nxt:.2f} us back-to-back launch"
        return 0.0, "no launch cost measured: none charged"
    if rates.call_us:
        extra = (launches - 1) * (nxt or 0.0)
        return rates.call_us + extra, f"call {rates.call_us:.2f} us (measured, one launch)"
    if rates.launch_us:
        return launches * rates.launch_us, f"{launches} x {rates.launch_us:.2f} us launch"
    return 0.0, "no launch cost measured: none charged"


def predict_dense_gemm(traffic: Traffic, shape: DenseGemmShape, rates, *,
                       flushed: bool) -> ModelPrediction:
    """The dense call's roofline (``rates``: a ``model.predict.DeviceRates``)::

        t = overhead + max(bytes / bw, flops / peak)
        bw   = the L2 bandwidth when the call is not flushed and its bytes fit the L2 (and
               the L2's is measured), else the DRAM bandwidth (measured read, else datasheet)
        peak = fp32: the FP32 rate (measured FMA chains, else datasheet);
               tf32: the dense TF32 tensor-core peak (datasheet) -- not modelled without one

    It assumes cuBLAS reads each operand once and keeps its arithmetic at the peak: a lower
    bound, which small k and skinny tiles stay above. Hand check (H200 datasheet, 4,800 GB/s,
    66,900 GFLOP/s FP32, no launch cost measured): 4,096 x 4,096 float32 at k 8 moves
    67,108,864 + 131,072 + 131,072 = 67,371,008 B -> 14.036 us; 268,435,456 flops -> 4.012
    us: memory-bound, 14.036 us.
    """
    if shape.math == "tf32":
        peak = rates.tf32_tensor_gflops
        if not peak:
            return not_modelled(f"no dense TF32 tensor-core peak is known for {rates.name}")
        peak_src = f"dense TF32 tensor-core peak ({rates.sources.get('tf32_tensor', 'spec')})"
    else:
        peak, peak_src = rates.fp32_gflops, f"FP32 rate ({rates.sources.get('fp32', 'spec')})"
    total = int(traffic.total_bytes)
    in_l2 = (not flushed) and total <= rates.l2_bytes and bool(rates.l2_bw_gb_s)
    bw = rates.l2_bw_gb_s if in_l2 else rates.dram_bw_gb_s
    where = "L2" if in_l2 else "DRAM"
    memory_ms = total / (bw * 1e9) * 1e3
    compute_ms = traffic.flops / (peak * 1e9) * 1e3
    overhead_us, overhead_src = _overhead_us(rates, shape.launches)
    terms = (PredictionTerm("memory", memory_ms,
                            f"{total:,} B / {bw:,.0f} GB/s ({where})"),
             PredictionTerm("compute", compute_ms,
                            f"{traffic.flops:,} flops / {peak:,.0f} GFLOP/s ({shape.math})"),
             PredictionTerm("overhead", overhead_us / 1e3, overhead_src))
    limiter = "memory" if memory_ms >= compute_ms else "compute"
    return ModelPrediction(
        predicted_ms=overhead_us / 1e3 + max(memory_ms, compute_ms), limiter=limiter,
        terms=terms, inputs={"bytes": float(total), "flops": float(traffic.flops),
                             "bw_gb_s": float(bw), "peak_gflops": float(peak)},
        kernel=f"{shape.kernel} ({shape.math}, A stored dense)",
        assumptions=(f"dense roofline: operands read once, arithmetic at the {peak_src}",
                     f"memory at the {where} bandwidth "
                     f"({rates.sources.get('l2_bw' if in_l2 else 'dram_bw', 'spec')}; the L2 "
                     f"{'flushed' if flushed else 'not flushed'} before the call)"))
