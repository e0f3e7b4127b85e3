"""Result records: what one run of sparsescope measured, with provenance.

These are the stage-to-stage contract: backends and timing fill :class:`CaseResult`, the run
assembles a :class:`RunSet`, ``results.io`` writes and validates it, the report reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparsescope.hardware.types import DeviceSpec, MeasuredCeilings
from sparsescope.matrices.types import MatrixStats
from sparsescope.model.case_model import CaseModel
from sparsescope.model.prediction import ModelPrediction
from sparsescope.model.traffic import Traffic
from sparsescope.ops.params import OpDerived, OpParams
from sparsescope.stages import StageTimes
from sparsescope.timing.types import Measurement, TimingConfig

#: Bumped on any incompatible change of the JSON layout; readers refuse other versions but
#: migrate older ones they know (``results.migrate``). 3: stage times (``CaseResult.stages``,
#: ``RunSet.stages``), absent (None) in files of schema 1 and 2.
SCHEMA_VERSION = 3

OUTCOMES = ("ok", "skipped", "failed")


@dataclass(frozen=True)
class Correctness:
    """A backend's output against the float64 reference."""

    rel_err: float
    """||y - y_ref||_2 / ||y_ref||_2 (absolute L2 error when y_ref is all zero)."""
    tolerance: float
    """The gate: rel_err above this marks the case ``failed``."""
    max_abs_err: float = 0.0
    """max_i |y_i - y_ref_i|."""

    @property
    def passed(self) -> bool:
        return self.rel_err <= self.tolerance


@dataclass(frozen=True)
class MatrixRecord:
    """A matrix as it appears in results: identity plus structure statistics."""

    name: str
    source: str
    kind: str
    analog_of: str | None
    stats: MatrixStats


@dataclass(frozen=True)
class CaseCounters:
    """Profiler readings of one case that the warp-level tables use."""

    achieved_occupancy_pct: float | None = None
    """Achieved occupancy of the case's main kernel (% of the SM's warp slots)."""
    cpi: float | None = None
    """Cycles per issued instruction of the main kernel."""
    long_scoreboard_cycles: float | None = None
    """Cycles per instruction stalled on long scoreboard (L1TEX: DRAM / L2 loads)."""
    dram_bytes: float | None = None
    """Bytes the kernel read from and wrote to DRAM (ncu ``dram__bytes_read.sum`` +
    ``dram__bytes_write.sum``), to hold against the model's predicted DRAM bytes."""
    l2_bytes: float | None = None
    """Bytes the kernel's requests moved through the L2 (ncu ``lts__t_bytes.sum``)."""
    block_size: int | None = None
    """Threads per block of the profiled launch."""
    stall_reasons: dict[str, float] = field(default_factory=dict)
    """Stall reason -> warp cycles per issued instruction spent in it."""


@dataclass(frozen=True)
class CaseResult:
    """One (matrix, backend, op) case: outcome ok / skipped / failed, with a reason."""

    matrix: str
    """MatrixRecord.name."""
    backend: str
    """Backend registry name, e.g. ``scipy-cpu``."""
    op: str
    """Operation, e.g. ``spmv``."""
    outcome: str
    """``ok``, ``skipped`` or ``failed``."""
    reason: str = ""
    """Why skipped or failed; empty for ok."""
    value_bytes: int = 4
    """Bytes per stored value (4 float32, 8 float64)."""
    index_bytes: int = 4
    """Bytes per column index and row pointer (4 INT32, 8 INT64)."""
    y_read: bool = False
    """Whether the kernel reads y before writing it (y += A x)."""
    measurement: Measurement | None = None
    """Timing with raw samples; None unless outcome is ok."""
    correctness: Correctness | None = None
    """Error against float64; present whenever the backend produced an output."""
    timing_mode: str = "latency"
    """The timing protocol's mode the case was (or would have been) timed in: ``latency``
    (each call on its own) or ``throughput`` (calls back to back, L2 warm;
    ``timing.modes``). Results older than the modes were all latency."""
    params: OpParams = field(default_factory=OpParams)
    """The op's parameters (``SpmmParams(k=64, layout="row")``; the record type is the op's,
    named in the registry table)."""
    derived: OpDerived = field(default_factory=OpDerived)
    """Counts the op derived building the case (slice: nonzeros and sectors selected)."""
    traffic: Traffic | None = None
    """The bytes this backend's own format moves for the case, as the backend declared them;
    None when the backend never prepared the case (skipped, or prepare failed)."""
    model: CaseModel | None = None
    """The op's byte model judged against the measured time (% of peak, floor, gap), computed
    once when the run ended; None for a case not timed."""
    counters: CaseCounters | None = None
    """Profiler readings attached to the case (occupancy, CPI), when a profile was taken."""
    prediction: ModelPrediction | None = None
    """The model's predicted time with its terms, made before the case was timed, and its
    signed error once it was (``model.prediction``); None for results older than the model."""
    notes: dict[str, str] = field(default_factory=dict, compare=False)
    """Free-text facts of the backend for people (kernel chosen, launch shape); no code reads
    a value back from here."""
    stages: StageTimes | None = field(default=None, compare=False)
    """Where the case's wall time went (load, float64 reference, prepare, SASS and plan,
    prediction, check, timing, ...; a sweep case also its queue and transfer times); None for
    results older than schema 3. Not compared: two runs of one case differ in it."""

    def __post_init__(self) -> None:
        # A case built without params/derived gets its op's own records (their defaults), as
        # reading it back gives: otherwise a write/read round trip would change their type.
        from sparsescope import registry

        entry = registry.OPS.get(self.op)
        if entry is None:
            return
        if type(self.params) is OpParams:
            object.__setattr__(self, "params", registry.load(entry.params)())
        if type(self.derived) is OpDerived:
            object.__setattr__(self, "derived", registry.load(entry.derived)())

    @property
    def time_ms(self) -> float | None:
        return self.measurement.time_ms if self.measurement is not None else None


@dataclass(frozen=True)
class Provenance:
    """Where and how a run happened."""

    created_utc: str
    """ISO 8601 time the run started."""
    command: str
    """The command line (or API call) that produced it."""
    sparsescope_version: str
    git_commit: str
    """Commit of the sparsescope checkout, or ``unknown``."""
    hostname: str
    platform: str
    python: str
    device: str
    """Device that ran the cases, as reported by the driver or the OS."""
    driver: str = ""
    """GPU driver version; empty on a CPU run."""
    libraries: dict[str, str] = field(default_factory=dict)
    """Library -> version for everything that touched the numbers (numpy, scipy, torch, ...)."""


@dataclass(frozen=True)
class RunSet:
    """Everything one run measured. Serialized as versioned JSON (``schema_version``)."""

    run_id: str
    suite: str
    """Suite name, or ``files`` for matrices given as paths."""
    scale: float
    """Suite scale factor (1.0 = full size)."""
    provenance: Provenance
    device: DeviceSpec
    """Spec of the device the cases ran on (datasheet figures, or the CPU's)."""
    ceilings: MeasuredCeilings
    timing: TimingConfig
    matrices: tuple[MatrixRecord, ...]
    cases: tuple[CaseResult, ...]
    latency_ns: float
    """DRAM latency the model used (the spec's estimate unless overridden)."""
    reference_gpu: str = "H200"
    """GPU whose datasheet drives the model tables when the cases ran on a CPU."""
    stages: StageTimes | None = field(default=None, compare=False)
    """Where the run's wall time went, stage by stage, in total (the cases' stages plus the
    run's own: device ceilings, report); None for a sweep (see its cases) and for results
    older than schema 3."""
    schema_version: int = SCHEMA_VERSION
