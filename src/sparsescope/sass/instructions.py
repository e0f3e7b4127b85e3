"""One SASS instruction as a typed record, parsed from its text, and its class.

``parse_instruction(0x5b0, "@!P5 LDG.E R14, desc[UR6][R8.64] ;")`` gives an :class:`Instruction`
with the guard predicate, opcode ``LDG``, modifiers ``("E",)``, the operands, the registers read
(``P5``, ``R8``, ``R9``, ``UR6``, ``UR7``) and written (``R14``), memory space ``global``, access
width 4 bytes and the address registers ``R8``, ``R9``.

Register semantics (which operands are written, which are 64-bit pairs) follow the SASS
conventions of Volta to Blackwell:

* the first operand is the destination, except for stores, reductions, branches and barriers;
* ``*SETP`` and ``PLOP3`` write two predicates; a predicate right after the destination
  (``IADD3 R2, P2, ...``, ``LEA R8, P6, ...``, ``VOTE.ANY R0, PT, P0``) is a carry/predicate
  output, and an instruction whose first operand is a predicate writes the register after it
  too (``SHFL.DOWN P0, R0, ...``, ``LOP3.LUT P1, R10, ...``);
* ``Rn.64`` is the pair ``Rn, Rn+1``; ``IMAD.WIDE*`` writes a pair and reads a pair addend;
  ``.64/.128/.256`` loads write 2/4/8 registers and such stores read as many; ``CS2R`` writes a
  pair; ``D*`` (FP64) instructions read and write pairs; ``F2F/I2F/F2I`` take the width of each
  side from their type modifiers (``F2F.F64.F32``: pair written, one register read).

Tensor-core instructions (``HMMA``, ``IMMA``, ``HGMMA``, ...) are recorded with the registers
their text names only; they never take part in the address analysis.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

#: The instruction classes of seed 001, section 8, plus FFMA (the fused multiply-add that
#: nvcc emits for ``sum += a * b``), in the order a report shows them.
CLASS_ORDER = ("ISETP", "IMAD", "LEA", "LDG", "BRA", "BSSY/BSYNC", "STS", "FADD", "FFMA", "LDS",
               "SHFL", "STG", "FMUL", "REDG", "other")

_CLASS_OF_OPCODE = {"ISETP": "ISETP", "IMAD": "IMAD", "LEA": "LEA", "LDG": "LDG", "BRA": "BRA",
                    "BSSY": "BSSY/BSYNC", "BSYNC": "BSSY/BSYNC", "STS": "STS", "FADD": "FADD",
                    "FFMA": "FFMA", "LDS": "LDS", "SHFL": "SHFL", "STG": "STG", "FMUL": "FMUL",
                    "REDG": "REDG"}

#: Floating-point arithmetic counted as "compute" in the compute-to-memory ratio.
COMPUTE_OPCODES = frozenset({"FADD", "FMUL", "FFMA", "DADD", "DMUL", "DFMA", "HADD2", "HMUL2",
                             "HFMA2", "FADD32I", "FMUL32I", "FFMA32I"})
#: Memory instructions counted in the compute-to-memory ratio (global, shared, local, generic).
MEMORY_OPCODES = frozenset({"LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "REDG", "RED",
                            "ATOMG", "ATOM", "ATOMS", "LDGSTS", "LDSM"})

_SPACE = {"LDG": "global", "STG": "global", "REDG": "global", "ATOMG": "global",
          "LDGSTS": "global", "LD": "generic", "ST": "generic", "RED": "generic",
          "ATOM": "generic", "LDS": "shared", "STS": "shared", "ATOMS": "shared",
          "LDSM": "shared", "LDL": "local", "STL": "local", "LDC": "constant",
          "ULDC": "constant", "TLD": "texture", "TEX": "texture", "TLD4": "texture"}
_MEM_OP = {"LDG": "load", "LD": "load", "LDS": "load", "LDL": "load", "LDC": "load",
           "ULDC": "load", "LDSM": "load", "LDGSTS": "load", "TLD": "load", "TEX": "load",
           "TLD4": "load", "STG": "store", "ST": "store", "STS": "store", "STL": "store",
           "ATOMG": "atomic", "ATOM": "atomic", "ATOMS": "atomic", "REDG": "reduction",
           "RED": "reduction"}

#: Instructions that write no register (stores, reductions, control flow, barriers).
_NO_DEST = frozenset({"STG", "ST", "STS", "STL", "RED", "REDG", "BRA", "BRX", "JMP", "JMX",
                      "CALL", "RET", "EXIT", "BSSY", "BSYNC", "BREAK", "BPT", "WARPSYNC", "BAR",
                      "MEMBAR", "CCTL", "CCTLL", "ERRBAR", "DEPBAR", "NOP", "YIELD", "LDGSTS",
                      "LDGDEPBAR", "KILL", "NANOSLEEP", "ARRIVES", "FENCE", "UTMALDG",
                      "UTMASTG", "UBLKCP", "UTMAPF", "UTMACCTL", "USETMAXREG", "ACQBULK",
                      "SYNCS", "STSM", "BMOV", "WARPGROUP", "UCGABAR_ARV", "UCGABAR_WAIT",
                      "CGAERRBAR", "ELECT", "PREEXIT", "ENDCOLLECTIVE"})
#: Control transfers.
BRANCH_OPCODES = frozenset({"BRA", "BRX", "JMP", "JMX"})
_DOUBLE_OPS = frozenset({"DADD", "DMUL", "DFMA", "DMNMX", "DSETP", "DSET", "DMMA"})
_CONVERT_OPS = frozenset({"F2F", "I2F", "F2I", "I2I", "FRND", "F2IP", "I2FP"})
_WIDE_TYPES = frozenset({"F64", "S64", "U64"})
_SIZE_REGS = {"64": 2, "128": 4, "256": 8}
_SIZE_BYTES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "32": 4, "64": 8, "128": 16, "256": 32}
CACHE_HINTS = frozenset({"CONSTANT", "EF", "EL", "LU", "EU", "NA", "STRONG", "WEAK", "GPU", "SYS",
                         "SM", "CTA", "VC", "MMIO", "LTC64B", "LTC128B", "LTC256B", "BYPASS",
                         "ZFILL", "PRIVATE", "CG", "CS", "CA", "CV", "LAST", "ENL2", "NTZ"})

_PRED = re.compile(r"^!?U?P[0-6T]$")
_REG = re.compile(r"(?<![A-Za-z0-9_])(UR|R|UP|P)(\d+|Z|T)(\.64)?(?![A-Za-z0-9_])")
_CONST = re.compile(r"c\[(0x[0-9a-fA-F]+)\]\[(0x[0-9a-fA-F]+)\]")
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")
_HEX = re.compile(r"([+-]?)\s*(-?0x[0-9a-fA-F]+)")
_TARGET = re.compile(r"(?:^|[\s,])(0x[0-9a-fA-F]+)\s*$")


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction of one kernel."""

    address: int
    """Byte offset from the start of the kernel (``/*05b0*/``)."""
    text: str
    """The instruction as listed, without the address, the trailing ``;`` and the encoding."""
    opcode: str
    """Base opcode, e.g. ``LDG`` for ``LDG.E.EF.64``."""
    modifiers: tuple[str, ...]
    """Dot-separated modifiers after the opcode, e.g. ``("E", "EF", "64")``."""
    operands: tuple[str, ...]
    """Operands as written, comma-separated in the listing."""
    predicate: str = ""
    """Guard predicate without the ``@`` (``P0``, ``!P5``, ``UP0``); empty when unguarded."""
    regs_read: tuple[str, ...] = ()
    """32-bit registers, uniform registers and predicates read (``RZ``/``PT`` left out)."""
    regs_written: tuple[str, ...] = ()
    """Registers and predicates written; a 64-bit result names both halves."""
    mem_space: str = ""
    """``global``, ``shared``, ``local``, ``generic``, ``constant``, ``texture`` or empty."""
    mem_op: str = ""
    """``load``, ``store``, ``atomic``, ``reduction`` or empty."""
    access_bytes: int = 0
    """Bytes accessed per thread (1, 2, 4, 8, 16, 32); 0 for a non-memory instruction."""
    cache_hints: tuple[str, ...] = ()
    """Cache and ordering modifiers of a memory instruction (``EF``, ``CONSTANT``, ...)."""
    address_regs: tuple[str, ...] = ()
    """Registers forming the memory address (inside ``[...]``), descriptor register excluded."""
    address_offset: int = 0
    """Immediate byte offset in the memory operand (``[R8.64+0x20]`` -> 32)."""
    const_refs: tuple[tuple[int, int], ...] = ()
    """Constant-bank operands ``c[bank][offset]`` as ``(bank, offset)``."""
    branch_target: int | None = None
    """Target address of a branch, call or ``BSSY`` (same address space as :attr:`address`)."""
    source_file: str = ""
    """Source file from line info (nvdisasm ``-g`` / ``-lineinfo``), when known."""
    source_line: int = 0
    """Source line from line info; 0 when unknown."""

    @property
    def mnemonic(self) -> str:
        """Opcode with its modifiers, e.g. ``LDG.E.EF.64``."""
        return ".".join((self.opcode, *self.modifiers))

    @property
    def klass(self) -> str:
        """Class of seed 001's histogram (``ISETP``, ``LEA``, ``BSSY/BSYNC``, ..., ``other``)."""
        return _CLASS_OF_OPCODE.get(self.opcode, "other")

    @property
    def is_global_load(self) -> bool:
        """A load that may read global memory: ``LDG``, generic ``LD``, or ``LDGSTS``."""
        return self.mem_op == "load" and self.mem_space in ("global", "generic")

    @property
    def is_branch(self) -> bool:
        return self.opcode in BRANCH_OPCODES

    @property
    def is_conditional(self) -> bool:
        """Guarded by a predicate other than PT, or a branch on a predicate operand."""
        if self.predicate and self.predicate not in ("PT", "UPT"):
            return True
        return self.is_branch and any(_PRED.match(op) and op.lstrip("!") not in ("PT", "UPT")
                                      for op in self.operands)

    @property
    def ends_block(self) -> bool:
        """Control leaves the straight line here (branch, exit, return, indirect jump)."""
        return self.opcode in BRANCH_OPCODES or self.opcode in ("EXIT", "RET", "KILL")


def _strip_reg(token: str) -> str:
    return token.lstrip("-!|~").split(".")[0].rstrip("|")


@functools.lru_cache(maxsize=8192)
def _regs_of(operand: str, width: int) -> tuple[str, ...]:
    """Registers named in ``operand``; an unsuffixed register counts ``width`` registers.
    Kept per (operand, width): a listing names the same few operands thousands of times."""
    out: list[str] = []
    for kind, num, pair in _REG.findall(operand):
        if num in ("Z", "T"):
            continue
        n = int(num)
        w = 2 if pair else width
        if kind in ("P", "UP"):
            w = 1
        out.extend(f"{kind}{n + k}" for k in range(w))
    return tuple(out)


def _size_regs(mods: tuple[str, ...]) -> int:
    for m in mods:
        if m in _SIZE_REGS:
            return _SIZE_REGS[m]
    return 1


def _access_bytes(opcode: str, mods: tuple[str, ...]) -> int:
    size = 4
    for m in mods:
        if m in _SIZE_BYTES:
            size = _SIZE_BYTES[m]
        elif opcode in ("ATOMG", "ATOM", "ATOMS", "REDG", "RED") and m in _WIDE_TYPES:
            size = 8
    return size


def _is_pred(op: str) -> bool:
    return bool(_PRED.match(op))


def _dest_count(opcode: str, ops: list[str]) -> int:
    """How many leading operands are written."""
    if opcode in _NO_DEST or not ops:
        return 0
    if opcode.endswith("SETP") or opcode in ("PLOP3", "UPLOP3", "R2P"):
        return 2 if len(ops) > 1 and _is_pred(ops[1]) else 1
    if _is_pred(ops[0]):
        # SHFL.DOWN P0, R0, ...; LOP3.LUT P1, R10, ...; ATOMG PT, R2, ...
        return 2 if len(ops) > 1 and not _is_pred(ops[1]) else 1
    count = 1
    limit = 3 if opcode in ("IADD3", "UIADD3", "IADD", "UIADD") else 2
    while count < limit and count < len(ops) - 1 and _is_pred(ops[count]) \
            and not ops[count].startswith("!"):
        count += 1
    return count


def _widths(opcode: str, mods: tuple[str, ...], ops: list[str], ndest: int) -> list[int]:
    """Registers per unsuffixed register operand (1 = 32-bit, 2 = a 64-bit pair, ...)."""
    w = [1] * len(ops)
    if opcode in _DOUBLE_OPS or ("64" in mods and not _MEM_OP.get(opcode)):
        return [2] * len(ops)
    if opcode in _CONVERT_OPS:
        types = [m for m in mods if re.fullmatch(r"[FSU](8|16|32|64)", m)]
        if types:
            dst = 2 if types[0] in _WIDE_TYPES else 1
            src = 2 if len(types) > 1 and types[1] in _WIDE_TYPES else 1
            if opcode == "I2F" and len(types) == 1:
                src = 1
            return [dst] + [src] * (len(ops) - 1)
        return w
    if opcode in ("IMAD", "UIMAD") and "WIDE" in mods:
        w[0] = 2
        if len(ops) > ndest + 2:
            w[ndest + 2] = 2
        return w
    if opcode in ("CS2R",) and "32" not in mods:
        w[0] = 2
        return w
    mem = _MEM_OP.get(opcode)
    if mem in ("load", "atomic") and ndest:
        w[ndest - 1] = _size_regs(mods)
        if mem == "atomic" and any(m in _WIDE_TYPES for m in mods):
            w[ndest - 1] = 2
    if mem in ("store", "reduction", "atomic"):
        data = _size_regs(mods)
        if mem != "store" and any(m in _WIDE_TYPES for m in mods):
            data = 2
        for i in range(len(ops)):
            if "[" not in ops[i] and i >= ndest:
                w[i] = data
    return w


def parse_instruction(address: int, text: str, *, source_file: str = "",
                      source_line: int = 0) -> Instruction:
    """Parse one instruction's text (``[@P] OPCODE[.MOD...] [operands] [;]``).

    Branch targets must already be numeric (listing readers resolve nvdisasm labels first).
    """
    body = text.strip().rstrip(";").strip().strip("{}").strip()
    predicate = ""
    if body.startswith("@"):
        head, _, body = body.partition(" ")
        predicate = head[1:]
        body = body.strip()
    mnemonic, _, rest = body.partition(" ")
    parts = mnemonic.split(".")
    opcode, mods = parts[0], tuple(p for p in parts[1:] if p)
    rest = rest.strip()
    ops = [o.strip() for o in rest.split(",")] if rest else []
    ndest = _dest_count(opcode, ops)
    widths = _widths(opcode, mods, ops, ndest)

    written: list[str] = []
    read: list[str] = []
    for i, op in enumerate(ops):
        regs = _regs_of(op, widths[i])
        if i < ndest and "[" not in op:
            written.extend(regs)
        else:
            read.extend(regs)
    if predicate:
        read.append(_strip_reg(predicate))

    mem_space = _SPACE.get(opcode, "")
    mem_op = _MEM_OP.get(opcode, "")
    address_regs: tuple[str, ...] = ()
    offset = 0
    if mem_op and mem_space not in ("constant",):
        for op in ops:
            bare = op.lstrip("-!|~ ")
            groups = _BRACKETS.findall(bare)
            if groups and not bare.startswith(("c[", "cx[")):
                # desc[URd][address] or [address]: the address is the last bracket.
                address_regs = tuple(_regs_of(groups[-1], 1))
                offset = sum(int(h, 16) * (-1 if sign == "-" else 1)
                             for sign, h in _HEX.findall(groups[-1]))
                break
    consts = tuple((int(b, 16), int(o, 16)) for b, o in _CONST.findall(rest))
    target = None
    if opcode in BRANCH_OPCODES or opcode in ("CALL", "BSSY"):
        m = _TARGET.search(rest)
        if m:
            target = int(m.group(1), 16)
    return Instruction(
        address=address, text=(f"@{predicate} " if predicate else "") + body, opcode=opcode,
        modifiers=mods, operands=tuple(ops), predicate=predicate,
        regs_read=tuple(dict.fromkeys(read)), regs_written=tuple(dict.fromkeys(written)),
        mem_space=mem_space, mem_op=mem_op,
        access_bytes=_access_bytes(opcode, mods) if mem_op else 0,
        cache_hints=tuple(m for m in mods if m in CACHE_HINTS) if mem_op else (),
        address_regs=address_regs, address_offset=offset, const_refs=consts,
        branch_target=target, source_file=source_file, source_line=source_line)


def class_histogram(instructions: list[Instruction] | tuple[Instruction, ...]) -> dict[str, int]:
    """Class -> count, every class of :data:`CLASS_ORDER` present (zero when absent)."""
    counts = dict.fromkeys(CLASS_ORDER, 0)
    for ins in instructions:
        counts[ins.klass] += 1
    return counts


def compute_to_memory_ratio(instructions: list[Instruction] | tuple[Instruction, ...]) -> float:
    """FP arithmetic instructions / memory instructions (static counts, as seed 001 section 8).

    ``ratio = #{FADD, FMUL, FFMA, DADD, DMUL, DFMA, HADD2, HMUL2, HFMA2} /
    #{LDG, STG, LDS, STS, LDL, STL, LD, ST, REDG, RED, ATOM*, LDGSTS, LDSM}``; 0 when the
    kernel has no memory instruction. The seed's csrmv_v3_kernel: 59 / 176 = 0.34 ("1:3").
    ``HFMA2.MMA`` with an ``RZ`` multiplicand (nvcc's idiom for moving a constant) is not counted.
    """
    compute = memory = 0
    for ins in instructions:
        if ins.opcode in COMPUTE_OPCODES and not (ins.opcode == "HFMA2" and "MMA" in ins.modifiers):
            compute += 1
        elif ins.opcode in MEMORY_OPCODES:
            memory += 1
    return compute / memory if memory else 0.0
