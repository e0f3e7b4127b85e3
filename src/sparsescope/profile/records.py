"""Typed records of a profile: one :class:`KernelProfile` per profiled launch, its rule messages,
and :class:`InstructionSample` rows of the per-instruction (source) page.

Both readers (``read_report`` for ``.ncu-rep``, ``read_csv`` for ncu's CSV exports) build these
through :func:`build_profile`, so the same report read either way gives the same record.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from sparsescope.profile import metrics as M

MetricValue = tuple[float | str, str]
"""(value, unit): numbers in ncu's base units (byte, ns, hz, ...); strings for text metrics."""


@dataclass(frozen=True)
class RuleMessage:
    """One message of ncu's guided analysis (the details page's rule rows)."""

    rule: str
    """Rule identifier, e.g. ``UncoalescedGlobalAccess``."""
    section: str
    """Identifier of the section the rule belongs to, e.g. ``SourceCounters``."""
    type: str
    """``OPT`` (optimisation), ``INF`` (information), ``WRN`` (warning) or ``ERR``."""
    message: str
    """The message as the CLI prints it (links written as ``text (url)``)."""
    speedup_type: str = ""
    """``global`` or ``local`` when ncu estimated a speedup, else empty."""
    estimated_speedup_pct: float | None = None
    """ncu's estimate of the time saved by fixing it, % of the kernel's duration."""


@dataclass(frozen=True)
class KernelProfile:
    """One profiled kernel launch: the facts a report shows, plus every metric ncu recorded."""

    index: int
    """Position of the launch in the report (ncu's ``ID``), 0-based."""
    name: str
    """Function name without namespace, template or parameters, e.g. ``csrmv_v3_kernel``."""
    demangled_name: str
    """Full demangled name (return type, templates, parameters)."""
    block_size: int | None
    """Threads per block (product of the block dimensions)."""
    grid_size: int | None
    """Blocks in the grid (product of the grid dimensions)."""
    registers_per_thread: int | None
    cpi: float | None
    """Warp cycles per issued instruction (``smsp__average_warp_latency_per_inst_issued.ratio``)."""
    stalls: dict[str, float]
    """Stall reason (``long_scoreboard``) -> warp cycles per issued instruction spent in it;
    every reason the profile holds, in ncu's order."""
    achieved_occupancy_pct: float | None
    theoretical_occupancy_pct: float | None
    duration_ns: float | None
    """``gpu__time_duration.sum``: the kernel's duration under the profiler, ns."""
    metrics: dict[str, MetricValue] = field(repr=False, compare=False)
    """Every metric: name -> (value, unit), numbers in base units."""
    rules: tuple[RuleMessage, ...] = ()
    """ncu's rule messages for this launch (empty messages dropped)."""
    source: str = ""
    """File the profile was read from."""

    def value(self, *names: str) -> float | None:
        """The first of ``names`` the profile holds as a number, or None."""
        for name in names:
            entry = self.metrics.get(name)
            if entry is not None and not isinstance(entry[0], str):
                return float(entry[0])
        return None

    def text(self, name: str) -> str | None:
        entry = self.metrics.get(name)
        return None if entry is None else str(entry[0])

    def summary(self) -> dict:
        """The fields ``sparsescope profile read --json`` prints for this kernel (with ncu's
        replay passes of the launch, ``profiler__replayer_passes``, where recorded)."""
        return {
            "index": self.index,
            "name": self.name,
            "demangled_name": self.demangled_name,
            "block_size": self.block_size,
            "grid_size": self.grid_size,
            "registers_per_thread": self.registers_per_thread,
            "cpi": self.cpi,
            "stalls": dict(self.stalls),
            "achieved_occupancy_pct": self.achieved_occupancy_pct,
            "theoretical_occupancy_pct": self.theoretical_occupancy_pct,
            "duration_ns": self.duration_ns,
            "replay_passes": _int_or_none(self.value(M.REPLAY_PASSES)),
        }


@dataclass(frozen=True)
class InstructionSample:
    """One SASS instruction of a kernel with its execution counts and stall samples
    (``--page source --print-source sass``, or the per-PC metrics of a report)."""

    kernel: str
    """Function name of the kernel the instruction belongs to."""
    address: int
    """Program counter (absolute, as ncu prints it)."""
    sass: str
    """The instruction text, e.g. ``LDG.E R4, desc[UR4][R2.64]``."""
    warp_stall_samples: int
    """PC samples of warps parked on this instruction, all samples."""
    warp_stall_samples_not_issued: int
    """Samples in cycles where the warp's scheduler issued nothing."""
    instructions_executed: int
    """Warp-level executions."""
    thread_instructions_executed: int
    predicated_on_thread_instructions: int
    """Thread executions with the predicate true."""
    stall_samples: dict[str, int]
    """Stall reason -> samples (all samples); only reasons with a sample."""
    l2_sectors_global: int = 0
    """Theoretical L2 sectors of this instruction's global accesses."""
    l2_sectors_global_excessive: int = 0
    """Sectors beyond the ideal (fully coalesced) count."""
    source_file: str = ""
    source_line: int | None = None


def without_parameters(name: str) -> str:
    """A kernel name up to its parameter list (the first ``(`` outside template brackets):
    ``spmv_sell<float, (int)0>(int, const int *)`` -> ``spmv_sell<float, (int)0>``."""
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            return name[:i]
    return name


def short_kernel_name(demangled: str) -> str:
    """``void cusparse::<unnamed>::csr_partition_kernel<long, long>(const T1 *, ...)`` ->
    ``csr_partition_kernel``; ``void csr_vector<8>(int, ...)`` -> ``csr_vector``.

    Strips the parameter list (first ``(`` outside template brackets), the trailing template
    arguments, the namespaces and the return type, the way ncu's ``function`` name base does.
    ncu's CSV pages shorten ``cusparse::<unnamed>::`` to ``unnamed>::`` (an unmatched bracket):
    anonymous-namespace qualifiers in every spelling are dropped first."""
    head = without_parameters(_ANONYMOUS.sub("", demangled).strip()).rstrip()
    if head.endswith(">"):  # drop the template arguments, matching brackets from the right
        depth = 0
        for i in range(len(head) - 1, -1, -1):
            depth += {">": 1, "<": -1}.get(head[i], 0)
            if depth == 0:
                head = head[:i].rstrip()
                break
    depth = 0
    cut = 0
    for i, ch in enumerate(head):  # last '::' or space outside brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0 and (ch == " " or (ch == ":" and head[i - 1: i + 1] == "::")):
            cut = i + 1
    return head[cut:] or demangled


_ANONYMOUS = re.compile(r"(?:\(anonymous namespace\)|<?(?:unnamed|anonymous)>)::")


def _int_or_none(value: float | None) -> int | None:
    return None if value is None or math.isnan(value) else int(round(value))


def _dims_product(metrics: Mapping[str, MetricValue], names: tuple[str, ...]) -> float | None:
    values = [metrics.get(n) for n in names]
    if any(v is None or isinstance(v[0], str) for v in values):
        return None
    return math.prod(float(v[0]) for v in values)  # type: ignore[index]


def stalls_from_metrics(metrics: Mapping[str, MetricValue]) -> dict[str, float]:
    """Every ``smsp__average_warps_issue_stalled_*_per_issue_active.ratio`` -> reason: cycles,
    in ncu's order (known reasons first, any newer ones after, alphabetically).

    A profile that recorded only the older form, ``smsp__warp_issue_stalled_*_per_warp_active.pct``
    (% of the warps' active cycles), gets ``cycles = pct / 100 x CPI`` when it holds the CPI
    (CPI is the warps' active cycles per issued instruction, so the two forms agree)."""
    found = {}
    for name, (value, _unit) in metrics.items():
        reason = M.stall_reason(name)
        if reason is not None and not isinstance(value, str):
            found[reason] = float(value)
    cpi = metrics.get(M.CPI)
    if not found and cpi is not None and not isinstance(cpi[0], str):
        for name, (value, _unit) in metrics.items():
            reason = M.stall_pct_reason(name)
            if reason is not None and not isinstance(value, str):
                found[reason] = float(value) / 100.0 * float(cpi[0])
    order = {r: i for i, r in enumerate(M.STALL_REASONS)}
    return dict(sorted(found.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def build_profile(index: int, demangled_name: str, metrics: dict[str, MetricValue], *,
                  name: str | None = None, rules: tuple[RuleMessage, ...] = (),
                  source: str = "") -> KernelProfile:
    """Assemble a :class:`KernelProfile` from a metric dict (both readers end here)."""
    def number(metric: str) -> float | None:
        entry = metrics.get(metric)
        return None if entry is None or isinstance(entry[0], str) else float(entry[0])

    block = number(M.BLOCK_SIZE)
    if block is None:
        block = _dims_product(metrics, M.BLOCK_DIMS)
    grid = number(M.GRID_SIZE)
    if grid is None:
        grid = _dims_product(metrics, M.GRID_DIMS)
    return KernelProfile(
        index=index,
        name=name or short_kernel_name(demangled_name),
        demangled_name=demangled_name,
        block_size=_int_or_none(block),
        grid_size=_int_or_none(grid),
        registers_per_thread=_int_or_none(number(M.REGISTERS_PER_THREAD)),
        cpi=number(M.CPI),
        stalls=stalls_from_metrics(metrics),
        achieved_occupancy_pct=number(M.ACHIEVED_OCCUPANCY_PCT),
        theoretical_occupancy_pct=number(M.THEORETICAL_OCCUPANCY_PCT),
        duration_ns=number(M.DURATION_NS),
        metrics=metrics,
        rules=rules,
        source=source,
    )
