"""Per-instruction warp-stall samples joined with the SASS analysis (seed 001 section 5.2).

The samples come from ncu's source page (``ncu --import R.ncu-rep --page source --print-source
sass --csv``), read by :mod:`sparsescope.sass.source_page` (the one reader of that page, every
known ncu spelling of its columns); :func:`read_source_sass_csv` gives its blocks in this
module's form, stall reasons keyed by the page's short names (``long_sb``, :data:`STALL_NAMES`).

The join matches rows to instructions by offset from the first row's address, checks the
opcodes agree (a profile of another build is refused), and labels each instruction's part in the
dependent-load chains: ``chain producer`` (``LDG col[j]``), ``chain address`` (the ``LEA``/
``IMAD.WIDE`` between), ``chain consumer`` (``LDG x[col]``), ``uses chain load`` (an instruction
that reads the consumer load's result: the ``FFMA`` that waits on ``x[col]`` is where ncu puts
the Long Scoreboard samples).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sparsescope.errors import UsageError
from sparsescope.sass.instructions import Instruction
from sparsescope.sass.source_page import SHORT_NAMES, read_source_page

#: ncu column suffix -> stall reason as ncu's UI names it
STALL_NAMES = {
    "long_sb": "Long Scoreboard", "short_sb": "Short Scoreboard", "wait": "Wait",
    "not_selected": "Not Selected", "selected": "Selected", "math": "Math Pipe Throttle",
    "lg": "LG Throttle", "mio": "MIO Throttle", "branch_resolving": "Branch Resolving",
    "no_inst": "No Instruction", "barrier": "Barrier", "membar": "Membar",
    "dispatch": "Dispatch Stall", "drain": "Drain", "imc": "IMC Miss", "misc": "Misc",
    "sleep": "Sleeping", "tex": "Tex Throttle",
}
#: ncu reason (``long_scoreboard``, the source page reader's key) -> short name (``long_sb``)
_SHORT = SHORT_NAMES


@dataclass(frozen=True)
class SourceSassRow:
    """One instruction row of the ncu source/SASS CSV."""

    address: int
    """Absolute address as ncu printed it."""
    text: str
    samples: int
    """Warp stall samples, all (issued and not issued)."""
    samples_not_issued: int
    executed: int
    """Warp-level instructions executed."""
    stalls: Mapping[str, int]
    """Stall reason (key of :data:`STALL_NAMES`) -> samples (all-samples columns)."""


@dataclass(frozen=True)
class SourceSassKernel:
    name: str
    rows: tuple[SourceSassRow, ...]


def read_source_sass_csv(path: str | Path) -> list[SourceSassKernel]:
    """Every kernel block of an ncu ``--page source --print-source sass`` CSV, in file order.

    Raises :class:`~sparsescope.errors.UsageError` naming the file (and the line and the
    columns found, for a header with none of the known columns)."""
    return [SourceSassKernel(block.kernel, tuple(
        SourceSassRow(r.address, r.sass, r.samples, r.samples_not_issued,
                      r.instructions_executed,
                      {_SHORT.get(reason, reason): n for reason, n in r.stalls.items()})
        for r in block.rows)) for block in read_source_page(path)]


@dataclass(frozen=True)
class StallRow:
    """One instruction with its stall samples and its part in the load chains."""

    address: int
    """Offset in the kernel (same as the SASS listing)."""
    text: str
    klass: str
    samples: int
    samples_not_issued: int
    dominant_reason: str
    """Stall reason with the most samples (``Selected`` only when nothing else has any)."""
    dominant_samples: int
    reasons: Mapping[str, int]
    role: str
    """``chain producer``, ``chain address``, ``chain consumer``, ``uses chain load`` or empty."""
    chain_load_address: int | None
    """For ``uses chain load``: the consumer load whose result this instruction reads."""

    @property
    def on_chain(self) -> bool:
        return bool(self.role)


@dataclass(frozen=True)
class StallMap:
    """Stall samples over a kernel's instructions."""

    kernel: str
    rows: tuple[StallRow, ...]
    total_samples: int
    reason_totals: Mapping[str, int]
    """Stall reason -> samples over the kernel."""
    chain_samples: int
    """Samples on instructions with a chain role."""
    hot_loop_header: int | None
    """Header address of the loop holding the most samples."""

    def top(self, n: int = 10, reason: str | None = None) -> tuple[StallRow, ...]:
        """The ``n`` rows with the most samples (of ``reason`` when given)."""
        key = (lambda r: r.reasons.get(reason, 0)) if reason else (lambda r: r.samples)
        return tuple(sorted(self.rows, key=key, reverse=True)[:n])

    def by_class(self) -> dict[str, dict[str, object]]:
        """Class -> samples, dominant reason and share of the kernel's samples."""
        acc: dict[str, dict[str, int]] = {}
        for r in self.rows:
            slot = acc.setdefault(r.klass, {})
            for k, v in r.reasons.items():
                slot[k] = slot.get(k, 0) + v
        out = {}
        for klass, reasons in acc.items():
            total = sum(reasons.values())
            if total == 0:
                continue
            dom = _dominant(reasons)
            out[klass] = {"samples": total, "dominant_reason": STALL_NAMES.get(dom, dom),
                          "pct_of_samples": 100.0 * total / self.total_samples
                          if self.total_samples else 0.0}
        return dict(sorted(out.items(), key=lambda kv: -kv[1]["samples"]))


def _dominant(reasons: Mapping[str, int]) -> str:
    ranked = sorted(reasons.items(), key=lambda kv: kv[1], reverse=True)
    for k, v in ranked:
        if k != "selected" and v > 0:
            return k
    return ranked[0][0] if ranked and ranked[0][1] > 0 else ""


def join_stalls(kernel: SourceSassKernel, instructions: tuple[Instruction, ...],
                roles: Mapping[int, tuple[str, int | None]],
                loop_headers_of: Mapping[int, int] | None = None,
                max_mismatch_frac: float = 0.05) -> StallMap:
    """Join stall rows to ``instructions`` by offset.

    ``roles``: instruction index -> (role, chain load address); ``loop_headers_of``:
    instruction index -> header address of its innermost loop. Raises
    :class:`~sparsescope.errors.UsageError` when more than ``max_mismatch_frac`` of the rows name
    another opcode than the listing at that offset (a profile of a different build).
    """
    if not kernel.rows:
        raise UsageError(f"stall data for {kernel.name} has no instruction rows")
    base = min(r.address for r in kernel.rows)
    index_of = {ins.address: i for i, ins in enumerate(instructions)}
    matched: list[tuple[int, SourceSassRow]] = []
    mismatched = 0
    for r in kernel.rows:
        i = index_of.get(r.address - base)
        op = r.text.split()[1] if r.text.startswith("@") and len(r.text.split()) > 1 else \
            (r.text.split() or [""])[0]
        if i is None or instructions[i].opcode != op.split(".")[0]:
            mismatched += 1
            continue
        matched.append((i, r))
    if mismatched > max_mismatch_frac * len(kernel.rows):
        raise UsageError(f"stall data for {kernel.name}: {mismatched} of {len(kernel.rows)} "
                         "rows do not match the listing (profile of another build?)")
    rows = []
    reason_totals: dict[str, int] = {}
    loop_samples: dict[int, int] = {}
    chain_samples = 0
    for i, r in matched:
        ins = instructions[i]
        for k, v in r.stalls.items():
            reason_totals[k] = reason_totals.get(k, 0) + v
        dom = _dominant(r.stalls)
        role, load_addr = roles.get(i, ("", None))
        if role:
            chain_samples += r.samples
        if loop_headers_of and i in loop_headers_of:
            h = loop_headers_of[i]
            loop_samples[h] = loop_samples.get(h, 0) + r.samples
        rows.append(StallRow(ins.address, ins.text, ins.klass, r.samples, r.samples_not_issued,
                             STALL_NAMES.get(dom, dom), r.stalls.get(dom, 0) if dom else 0,
                             dict(r.stalls), role, load_addr))
    hot = max(loop_samples, key=lambda h: loop_samples[h]) if loop_samples else None
    return StallMap(kernel.name, tuple(rows), sum(r.samples for _, r in matched),
                    {STALL_NAMES.get(k, k): v for k, v in sorted(reason_totals.items(),
                                                                   key=lambda kv: -kv[1])},
                    chain_samples, hot)
