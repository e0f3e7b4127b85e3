"""How every SASS register value varies across the threads of a warp.

An abstract interpretation over the def-use chains of :mod:`sparsescope.sass.dataflow`. Each
register definition gets one value of the lattice below, the value a register holds being a
function of the lane's thread index ``t`` (``threadIdx.x``, or ``%laneid``):

==============  ===========================================================================
``lin(c)``      ``c * t + u`` with ``u`` the same in every lane; ``c = 0`` is warp-uniform
``sym``         ``t * s + u`` with ``s`` a run-time uniform (a stride read from a parameter)
``var``         varies with ``t`` in no affine way (``t & 1``, ``t >> 3``, a product of two)
``data``        depends on a value loaded per thread from memory (a gather, a search)
``range``       (predicates only) ``lin(c != 0)`` compared with a uniform: true for one
                contiguous run of lanes, e.g. the ``i < n`` guard
==============  ===========================================================================

Transfer functions (integer address arithmetic, the instructions nvcc uses to form addresses):
``IMAD d, a, b, c``: ``d = a*b + c``; ``LEA d, a, b, k``: ``d = (a << k) + b``; ``IADD3``: sum
(negated operands subtract); ``SHF.L`` / ``SHL`` by an immediate: times ``2^k``; ``MOV``/``SEL``:
the meet of the sources; ``S2R SR_TID.X`` and ``SR_LANEID``: ``lin(1)``; ``SR_CTAID.*``, constants
(``c[..][..]``, ``LDC``), uniform registers (``UR*``) and immediates: ``lin(0)``. A load gives
``lin(0)`` when its address is uniform (every lane reads the same word) and ``data`` otherwise.
Any other operation is ``lin(0)`` when all sources are uniform, ``data`` when one depends on
data, ``var`` otherwise. A write guarded by a non-uniform predicate (``@P0 MOV``), and a ``SEL``
on one, takes at least that predicate's kind: which lanes write depends on it.

The meet of two different values at a join is ``data`` when either is, else ``var``; a loop's
induction variable ``i = t; i += u`` stays ``lin(1)`` (the iteration starts from "not yet
computed" and converges in a few passes).

An address ``lin(c)`` in bytes is what a warp's coalescing depends on: ``|c|`` = the access width
is coalesced, larger is strided (a lane every ``c`` bytes), 0 is one address for the warp.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sparsescope.sass.dataflow import DefUse

UNIFORM = ("lin", 0)
VAR = ("var", 0)
DATA = ("data", 0)
SYM = ("sym", 0)
RANGE = ("range", 0)
HI = ("hi", 0)
"""The high word of a 64-bit ``lin`` value (carry or sign): compared like one, never an address."""

#: Special registers whose value is the lane's position (coefficient 1).
_THREAD_LINEAR = ("SR_TID.X", "SR_LANEID")
#: Special registers that vary across lanes in no affine way.
_THREAD_VARYING = ("SR_TID.Y", "SR_TID.Z", "SR_LANEMASK", "SR_CLOCK", "SR_GLOBALTIMER")
_IMM = re.compile(r"^-?(0x[0-9a-fA-F]+|\d+)$")
_REG = re.compile(r"^[-|~!]*(R\d+|RZ|UR\d+|URZ|P\d|PT|UP\d|UPT)(\.64|\.H[01]|\.B\d|\.reuse)*\|?$")
_ORDER = {"lin": 0, "range": 1, "hi": 1, "sym": 2, "var": 3, "data": 4}


def meet(a, b):
    """Join of two values at a control-flow merge (None = not computed yet)."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if DATA in (a, b):
        return DATA
    return VAR


def _worst(*vals):
    """The most varying of ``vals`` for operations that are not affine."""
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    kinds = {v[0] for v in vals}
    if "data" in kinds:
        return DATA
    if all(v == UNIFORM for v in vals):
        return UNIFORM
    return VAR


def _add(a, b, sign: int = 1):
    if a is None or b is None:
        return None
    if DATA in (a, b) or a[0] == "data" or b[0] == "data":
        return DATA
    if a[0] == "lin" and b[0] == "lin":
        return ("lin", a[1] + sign * b[1])
    if "var" in (a[0], b[0]) or "range" in (a[0], b[0]):
        return VAR
    return SYM


def _scale(a, k: int | None):
    """``a * k`` for a uniform ``k`` (None: uniform of unknown value)."""
    if a is None:
        return None
    if a[0] == "lin":
        if a[1] == 0:
            return UNIFORM
        return ("lin", a[1] * k) if k is not None else SYM
    if k == 0:
        return UNIFORM
    return a


def _mul(a, av: int | None, b, bv: int | None):
    if a is None or b is None:
        return None
    if b == UNIFORM:
        return _scale(a, bv)
    if a == UNIFORM:
        return _scale(b, av)
    return _worst(a, b) if DATA not in (a, b) else DATA


@dataclass(frozen=True)
class _Operand:
    text: str
    reg: str | None
    """Register name (``R4``), None for immediates and constants."""
    negated: bool
    imm: int | None
    """Integer value of an immediate (RZ is 0)."""


def _operand(text: str) -> _Operand:
    t = text.strip()
    if t in ("RZ", "URZ"):
        return _Operand(t, None, False, 0)
    m = _IMM.match(t)
    if m:
        return _Operand(t, None, False, int(t, 16) if "0x" in t else int(t))
    rm = _REG.match(t)
    if rm:
        return _Operand(t, rm.group(1), t.startswith("-"), None)
    return _Operand(t, None, False, None)


class ThreadFlow:
    """Lattice values of every register definition of one kernel (see the module docstring)."""

    def __init__(self, instructions, du: DefUse, *, max_passes: int = 60) -> None:
        self.instructions = instructions
        self.du = du
        self.values: list[dict[str, tuple]] = [{} for _ in instructions]
        self.passes = 0
        for _ in range(max_passes):
            self.passes += 1
            changed = False
            for i, ins in enumerate(instructions):
                new = self._transfer(i, ins)
                if new != self.values[i]:
                    self.values[i] = new
                    changed = True
            if not changed:
                break

    # -- reading values

    def reg_value(self, i: int, reg: str):
        """Value of ``reg`` as instruction ``i`` reads it (meet over its reaching definitions)."""
        if reg.startswith(("UR", "UP")) or reg in ("PT", "UPT"):
            return UNIFORM
        defs = self.du.defs(i, reg)
        if not defs:
            return UNIFORM  # never written in the kernel: nothing per-thread in it
        out = None
        for d in defs:
            out = meet(out, self.values[d].get(reg))
        return out

    def _val(self, i: int, op: _Operand):
        if op.reg is None:
            return UNIFORM
        v = self.reg_value(i, op.reg)
        if v is not None and op.negated and v[0] == "lin":
            return ("lin", -v[1])
        return v

    def final(self, i: int, reg: str):
        """Value as read by instruction ``i``, ``var`` where the fixed point left it open."""
        return self.reg_value(i, reg) or VAR

    def address_value(self, i: int):
        """Value of the address of memory instruction ``i`` (its first address register)."""
        ins = self.instructions[i]
        regs = [r for r in ins.address_regs if r.startswith("R")]
        if not regs:
            return UNIFORM
        return self.final(i, regs[0])

    def guard_value(self, i: int):
        """Value of the predicate guarding instruction ``i`` (or of a branch's predicate
        operand); ``lin(0)`` for an unguarded one."""
        ins = self.instructions[i]
        pred = ins.predicate.lstrip("!") if ins.predicate else ""
        if not pred:
            for op in ins.operands:
                name = op.lstrip("!")
                if re.fullmatch(r"U?P[0-6]", name):
                    pred = name
                    break
        if not pred or pred in ("PT", "UPT") or pred.startswith("UP"):
            return UNIFORM
        return self.final(i, pred)

    # -- transfer functions

    @staticmethod
    def _sources(ins) -> list[_Operand]:
        """Operands after the destinations: the written first operand, the carry or predicate
        outputs right after it (``IADD3 R4, P0, ...``, ``ISETP P0, PT, ...``) and, after a
        predicate destination, a written register (``LOP3.LUT P1, R10, ...``)."""
        ops = [_operand(o) for o in ins.operands]
        written = set(ins.regs_written) | {"PT"}

        def is_dest(k: int) -> bool:
            return ops[k].reg in written and not ins.operands[k].lstrip().startswith(("!", "-"))

        if not ins.regs_written or not ops or not is_dest(0):
            return ops
        k = 1
        first_is_pred = (ops[0].reg or "").startswith("P")
        while k < len(ops) and is_dest(k) and (
                (ops[k].reg or "").startswith("P") or (first_is_pred and k == 1)):
            k += 1
        return ops[k:]

    def _transfer(self, i: int, ins) -> dict[str, tuple]:
        if not ins.regs_written:
            return {}
        value = self._compute(i, ins)
        guard = self._guard_kind(i) if ins.is_conditional else UNIFORM
        if value is not None and guard is not None and guard != UNIFORM:
            # lanes that skip the write keep the older value: the result varies as the guard does
            value = DATA if DATA in (value, guard) else (value if value == DATA else
                                                         _worst(value, VAR))
        return {r: value for r in ins.regs_written}

    def _guard_kind(self, i: int):
        g = self.guard_value(i)
        if g is None:
            return None
        return UNIFORM if g == UNIFORM else (DATA if g == DATA else VAR)

    def _compute(self, i: int, ins):  # noqa: C901 - one case per opcode family
        op, mods = ins.opcode, ins.modifiers
        src = self._sources(ins)
        vals = [self._val(i, s) for s in src]
        if op.startswith("U") and all(r.startswith(("UR", "UP")) for r in ins.regs_written):
            return UNIFORM
        if op in ("S2R", "CS2R", "S2UR"):
            text = " ".join(ins.operands[1:])
            if op == "S2UR" or "SRZ" in text:
                return UNIFORM
            if any(s in text for s in _THREAD_LINEAR):
                return ("lin", 1)
            if any(s in text for s in _THREAD_VARYING):
                return VAR
            return UNIFORM
        if op in ("LDC", "ULDC", "MOV32I", "UMOV", "VOTEU", "R2UR"):
            return UNIFORM
        if op == "VOTE":
            return UNIFORM
        if ins.mem_op in ("load", "atomic") and ins.mem_space == "local":
            return VAR  # a reloaded spill: whatever the thread stored
        if ins.mem_op in ("load", "atomic") and ins.mem_space != "constant":
            addr = self.address_value(i)
            if addr is None:
                return None
            return UNIFORM if addr == UNIFORM and ins.mem_op == "load" else DATA
        if op.endswith("SETP") or op in ("PLOP3", "UPLOP3"):
            return self._predicate(i, ins, src, vals)
        if op in ("SHF", "SHR") and "R" in mods and len(src) >= 2:
            # tid >> k with k >= 5 is the warp's index: the same in every lane of a warp
            shift = src[1].imm if op == "SHF" else (src[1].imm if len(src) > 1 else None)
            value = vals[2] if op == "SHF" and len(src) > 2 else vals[0]
            if "HI" not in mods or src[0].imm == 0:
                if shift is not None and shift >= 5 and value == ("lin", 1):
                    return UNIFORM
        if op == "LOP3" and len(src) >= 4 and src[3].imm == 0xC0 and src[2].imm == 0:
            # tid & mask with mask = 2^k - 1, k >= 5: the lane index (warps are 32-aligned)
            mask = src[1].imm
            if vals[0] == ("lin", 1) and mask is not None and mask >= 31 and \
                    (mask + 1) & mask == 0:
                return ("lin", 1)
        if any("HI" == m or m == "X" for m in mods) and op in ("IMAD", "LEA", "IADD3", "SHF",
                                                             "IMUL", "IADD"):
            # the high word of a 64-bit sum or product (or a sign extension): never read as an
            # address on its own; compared with a uniform it still splits the lanes in one run
            if all(v is not None and (v[0] == "lin" or v == HI) for v in vals):
                return UNIFORM if all(v == UNIFORM for v in vals) else HI
            return _worst(*vals)
        if op in ("MOV", "IMOV"):
            return vals[0] if vals else UNIFORM
        if op in ("SEL", "FSEL"):
            out = meet(vals[0], vals[1]) if len(vals) >= 2 else _worst(*vals)
            pred = next((s for s in src if s.reg and s.reg.startswith("P")), None)
            if pred is not None:
                pv = self.reg_value(i, pred.reg)
                if pv is None:
                    return None
                if pv != UNIFORM and vals[0] != vals[1]:
                    return DATA if DATA in (pv, out) else _worst(out, VAR)
            return out
        if op in ("IMAD", "UIMAD", "IMUL", "XMAD", "IMAD32I", "IMUL32I"):
            if len(src) < 2:
                return _worst(*vals)
            prod = _mul(vals[0], src[0].imm, vals[1], src[1].imm)
            if op.startswith("IMUL") or len(src) < 3:
                return prod
            return _add(prod, vals[2])  # a negated addend was negated by _val
        if op == "LEA":
            if len(src) < 3 or src[2].imm is None:
                return _worst(*vals)
            return _add(_scale(vals[0], 1 << src[2].imm), vals[1])
        if op in ("IADD3", "IADD", "IADD32I", "VIADD"):
            out = UNIFORM
            for v in vals:
                out = _add(out, v)
            return out
        if op in ("SHF", "SHL") and ("L" in mods or op == "SHL"):
            shift = src[1].imm if len(src) > 1 else None
            if shift is None or (len(src) > 2 and vals[2] not in (UNIFORM, None)):
                return _worst(*vals)
            return _scale(vals[0], 1 << shift)
        return _worst(*vals)

    def _predicate(self, i: int, ins, src, vals):
        preds = [s for s in src if s.reg and s.reg.startswith("P")]
        nums = [(s, v) for s, v in zip(src, vals, strict=True)
                if not (s.reg and s.reg.startswith("P"))]
        combined = []
        for p in preds:
            pv = self.reg_value(i, p.reg)
            if pv is None:
                return None
            combined.append(pv)
        numeric = [v for _s, v in nums]
        if any(v is None for v in numeric):
            return None
        kinds = [v for v in numeric if v != UNIFORM]
        if not kinds:
            cmp = UNIFORM
        elif DATA in kinds:
            cmp = DATA
        elif (ins.opcode == "ISETP" and len(kinds) == 1 and kinds[0][0] in ("lin", "hi")) \
                or all(k == RANGE for k in kinds):
            cmp = RANGE
        else:
            cmp = VAR
        out = cmp
        for c in combined:
            if _ORDER[c[0]] > _ORDER[out[0]]:
                out = c if c[0] in ("data", "var", "range") else out
        return RANGE if out == HI else out


def sectors_per_request(stride_bytes: int, width_bytes: int, lanes: int = 32,
                        sector_bytes: int = 32) -> int:
    """32-byte sectors one warp touches when lane ``k`` reads ``width`` bytes at
    ``k * stride`` from an aligned base: ``|{floor((k s + b) / 32) : k < 32, b in {0, w-1}}|``
    (every sector between the two ends of one lane's bytes counted)."""
    sectors: set[int] = set()
    for k in range(lanes):
        start = k * stride_bytes
        sectors.update(range(start // sector_bytes, (start + width_bytes - 1) // sector_bytes + 1))
    return len(sectors)


def ideal_sectors_per_request(width_bytes: int, lanes: int = 32, sector_bytes: int = 32) -> int:
    """Sectors of a fully coalesced warp access: ``ceil(lanes x width / 32)``."""
    return max(1, -(-lanes * width_bytes // sector_bytes))


def bank_conflict_ways(stride_bytes: int, width_bytes: int = 4, banks: int = 32) -> int:
    """n of an n-way shared-memory bank conflict for lane ``k`` at ``k * stride`` (4-byte words):
    ``gcd(stride / 4, 32)`` distinct words per bank; 1 (no conflict) for stride 0 (broadcast),
    for a stride that is not a whole number of words, and for accesses wider than 4 bytes
    (split into conflict-free phases for unit stride, not modelled otherwise)."""
    from math import gcd

    if stride_bytes == 0 or width_bytes != 4 or stride_bytes % 4:
        return 1
    return gcd(abs(stride_bytes) // 4, banks)
