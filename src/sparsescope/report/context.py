"""What every table is computed against: the bandwidth, the GPU of the warp model, the cases.

Which bandwidth and which GPU (the report's one rule, stated in every table's basis):

* cases that ran on a GPU (``device.kind == "gpu"``) are judged against the device's datasheet
  peak bandwidth, and the warp model (Little's law, DAE) is that GPU's, at ``RunSet.latency_ns``;
* cases that ran on a CPU are judged against the CPU's measured copy bandwidth
  (``device.peak_bw_gb_s``). Warps do not describe a CPU: the warp model is computed only for
  a GPU the user named (``--reference-gpu`` on ``run``, stored as ``RunSet.reference_gpu``, or
  on ``report``), from that GPU's spec-table figures alone -- never fed with the CPU's
  measurements -- at the run's latency when the run named the same GPU, else at that GPU's
  datasheet latency. With no GPU named there is no warp model, and the sections that need one
  say in one line why they are absent (:attr:`ReportContext.warp_absent`).

When ``ceilings.copy_bw_gb_s`` is present every bandwidth figure is also given against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparsescope.errors import ResultsFormatError
from sparsescope.hardware.types import DeviceSpec
from sparsescope.model import CaseMetrics, SpmvTraffic
from sparsescope.model.case_model import CaseModel
from sparsescope.results.case_models import bandwidths, model_of, model_traffic
from sparsescope.results.records import CaseResult, MatrixRecord, RunSet


@dataclass(frozen=True)
class CaseView:
    """One ok case with the numbers derived from it."""

    case: CaseResult
    matrix: MatrixRecord
    label: str
    """Unique short name in tables and figures: the matrix, plus the backend when several ran."""
    traffic: SpmvTraffic
    metrics: CaseMetrics
    """Against the basis bandwidth (datasheet peak on a GPU, measured copy on a CPU)."""
    measured: CaseMetrics | None
    """Against the measured copy ceiling, when one was measured."""
    model: CaseModel | None = None
    """The stored model values (whose bytes, the CSR-equivalent throughput, an above-peak
    cause)."""


@dataclass(frozen=True)
class ReportContext:
    """A RunSet resolved into the basis of every table."""

    runset: RunSet
    bw_gb_s: float
    """Bandwidth the floor, gap and % of peak use."""
    bw_label: str
    """What ``bw_gb_s`` is, for sentences (``H200 datasheet peak``)."""
    measured_copy_gb_s: float | None
    gpu: DeviceSpec | None
    """GPU of the warp-based tables; None on a CPU run with no reference GPU named."""
    gpu_is_run_device: bool
    """False when the cases ran on a CPU (``gpu`` is then the reference GPU, or None)."""
    latency_ns: float
    """DRAM latency of the warp-based tables."""
    specs: tuple[DeviceSpec, ...]
    """The spec table (every GPU of the cross-GPU table)."""
    cases: tuple[CaseView, ...]
    """Ok cases with a measurement, in run order."""
    latency_source: str = ""
    """Where :attr:`latency_ns` comes from, for the basis sentences (``measured``, ``the
    run's``, ``datasheet estimate``)."""

    @property
    def device(self) -> DeviceSpec:
        return self.runset.device

    @property
    def warp_absent(self) -> str:
        """Why the warp model (Little's law, latency sensitivity, DAE FIFO, cross-GPU) is not
        computed for this run, as a clause (``Not computed: <clause>.``); "" when it is (a GPU
        run, or a named reference GPU)."""
        if self.gpu is not None:
            return ""
        return (f"warps do not describe the CPU ({self.device_label}) that ran the cases, and "
                f"`--reference-gpu NAME` on `sparsescope run` or `sparsescope report` computes "
                f"the GPU's own tables from its spec alone")

    @property
    def gpu_run_absent(self) -> str:
        """Why a table that needs the cases' own GPU measurements (the gap decomposition, the
        per-case DAE gain) is absent, as a clause; "" on a GPU run."""
        if self.gpu_is_run_device:
            return ""
        return (f"the per-case tables (gap decomposition, DAE gains) judge each case's "
                f"measured time against a GPU's Little's-law ceiling, and these times were "
                f"measured on a CPU ({self.device_label})")

    @property
    def on_cpu(self) -> bool:
        return self.runset.device.kind != "gpu"

    @property
    def device_label(self) -> str:
        return self.runset.device.vendor_name or self.runset.device.name

    @property
    def best(self) -> CaseView | None:
        """The case closest to the floor (highest % of peak)."""
        return max(self.cases, key=lambda v: v.metrics.pct_peak, default=None)

    @property
    def worst(self) -> CaseView | None:
        return min(self.cases, key=lambda v: v.metrics.pct_peak, default=None)

    def warp_basis(self) -> str:
        """The sentence every warp-based table opens its basis with."""
        gpu = self.gpu
        if gpu is None:
            return ""
        latency = f"DRAM latency {self.latency_ns:,.0f} ns" + (
            f", {self.latency_source}" if self.latency_source else "")
        if self.gpu_is_run_device:
            return (f"{gpu.name}: {gpu.sm_count} SMs, {gpu.max_warps_per_sm} warps/SM, "
                    f"{gpu.peak_bw_gb_s:,.0f} GB/s, {latency}.")
        return (f"Reference GPU {gpu.name}, from its spec alone ({gpu.sm_count} SMs, "
                f"{gpu.max_warps_per_sm} warps/SM, {gpu.peak_bw_gb_s:,.0f} GB/s datasheet, "
                f"{latency}); no CPU measurement enters it (the cases ran on "
                f"{self.device_label}).")


def _spec_table(specs: Sequence[DeviceSpec] | None) -> tuple[DeviceSpec, ...]:
    if specs is not None:
        return tuple(specs)
    from sparsescope.hardware.specs import list_specs

    return tuple(list_specs())


def _reference_gpu(name: str, specs: Sequence[DeviceSpec] | None) -> DeviceSpec:
    if specs is None:
        from sparsescope.hardware.specs import get_spec

        return get_spec(name)
    for spec in specs:
        if spec.name.lower() == name.lower():
            return spec
    from sparsescope.errors import UnknownNameError

    raise UnknownNameError("GPU", name, [s.name for s in specs])


def _labels(cases: Sequence[CaseResult]) -> list[str]:
    """Matrix name, plus the backend when several backends ran, plus a counter if still equal."""
    several = len({c.backend for c in cases}) > 1
    labels = [f"{c.matrix} [{c.backend}]" if several else c.matrix for c in cases]
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if labels.count(label) == 1 else f"{label} #{seen[label]}")
    return out


def matrix_by_name(runset: RunSet) -> dict[str, MatrixRecord]:
    return {m.name: m for m in runset.matrices}


def ok_cases(runset: RunSet) -> list[CaseResult]:
    """Cases that count as timed: outcome ok with a measurement. Failed ones never do."""
    return [c for c in runset.cases if c.outcome == "ok" and c.measurement is not None
            and c.measurement.samples_ms]


def _reference(runset: RunSet, named: str | None, table: Sequence[DeviceSpec],
               replaced: bool) -> tuple[DeviceSpec | None, float, str]:
    """(reference GPU or None, its latency, where the latency comes from) of a CPU run:
    ``named`` (the report's ``--reference-gpu``) over the run's own ``reference_gpu`` ("" when
    the run named none)."""
    name = named or runset.reference_gpu
    if not name:
        return None, runset.latency_ns, ""
    gpu = _reference_gpu(name, table if replaced else None)
    if runset.reference_gpu and runset.reference_gpu.lower() == gpu.name.lower():
        # The run stage resolved it: the user's --latency-ns, else this datasheet's.
        same = abs(runset.latency_ns - gpu.dram_latency_ns) < 1e-9
        return gpu, runset.latency_ns, "datasheet estimate" if same else "the run's"
    return gpu, gpu.dram_latency_ns, "datasheet estimate"


def build_context(runset: RunSet, *, specs: Sequence[DeviceSpec] | None = None,
                  reference_gpu: str | None = None) -> ReportContext:
    """Resolve the basis (see the module docstring). ``specs`` replaces the spec table;
    ``reference_gpu`` names the GPU of a CPU run's warp model (over the run's own)."""
    device = runset.device
    if device.peak_bw_gb_s <= 0:
        raise ResultsFormatError(f"device {device.name!r} has no peak bandwidth "
                                 f"(peak_bw_gb_s = {device.peak_bw_gb_s})")
    table = _spec_table(specs)
    if device.kind == "gpu":
        gpu, gpu_is_run, latency = device, True, runset.latency_ns
        measured = runset.ceilings.dram_latency_ns
        source = ("measured" if measured and abs(measured - latency) < 0.5
                  else "datasheet estimate" if abs(latency - device.dram_latency_ns) < 1e-9
                  else "the run's")
        bw_label = f"{device.name} datasheet peak"
    else:
        gpu, latency, source = _reference(runset, reference_gpu, table, specs is not None)
        gpu_is_run = False
        bw_label = "measured copy bandwidth of the CPU"
    _, copy = bandwidths(runset)
    matrices = matrix_by_name(runset)
    timed = ok_cases(runset)
    views = []
    for case, label in zip(timed, _labels(timed), strict=True):
        record = matrices.get(case.matrix)
        if record is None:
            raise ResultsFormatError(f"case {case.matrix}/{case.backend} names a matrix that is "
                                     f"not in the run's matrices")
        if not case.measurement.time_ms > 0:
            raise ResultsFormatError(f"case {label}: time {case.measurement.time_ms} ms is not "
                                     f"positive")
        model = model_of(case, record, device.peak_bw_gb_s, copy, device.l2_bytes)
        if model is None:  # a model that charges no byte: nothing to judge the time against
            continue
        views.append(CaseView(case=case, matrix=record, label=label,
                              traffic=model_traffic(case, record), metrics=model.peak,
                              measured=model.copy, model=model))
    return ReportContext(
        runset=runset, bw_gb_s=device.peak_bw_gb_s, bw_label=bw_label, measured_copy_gb_s=copy,
        gpu=gpu, gpu_is_run_device=gpu_is_run, latency_ns=latency, latency_source=source,
        specs=table,
        cases=tuple(views),
    )
