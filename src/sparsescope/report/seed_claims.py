"""Seed 000's claims held against this run: each claim a small pure function of the run's
evidence returning a :class:`ClaimVerdict` (``supported``, ``refuted`` or ``untestable here``)
with the numbers behind it. :data:`CLAIMS` lists the checkers in the report's order.

The evidence (:class:`ClaimInputs`) is read once from the run: each timed case's % of peak by
its own bytes (``CaseResult.model``, computed as the run stage would for an older file) and
whether its bytes can come from the L2 (working set within the L2, not flushed: such a case
says nothing about DRAM), and the staged/unstaged DAE pairs
(:func:`sparsescope.report.dae_validated.dae_pairs`).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from sparsescope.model.concurrency import DEP_CHAIN_LENGTH
from sparsescope.model.littles_law import ceiling_pct, warps_per_sm_required
from sparsescope.ops.registry import get_op
from sparsescope.report.ceiling_causes import above_ceiling
from sparsescope.report.context import ok_cases
from sparsescope.report.dae_validated import DaePair, dae_pairs, measured_gain_text
from sparsescope.report.labels import params_text
from sparsescope.report.table_types import Column, Table, span
from sparsescope.results.case_models import bandwidths, model_of, model_traffic
from sparsescope.results.records import CaseResult, RunSet

SUPPORTED, REFUTED, UNTESTABLE = "supported", "refuted", "untestable here"
SEED_DAE_GAIN = (1.3, 1.6)
"""Seed 000's DAE speedup range (sections 7.7, 12)."""
SEED_INT32_SAVING_PCT = (25.0, 35.0)
"""The byte saving that supports "INT32 saves about 30 % of bytes"."""
SEED_OCCUPANCY_PCT = (40.0, 52.0)
"""Achieved occupancy that supports "50 % occupancy" (seed: 44-48 % of a 50 % theoretical)."""
HALF_LINE_BYTES = 64
"""Bytes in flight per warp the seed's halved chain leaves: half of one 128-byte line."""


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim of seed 000 against this run."""

    claim: str
    verdict: str
    """``supported``, ``refuted`` or ``untestable here``."""
    evidence: str
    """The numbers behind the verdict."""


@dataclass(frozen=True)
class TimedCase:
    """A timed case with its % of peak by its own bytes."""

    case: CaseResult
    pct_peak: float
    from_dram: bool
    """False when the working set fits in the L2 and was not flushed (served from the L2)."""

    @property
    def label(self) -> str:
        params = params_text(self.case.params)
        return f"{self.case.matrix} [{self.case.backend}{', ' + params if params else ''}]"


@dataclass(frozen=True)
class ClaimInputs:
    """The run's evidence the checkers read."""

    runset: RunSet
    timed: tuple[TimedCase, ...]
    pairs: tuple[DaePair, ...]


def claim_inputs(runset: RunSet) -> ClaimInputs:
    """The evidence of ``runset`` (one op's cases)."""
    matrices = {m.name: m for m in runset.matrices}
    basis, copy = bandwidths(runset)
    timed = []
    for case in ok_cases(runset):
        matrix = matrices.get(case.matrix)
        model = model_of(case, matrix, basis, copy) if matrix is not None else case.model
        if model is None:
            continue
        l2_resident = model.peak.bytes <= runset.device.l2_bytes and not case.measurement.flushed
        timed.append(TimedCase(case, model.peak.pct_peak, not l2_resident))
    return ClaimInputs(runset, tuple(timed), tuple(dae_pairs(runset)))


def _latency(runset: RunSet) -> tuple[float, str]:
    measured = runset.ceilings.dram_latency_ns
    if measured is not None and measured > 0:
        return measured, "measured"
    return runset.device.dram_latency_ns, "datasheet estimate"


def _warp_basis(inp: ClaimInputs) -> tuple[float, str]:
    """(required warps/SM, sentence) of the run's GPU, one 128-byte line per warp."""
    dev = inp.runset.device
    latency, source = _latency(inp.runset)
    required = warps_per_sm_required(dev.peak_bw_gb_s, latency, dev.sm_count)
    return required, (f"{dev.name}: {required:.1f} warps/SM required at {latency:,.0f} ns "
                      f"({source}) and {dev.peak_bw_gb_s:,.0f} GB/s, {dev.max_warps_per_sm} "
                      f"resident")


def _gpu_dram_cases(inp: ClaimInputs, claim: str) -> list[TimedCase] | ClaimVerdict:
    """The timed cases that test a DRAM claim, or the untestable verdict saying why not."""
    if inp.runset.device.kind != "gpu":
        return ClaimVerdict(claim, UNTESTABLE, f"the cases ran on a CPU "
                            f"({inp.runset.device.vendor_name or inp.runset.device.name}); "
                            "warps per SM describe a GPU")
    if not inp.timed:
        return ClaimVerdict(claim, UNTESTABLE, "no case was timed on the GPU")
    dram = [t for t in inp.timed if t.from_dram]
    if not dram:
        return ClaimVerdict(claim, UNTESTABLE, "every timed case's working set fits in the L2 "
                            "and was not flushed: none tests DRAM")
    return dram


def littles_law_claim(inp: ClaimInputs) -> ClaimVerdict:
    claim = ("Little's law needs about 85 warps/SM but the H200 has 64; this is the root "
             "cause")
    dram = _gpu_dram_cases(inp, claim)
    if isinstance(dram, ClaimVerdict):
        return dram
    dev = inp.runset.device
    required, basis = _warp_basis(inp)
    ceiling = ceiling_pct(dev.max_warps_per_sm, required)
    best = max(dram, key=lambda t: t.pct_peak)
    basis += f": the 1-line-per-warp ceiling is {ceiling:.1f} % of peak"
    if required <= dev.max_warps_per_sm:
        return ClaimVerdict(claim, REFUTED, f"{basis}; no warp deficit on this GPU")
    if best.pct_peak > ceiling:
        latency, source = _latency(inp.runset)
        cause = above_ceiling(best.pct_peak, ceiling, "Little's-law", latency_ns=latency,
                              latency_measured=source == "measured")
        return ClaimVerdict(claim, REFUTED, f"{basis}; {best.label} reaches "
                            f"{best.pct_peak:.1f} % by its own bytes: {cause}")
    return ClaimVerdict(claim, SUPPORTED, f"{basis}; the fastest case, {best.label}, reaches "
                        f"{best.pct_peak:.1f} %, at or below it")


def _chain_inputs(inp: ClaimInputs) -> list[tuple[TimedCase, float, float]]:
    """(case, rounds per iteration, bytes in flight per warp) from the predictions."""
    out = []
    for t in inp.timed:
        p = t.case.prediction
        inputs = p.inputs if p is not None else {}
        rounds, flight = inputs.get("rounds_per_iteration"), inputs.get("bytes_in_flight_per_warp")
        if rounds is not None and flight is not None:
            out.append((t, float(rounds), float(flight)))
    return out


def dependent_chain_claim(inp: ClaimInputs) -> ClaimVerdict:
    claim = "The dependent load chain (col[j] -> x[col]) halves the memory-level parallelism"
    dram = _gpu_dram_cases(inp, claim)
    if isinstance(dram, ClaimVerdict):
        return dram
    dev = inp.runset.device
    required, basis = _warp_basis(inp)
    halved = ceiling_pct(dev.max_warps_per_sm / DEP_CHAIN_LENGTH, required)
    best = max(dram, key=lambda t: t.pct_peak)
    basis += f": the halved (dependent-chain) ceiling is {halved:.1f} % of peak"
    wide = [(t, r, b) for t, r, b in _chain_inputs(inp) if r >= 2 and b > HALF_LINE_BYTES]
    note = ""
    if wide:
        t, r, b = max(wide, key=lambda x: x[2])
        note = (f"; {len(wide)} case(s) run a chain of {r:.0f} rounds with more than "
                f"{HALF_LINE_BYTES} B in flight per warp (most: {t.label}, {b:,.0f} B): there "
                "the chain halves only one line's worth")
    if best.pct_peak > halved:
        latency, source = _latency(inp.runset)
        cause = above_ceiling(best.pct_peak, halved, "dependent-chain", lines_per_warp=0.5,
                              latency_ns=latency, latency_measured=source == "measured")
        return ClaimVerdict(claim, REFUTED, f"{basis}; {best.label} reaches "
                            f"{best.pct_peak:.1f} % by its own bytes: {cause}{note}")
    return ClaimVerdict(claim, SUPPORTED, f"{basis}; the fastest case, {best.label}, reaches "
                        f"{best.pct_peak:.1f} %, at or below it{note}")


def dae_gain_claim(inp: ClaimInputs) -> ClaimVerdict:
    claim = "Decoupled access-execute would give 1.3-1.6x"
    if not inp.pairs:
        return ClaimVerdict(claim, UNTESTABLE, "no staged case has an unstaged sibling of the "
                            "same kernel shape on the same matrix")
    gains = [p.measured_gain for p in inp.pairs]
    median = statistics.median(gains)
    lo, hi = SEED_DAE_GAIN
    verdict = SUPPORTED if lo <= median <= hi else REFUTED
    return ClaimVerdict(claim, verdict, f"median measured gain of staging over "
                        f"{len(gains)} pair(s): {measured_gain_text(median)}; best "
                        f"{measured_gain_text(max(gains))}, worst "
                        f"{measured_gain_text(min(gains))}")


def _family(backend: str) -> str:
    """The backend without its index-width marker (``torch-cusparse-i64`` -> ``torch-cusparse``)."""
    return re.sub(r"-i(32|64)(?=$|[-\[])", "", backend)


def _bytes(case: CaseResult, inp: ClaimInputs) -> int | None:
    if case.traffic is not None and case.traffic.total_bytes > 0:
        return case.traffic.total_bytes
    matrix = next((m for m in inp.runset.matrices if m.name == case.matrix), None)
    if matrix is None:
        return None
    return get_op(case.op).model_bytes(model_traffic(case, matrix)).total_bytes


def index_width_pairs(inp: ClaimInputs) -> list[tuple[CaseResult, CaseResult]]:
    """(INT32, INT64) cases of one matrix, parameters, value width and backend family."""
    groups: dict[tuple, dict[int, CaseResult]] = {}
    for t in inp.timed:
        c = t.case
        key = (c.op, c.matrix, c.params, c.value_bytes, c.y_read, _family(c.backend))
        groups.setdefault(key, {}).setdefault(c.index_bytes, c)
    return [(g[4], g[8]) for g in groups.values() if 4 in g and 8 in g]


def int32_claim(inp: ClaimInputs) -> ClaimVerdict:
    claim = "INT32 indices save about 30 % of the bytes"
    savings = []
    for narrow, wide in index_width_pairs(inp):
        b32, b64 = _bytes(narrow, inp), _bytes(wide, inp)
        if b32 and b64:
            savings.append((narrow, 100 * (1 - b32 / b64),
                            100 * (1 - narrow.time_ms / wide.time_ms)))
    if not savings:
        return ClaimVerdict(claim, UNTESTABLE, "no backend timed one matrix at both INT32 and "
                            "INT64 indices")
    byte_median = statistics.median(s for _, s, _ in savings)
    time_median = statistics.median(t for _, _, t in savings)
    lo, hi = SEED_INT32_SAVING_PCT
    c, b, t = savings[0]
    example = (f"e.g. {c.matrix} [{_family(c.backend)}]: {b:.1f} % fewer bytes, "
               f"{abs(t):.1f} % {'less' if t >= 0 else 'more'} time")
    return ClaimVerdict(claim, SUPPORTED if lo <= byte_median <= hi else REFUTED,
                        f"{len(savings)} INT32/INT64 pair(s): median byte saving "
                        f"{byte_median:.1f} % (range {span([s for _, s, _ in savings])} %), "
                        f"median time saving {time_median:.1f} %; {example}")


def cusparse_occupancy_claim(inp: ClaimInputs) -> ClaimVerdict:
    claim = "cuSPARSE's SpMV runs 32-thread blocks at 50 % occupancy"
    read = []
    for t in inp.timed:
        occ = getattr(t.case.counters, "achieved_occupancy_pct", None)
        if "cusparse" in t.case.backend and occ is not None:
            block = next((getattr(t.case.counters, k) for k in ("block_size", "block_threads")
                          if getattr(t.case.counters, k, None) is not None), None)
            read.append((t, float(occ), block))
    if not read:
        return ClaimVerdict(claim, UNTESTABLE, "no cuSPARSE case carries profiler counters "
                            "(achieved occupancy, block size)")
    lo, hi = SEED_OCCUPANCY_PCT
    occs = [o for _, o, _ in read]
    blocks = sorted({int(b) for _, _, b in read if b is not None})
    ok = all(lo <= o <= hi for o in occs) and all(b == 32 for b in blocks)
    size = (f"block size {', '.join(map(str, blocks))} threads" if blocks
            else "block size not recorded")
    return ClaimVerdict(claim, SUPPORTED if ok else REFUTED,
                        f"{len(read)} profiled cuSPARSE case(s): achieved occupancy "
                        f"{span(occs, '.0f')} %, {size}")


#: The claims of seed 000's report (sections 5-7, 9.3 and 12), in the report's order.
CLAIMS: tuple[Callable[[ClaimInputs], ClaimVerdict], ...] = (
    littles_law_claim, dependent_chain_claim, dae_gain_claim, int32_claim,
    cusparse_occupancy_claim)


def check_claims(runset: RunSet) -> list[ClaimVerdict]:
    inp = claim_inputs(runset)
    return [check(inp) for check in CLAIMS]


def seed_claims_table(runset: RunSet) -> Table:
    rows = tuple(check_claims(runset))
    counts = {v: sum(r.verdict == v for r in rows) for v in (SUPPORTED, REFUTED, UNTESTABLE)}
    reading = (f"Of seed 000's {len(rows)} claims this run supports {counts[SUPPORTED]}, "
               f"refutes {counts[REFUTED]} and cannot test {counts[UNTESTABLE]}.")
    return Table("seed_claims", "Seed 000's claims against this run",
                 (Column("claim", "Claim"), Column("verdict", "Verdict"),
                  Column("evidence", "Evidence")), rows, reading,
                 basis="% of peak by each case's own bytes; cases whose working set fits in "
                       "the L2 unflushed are left out of the DRAM claims.")
