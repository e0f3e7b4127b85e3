"""The first-principles model for a GPU, with no GPU: ``sparsescope model``.

- :func:`model_figures`: Little's law, the latency sensitivity and the DAE (decoupled access /
  execute) figures of a GPU from the spec table, and optionally one measured case's bytes,
  floor, effective bandwidth, % of peak and gap (:mod:`sparsescope.model`);
- :func:`what_if_matrices`: each backend's kernel on each matrix, planned on this host and
  predicted on a GPU (the cross-GPU what-if, :func:`sparsescope.whatif.what_if`), the matrices
  loaded one at a time, with a progress bar;
- :func:`default_backends`: the backends ``sparsescope run`` runs by default.

The what-if's summary, auto's account of its choice and the memory budget are
:mod:`sparsescope.api.what_if_summary`'s (:class:`ModelWhatIf`, :class:`SummaryRow`,
:class:`AutoChoice`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sparsescope.api.what_if_summary import (
    AUTO_BACKEND,
    AutoChoice,
    ModelWhatIf,
    SummaryRow,
    _check_suite,
    _left_out,
    _Matrices,
    _summary_rows,
    parse_bytes,
)
from sparsescope.context.predict import default_memory_budget
from sparsescope.errors import UsageError
from sparsescope.model import (
    CaseMetrics,
    CpiPrediction,
    DaePrediction,
    FifoDepthRow,
    GapDecomposition,
    IndexWidthRow,
    LittlesLaw,
    SensitivityRow,
    SramCostRow,
)

SENSITIVITY_LATENCIES_NS = (200.0, 300.0, 400.0)
"""The DRAM latencies every sensitivity table shows, beside the GPU's own."""


@dataclass(frozen=True)
class CaseFigures:
    """One measured SpMV case against the GPU (:func:`model_figures` with a case)."""

    metrics: CaseMetrics
    """Bytes, floor, effective bandwidth, % of peak, gap, GFLOP/s, arithmetic intensity."""
    index_bytes: int
    y_read: bool
    gap: GapDecomposition
    """The gap to the floor split into the Little's-law ceiling and the rest."""
    index_width: IndexWidthRow
    """The same case's bytes at INT32 and INT64 indices."""


@dataclass(frozen=True)
class ModelFigures:
    """Little's law, latency sensitivity and DAE for one GPU (:func:`model_figures`)."""

    gpu: str
    bw_gb_s: float
    """The bandwidth judged against: the datasheet peak, or the one given."""
    latency_ns: float
    """The DRAM latency: the spec's estimate, or the one given."""
    littles_law: LittlesLaw
    ridge_flop_per_byte: float
    fp32_peak_gflops: float
    sensitivity: tuple[SensitivityRow, ...]
    """At 200, 300, 400 ns and the GPU's latency (with the case's % of peak when given)."""
    min_fifo_depth: int
    fifo_depth: tuple[FifoDepthRow, ...]
    sram_cost: tuple[SramCostRow, ...]
    case: CaseFigures | None = None
    dae_bw_prediction: DaePrediction | None = None
    """DAE's bandwidth from the case's % of peak (with a case)."""
    dae_cpi_prediction: CpiPrediction | None = None
    """DAE's speedup from an ncu profile's CPI and Long Scoreboard stalls (when given)."""


def model_figures(gpu: str = "H200", *, latency_ns: float | None = None,
                  bw_gb_s: float | None = None, rows: int | None = None,
                  cols: int | None = None, nnz: int | None = None,
                  time_ms: float | None = None, index_bytes: int = 4, value_bytes: int = 4,
                  y_read: bool = True, cpi: float | None = None,
                  long_scoreboard: float | None = None) -> ModelFigures:
    """GPU ``gpu``'s (a name ``sparsescope specs`` knows) Little's-law, latency-sensitivity
    and DAE figures at ``latency_ns`` / ``bw_gb_s`` (default: the spec's DRAM latency and peak
    bandwidth). ``rows``, ``nnz`` and ``time_ms`` (all three; ``cols`` defaults to ``rows``):
    one measured SpMV case as well, with ``index_bytes`` / ``value_bytes`` and whether the
    kernel reads y. ``cpi`` and ``long_scoreboard`` (both): the CPI-based DAE prediction.
    Bad or incomplete arguments are a :class:`~sparsescope.errors.UsageError`."""
    from sparsescope import model
    from sparsescope.hardware.specs import get_spec

    spec = get_spec(gpu)
    latency = latency_ns if latency_ns is not None else spec.dram_latency_ns
    bw = bw_gb_s if bw_gb_s is not None else spec.peak_bw_gb_s
    if not (0 < latency < math.inf and 0 < bw < math.inf):  # NaN fails both comparisons
        raise UsageError(f"--latency-ns and --bw-gb-s must be finite and > 0, got {latency} "
                         f"and {bw}")
    ll = model.littles_law(bw, latency, spec.sm_count, spec.max_warps_per_sm)
    case_given = [a is not None for a in (rows, nnz, time_ms)]
    if any(case_given) and not all(case_given):
        raise UsageError("a case needs --rows, --nnz and --time-ms (and optionally --cols)")
    case = None
    if rows is not None and nnz is not None and time_ms is not None:
        if min(rows, nnz) < 0 or not 0 < time_ms < math.inf:
            raise UsageError("--rows and --nnz must be >= 0 and --time-ms finite and > 0")
        cols = cols if cols is not None else rows
        traffic = model.spmv_traffic(rows, cols, nnz, value_bytes=value_bytes,
                                     index_bytes=index_bytes, y_read=y_read)
        metrics = model.case_metrics(traffic, time_ms, bw)
        case = CaseFigures(
            metrics=metrics, index_bytes=index_bytes, y_read=y_read,
            gap=model.gap_decomposition(time_ms, metrics.floor_ms, ll.bw_ceiling_pct),
            index_width=model.index_width_row("case", rows, cols, nnz,
                                              value_bytes=value_bytes, y_read=y_read))
    current_pct = case.metrics.pct_peak if case is not None else None
    latencies = sorted({*SENSITIVITY_LATENCIES_NS, float(latency)})
    sensitivity = tuple(model.latency_sensitivity(
        bw, spec.sm_count, spec.max_warps_per_sm, latencies, current_pct=current_pct))
    min_depth = model.min_fifo_depth(ll.warps_per_sm_required, spec.max_warps_per_sm)
    fifo_depth = tuple(model.fifo_depth_table(ll.warps_per_sm_required, spec.max_warps_per_sm))
    sram_cost = tuple(model.sram_cost_table(spec.sm_count, spec.max_warps_per_sm,
                                            spec.registers_per_sm))
    bw_prediction = (None if current_pct is None else
                     model.dae_bw_prediction(current_pct, ll.bw_ceiling_pct))
    cpi_prediction = None
    if cpi is not None or long_scoreboard is not None:
        if cpi is None or long_scoreboard is None:
            raise UsageError("the CPI-based prediction needs both --cpi and --long-scoreboard")
        try:
            cpi_prediction = model.dae_cpi_prediction(cpi, long_scoreboard)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    return ModelFigures(
        gpu=spec.name, bw_gb_s=bw, latency_ns=latency, littles_law=ll,
        ridge_flop_per_byte=model.ridge_point(spec.fp32_peak_gflops, bw),
        fp32_peak_gflops=spec.fp32_peak_gflops, sensitivity=sensitivity,
        min_fifo_depth=min_depth, fifo_depth=fifo_depth, sram_cost=sram_cost, case=case,
        dae_bw_prediction=bw_prediction, dae_cpi_prediction=cpi_prediction)


def default_backends(device_kind: str = "gpu", op: str = "spmv") -> list[str]:
    """The backends ``sparsescope run`` runs by default for ``op`` on a ``cpu`` or ``gpu``
    machine."""
    from sparsescope.backends.registry import default_backends as defaults

    return defaults(device_kind, op)


def what_if_matrices(files: Sequence[str] = (), suite: str | None = None, *,
                     gpu: str = "H200", backends: Sequence[str] | None = None,
                     scale: float = 1.0, names: Sequence[str] = (), seed: int = 0,
                     value_dtype: str = "float32", sass: bool = True, use_store: bool = True,
                     latency_ns: float | None = None, bw_gb_s: float | None = None,
                     progress: bool = False, memory_budget: int | str | None = None,
                     work_budget: int | str | None = None,
                     timing_mode: str = "latency", op: str = "spmv",
                     op_params: dict[str, Sequence] | None = None) -> ModelWhatIf:
    """Each backend's kernel of ``op`` (default: the GPU defaults of ``sparsescope run --op``;
    ``all``: every GPU backend of ``op``) on each matrix of ``files`` or ``suite`` (``names``:
    only those entries) for every combination of ``op_params`` (as ``sparsescope run``
    expands them: SpMM's ``k`` and ``layout``; default: the op's defaults), planned on this
    host and predicted on ``gpu`` (its stored ceilings over the
    datasheet unless ``use_store`` is False; ``latency_ns`` / ``bw_gb_s`` replace the DRAM
    latency / bandwidth). ``sass`` False keeps the backends' declared kernel shapes.
    ``progress``: a bar over the cases on stderr when it is a terminal (and there is more
    than one case). ``memory_budget`` (bytes, or text such as ``2GiB``; default
    :func:`default_memory_budget`): above it a format is planned on a row sample
    (``model.plan_sample``), and a matrix the model cannot hold at all is refused before it is
    built (``MatrixTooLargeError``). ``work_budget`` (nonzeros, or text such as ``2M``;
    default ``model.work_sample.WORK_BUDGET_NNZ``; 0: none): above it the model's row terms
    run on a stratified sample of whole rows, scaled to the whole matrix
    (``model.work_sample``), named in each case's assumptions and ``work_sample``.
    ``timing_mode`` (``timing.types.TIMING_MODES``, as ``sparsescope run --timing-mode``):
    every case predicted in it (``throughput``: calls back to back, the L2 warm, the launches
    overlapped, ``model.throughput``), auto choosing in it; another mode is a
    :class:`UsageError`. Returns :class:`ModelWhatIf`: the cases with a summary row each and
    auto's choice from its one candidate list, in that mode (SpMV's ``cuda-spmv-auto``;
    ``spmm-cuda-auto`` chooses in its host plan, its row naming the kernel)."""
    from sparsescope.context import named_gpu
    from sparsescope.context.predict import plan_memory_budget
    from sparsescope.model.work_sample import work_budget as work_budget_of
    from sparsescope.ops.registry import params_for
    from sparsescope.progress import CaseProgress
    from sparsescope.timing.types import TimingConfig
    from sparsescope.whatif import expand_backends, load_matrices, what_if

    for flag, value in (("--latency-ns", latency_ns), ("--bw-gb-s", bw_gb_s)):
        if value is not None and not 0 < value < math.inf:
            raise UsageError(f"{flag} must be finite and > 0, got {value}")
    budget = parse_bytes(memory_budget)
    budget = default_memory_budget() if budget is None else budget
    work = _work_budget_nnz(work_budget)
    timing = TimingConfig(mode=timing_mode).checked()  # a bad mode: one line, before any work
    chosen = expand_backends(backends or default_backends("gpu", op), op)
    params_list = params_for(op, op_params)  # a value the op refuses: before any work
    # the device the what-if predicts with, SASS or not, is the one auto's table is read with
    device = named_gpu(gpu, use_store=use_store, latency_ns=latency_ns, bw_gb_s=bw_gb_s,
                       sass=sass)
    if suite and not files:
        _check_suite(suite, scale, names, budget)
    count, loaded = load_matrices(files, suite, scale=scale, names=names, seed=seed)
    total = count * len(chosen) * len(params_list)
    state = _Matrices(device, value_dtype, budget, AUTO_BACKEND in chosen, chosen, timing, op,
                      params_list)
    with (CaseProgress(total, enabled=progress and total > 1) as bar,
          plan_memory_budget(budget), work_budget_of(work)):
        bar.note("loading the first matrix")
        result = what_if(
            state.noted(loaded, bar), chosen, device, value_dtype=value_dtype, sass=sass,
            on_case=lambda case: bar.advance(f"{case.matrix} {case.backend}"), timing=timing,
            op=op, op_params=op_params)
    autos = {m: _left_out(c, result.cases, *state.found[m]) for m, c in state.auto.items()}
    return ModelWhatIf(gpu=result.gpu, cases=result.cases,
                       summary=tuple(_summary_rows(result.cases, result.gpu, autos)),
                       auto=tuple(autos.values()), memory_budget_bytes=budget,
                       plan_samples=state.samples, work_samples=state.work_samples,
                       timing_mode=timing.mode)


def _work_budget_nnz(value: int | str | None) -> int | None:
    """The work budget in nonzeros from ``value``: None for the default
    (``model.work_sample.WORK_BUDGET_NNZ``), an integer, or text (``2000000``, ``2e6``,
    ``2M``, ``500k``); 0 gives None: no budget, every term on the whole matrix. Anything else
    is a :class:`UsageError`."""
    from sparsescope.model.work_sample import WORK_BUDGET_NNZ

    if value is None:
        return WORK_BUDGET_NNZ
    text = str(value).strip().lower().replace(",", "").replace("_", "")
    scale = {"k": 10**3, "m": 10**6, "g": 10**9}.get(text[-1:], 1)
    number = text[:-1] if scale > 1 else text
    try:
        count = float(number) * scale
    except ValueError:
        count = math.nan
    if not (math.isfinite(count) and count >= 0 and count == int(count)):
        raise UsageError(f"--work-budget must be a whole number of nonzeros >= 0 (e.g. "
                         f"2000000, 2e6, 2M), got {value!r}")
    return int(count) or None


__all__ = ["AutoChoice", "CaseFigures", "ModelFigures", "ModelWhatIf", "SummaryRow",
           "default_backends", "default_memory_budget", "model_figures", "what_if_matrices"]
