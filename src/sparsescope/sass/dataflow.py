"""Def-use over registers and dependent global-load chains.

**Reaching definitions.** A definition is one (instruction, register) write. Over the CFG,
``in[b] = U out[p]`` for the predecessors ``p`` and ``out[b] = gen[b] | (in[b] & ~kill[b])``,
iterated to a fixed point in reverse post-order, with definitions as bits of a Python integer.
A guarded write (``@P0 IMAD ...``) may not happen, so it generates without killing: the analysis
over-approximates, never misses a definition.

**Load chains.** For every global load ``L`` (``LDG``, generic ``LD``, ``LDGSTS``) walk
backwards from the registers of its address through the reaching definitions. The walk goes
through address arithmetic (:data:`ADDRESS_OPCODES`: ``IMAD`` incl. ``.WIDE``/``.WIDE.U32``/
``.X``, ``LEA``/``LEA.HI.X``, ``IADD3``, ``SHF``, ``LOP3``, ``MOV``, ``SEL``, ...) and stops at
anything else. A global load met on the way is a *producer*: its result reaches the address of
``L``, so ``L`` cannot issue before the producer's data returns -- the chain
``LDG col[j] -> LEA -> LDG x[col]`` of seed 001 section 4.
The instructions between a producer and ``L`` (``via``) are the arithmetic nodes of the walk that
lead from ``L`` to a direct user of the producer's result. Constant-bank reads met on the walk
(``LDC.64 R4, c[0x0][0x230]``, ``IADD3 R12, P0, R4, c[0x0][0x228], RZ``) are the candidate base
pointers of ``L`` (kernel parameters live in bank 0 from the architecture's parameter base).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsescope.sass.cfg import ControlFlow
from sparsescope.sass.instructions import Instruction

#: Integer instructions through which an address is computed.
ADDRESS_OPCODES = frozenset({
    "IMAD", "UIMAD", "IMAD32I", "IMUL", "IMUL32I", "XMAD", "LEA", "ULEA", "IADD3", "UIADD3",
    "IADD", "UIADD", "IADD32I", "VIADD", "ISCADD", "ISCADD32I", "SHF", "USHF", "SHL", "SHR",
    "USHL", "USHR", "LOP3", "ULOP3", "LOP", "ULOP", "LOP32I", "MOV", "UMOV", "MOV32I", "SEL",
    "USEL", "PRMT", "UPRMT", "SGXT", "USGXT", "BMSK", "UBMSK", "R2UR", "IMNMX", "VIMNMX",
    "UIMNMX", "IABS", "I2I", "IADD64", "IMNMX64"})


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


@dataclass(frozen=True)
class DefUse:
    """For each instruction, which instructions may have defined each register it reads."""

    reaching: tuple[dict[str, tuple[int, ...]], ...]
    """Instruction index -> {register read -> indices of the instructions that may define it}."""

    def defs(self, index: int, reg: str) -> tuple[int, ...]:
        return self.reaching[index].get(reg, ())

    def users(self) -> dict[int, tuple[int, ...]]:
        """Defining instruction index -> indices of the instructions that read its result."""
        out: dict[int, list[int]] = {}
        for i, regs in enumerate(self.reaching):
            for defs in regs.values():
                for d in defs:
                    out.setdefault(d, []).append(i)
        return {d: tuple(dict.fromkeys(u)) for d, u in out.items()}


def _tracked(reg: str) -> bool:
    return reg[0] in "RU"


def reaching_definitions(instructions: tuple[Instruction, ...], cfg: ControlFlow) -> DefUse:
    """Def-use of every register read (see the module docstring for the equations)."""
    def_instr: list[int] = []
    def_reg: list[str] = []
    reg_mask: dict[str, int] = {}
    ins_defs: list[list[tuple[int, str]]] = []
    for i, ins in enumerate(instructions):
        mine = []
        for reg in ins.regs_written:
            d = len(def_instr)
            def_instr.append(i)
            def_reg.append(reg)
            reg_mask[reg] = reg_mask.get(reg, 0) | (1 << d)
            mine.append((d, reg))
        ins_defs.append(mine)

    def transfer(cur: int, i: int) -> int:
        guarded = instructions[i].is_conditional
        for d, reg in ins_defs[i]:
            if not guarded:
                cur &= ~reg_mask[reg]
            cur |= 1 << d
        return cur

    blocks = cfg.blocks
    order = [b.index for b in blocks if b.reachable]
    preds: dict[int, list[int]] = {b.index: [] for b in blocks}
    for b in blocks:
        if b.reachable:
            for s in b.successors:
                preds[s].append(b.index)
    out = dict.fromkeys(range(len(blocks)), 0)
    changed = True
    while changed:
        changed = False
        for b in order:
            cur = 0
            for p in preds[b]:
                cur |= out[p]
            for i in range(blocks[b].first, blocks[b].last + 1):
                cur = transfer(cur, i)
            if cur != out[b]:
                out[b] = cur
                changed = True

    reaching: list[dict[str, tuple[int, ...]]] = [{} for _ in instructions]
    for blk in blocks:
        cur = 0
        for p in preds[blk.index]:
            cur |= out[p]
        for i in range(blk.first, blk.last + 1):
            found: dict[str, tuple[int, ...]] = {}
            guard = instructions[i].predicate if instructions[i].is_conditional else ""
            for reg in instructions[i].regs_read:
                mask = cur & reg_mask.get(reg, 0)
                if mask:
                    defs = sorted({def_instr[d] for d in _bits(mask)})
                    if guard and len(defs) > 1:
                        defs = _same_guard(instructions, blk.first, i, guard, defs)
                    found[reg] = tuple(defs)
            reaching[i] = found
            cur = transfer(cur, i)
    return DefUse(tuple(reaching))


def _same_guard(instructions: tuple[Instruction, ...], first: int, use: int, guard: str,
                defs: list[int]) -> list[int]:
    """Refine the defs reaching a guarded use: a def under the same guard earlier in the block,
    with the guard predicate unchanged in between, hides every def before it (``@P1 IMAD.WIDE
    R6, ...; @P1 LDG R6, [R6.64]`` reads the IMAD's R6, whatever R6 held before)."""
    preg = guard.lstrip("!")
    for d in reversed(defs):
        if not first <= d < use:
            continue
        if instructions[d].predicate == guard and not any(
                preg in instructions[k].regs_written for k in range(d + 1, use)):
            return [x for x in defs if d <= x < use]
    return defs


@dataclass(frozen=True)
class RawChain:
    """A producer load whose result reaches the address of a consumer load (indices)."""

    producer: int
    consumer: int
    via: tuple[int, ...]
    """Instruction indices between them (address arithmetic), in address order."""


@dataclass(frozen=True)
class LoadSlice:
    """What the backward walk from one global load's address found."""

    load: int
    """Instruction index of the load."""
    producers: tuple[int, ...]
    """Global loads whose results reach the address."""
    const_offsets: tuple[tuple[int, bool], ...]
    """Bank-0 constant offsets met, with whether each was read as 64 bits (a pointer)."""


def _walk(load: int, instructions: tuple[Instruction, ...], du: DefUse):
    """Backward walk from ``load``'s address registers.

    Returns (edges, producer -> its users, bank-0 constant offsets -> read as 64 bits)."""
    edges: dict[int, set[int]] = {}  # node -> arithmetic nodes it reads from
    users_of: dict[int, set[int]] = {}  # producer load -> nodes reading its result
    consts: dict[int, bool] = {}
    stack = [(load, reg) for reg in instructions[load].address_regs]
    visited = {load}
    while stack:
        node, reg = stack.pop()
        for d in du.defs(node, reg):
            dins = instructions[d]
            if dins.is_global_load:
                users_of.setdefault(d, set()).add(node)
            elif dins.opcode in ADDRESS_OPCODES:
                edges.setdefault(node, set()).add(d)
                for bank, off in dins.const_refs:
                    if bank == 0:
                        wide = consts.get(off, False) or ("WIDE" in dins.modifiers
                                                          and dins.operands[-1].startswith("c["))
                        consts[off] = wide
                if d not in visited:
                    visited.add(d)
                    stack.extend((d, r) for r in dins.regs_read if _tracked(r)
                                 and not r.startswith(("P", "UP")))
            elif dins.opcode in ("LDC", "ULDC"):
                for bank, off in dins.const_refs:
                    if bank == 0:
                        consts[off] = consts.get(off, False) or "64" in dins.modifiers
    # an offset and offset+4 both read: the two halves of one 64-bit pointer
    for off in list(consts):
        if off + 4 in consts:
            consts[off] = True
    return edges, users_of, consts


def load_slices_and_chains(instructions: tuple[Instruction, ...], du: DefUse
                           ) -> tuple[tuple[LoadSlice, ...], tuple[RawChain, ...]]:
    """The backward slice of every global load's address, and every producer -> consumer chain."""
    slices: list[LoadSlice] = []
    chains: list[RawChain] = []
    for i, ins in enumerate(instructions):
        if not ins.is_global_load or not ins.address_regs:
            continue
        edges, users_of, consts = _walk(i, instructions, du)
        slices.append(LoadSlice(i, tuple(sorted(users_of)), tuple(sorted(consts.items()))))
        if not users_of:
            continue
        reverse: dict[int, set[int]] = {}
        for src, dsts in edges.items():
            for dst in dsts:
                reverse.setdefault(dst, set()).add(src)
        for producer, direct in sorted(users_of.items()):
            via: set[int] = set()
            stack = list(direct)
            while stack:
                x = stack.pop()
                if x in via or x == i:
                    continue
                via.add(x)
                stack.extend(reverse.get(x, ()))
            chains.append(RawChain(producer, i, tuple(sorted(via))))
    return tuple(slices), tuple(chains)
