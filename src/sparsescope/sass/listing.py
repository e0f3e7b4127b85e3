"""Read SASS listings: ``cuobjdump -sass`` text, ``nvdisasm`` text (with ``-g`` line info) and
``nvdisasm -json``.

Each reader yields one :class:`KernelListing` per function, in file order, parsing lazily, so a
multi-gigabyte ``cuobjdump -sass`` of a library streams through in constant memory. A ``select``
predicate on the (mangled) function name skips the parsing of functions nobody asked for.

A listing cut short (a saved file truncated, a disassembler that died) is refused, not analysed
in part: every function must reach its end marker, selected or not, since the functions after a
cut are missing too. ``cuobjdump -sass`` closes each function with a line of ten dots
(``..........``), but a function whose code is whole is accepted without it: one that reached
its ``EXIT`` and its closing self-branch (``BRA`` to its own address, the trap after the last
block), followed only by ``NOP`` padding (the last padding line may itself be cut), is complete,
since nothing after the self-branch is code. ``nvdisasm`` declares
``.size NAME,(.L_x_N - NAME)`` and places the end label ``.L_x_N:`` after the last instruction.
A function that stops before its end (inside its code) raises
:class:`~sparsescope.errors.TruncatedInputError` naming the listing, the line and the function
(once the functions before it have been yielded).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sparsescope.errors import TruncatedInputError, UsageError
from sparsescope.sass.instructions import Instruction, parse_instruction


@dataclass(frozen=True)
class KernelListing:
    """The disassembly of one function for one architecture."""

    name: str
    """Function name as in the binary (mangled for C++ kernels)."""
    arch: str
    """Target architecture, e.g. ``sm_90``; empty when the listing does not say."""
    instructions: tuple[Instruction, ...]
    """Instructions in address order."""
    listing_format: str
    """``cuobjdump``, ``nvdisasm`` or ``nvdisasm-json``."""


Select = Callable[[str], bool]

_INS = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s*(.*?)\s*;?\s*(?:/\*[^*]*\*/\s*)?$")
_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_ARCH = re.compile(r"^\s*(?:arch\s*=\s*|code for\s+|\.target\s+)(sm_\w+)")
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_LABEL = re.compile(r"^([.$\w]+):\s*$")
_LINEINFO = re.compile(r'^\s*//## File "([^"]*)", line (\d+)')
_LABEL_REF = re.compile(r"`\(([^)]+)\)")
_CUOBJDUMP_END = re.compile(r"^\s*\.{10,}\s*$")
"""cuobjdump closes every function with a line of ten dots."""
_NVDISASM_SIZE = re.compile(r"^\s*\.size\s+([^,\s]+)\s*,\s*\(\s*([.$\w]+)\s*-\s*([^)\s]+)\s*\)")
"""``.size NAME,(.L_x_N - NAME)``: nvdisasm names the label that ends the function."""


def _all(_: str) -> bool:
    return True


def _cut_short(source: str, lineno: int, name: str, arch: str, last_address: int | None,
               marker: str, done: list[str], at_end: bool) -> TruncatedInputError:
    """The error for function ``name`` stopping at line ``lineno`` before its end ``marker``."""
    after = "" if last_address is None else f" after /*{last_address:04x}*/"
    where = ("the listing ends here, so any kernel after it is missing too" if at_end
             else "the next function starts here")
    return TruncatedInputError(
        source, f"listing truncated: kernel {name}{f' ({arch})' if arch else ''} stops{after} "
                f"without {marker}; {where} (complete kernels before it: "
                f"{', '.join(done) or 'none'}); save the listing again or pass the binary itself",
        line=lineno, item=name)


_SELF_BRANCH = re.compile(r"^BRA\s+(?:0x)?([0-9a-fA-F]+)\s*;?$")
"""An unpredicated branch to a literal address: the self-branch that ends every kernel."""


class _CuobjdumpTail:
    """The end of the function being read, tracked with string tests only (no regex per line,
    so unselected functions stream as fast as before): whether an ``EXIT`` was seen, the last
    two code (non-``NOP``) instruction lines, and the last instruction line."""

    __slots__ = ("exit_seen", "code", "prev_code", "last_line", "last_lineno")

    def __init__(self) -> None:
        self.exit_seen = False
        self.code: str | None = None
        self.prev_code: str | None = None
        self.last_line: str | None = None
        self.last_lineno = 0

    def instruction(self, line: str, lineno: int) -> None:
        self.last_line, self.last_lineno = line, lineno
        if "NOP" in line:
            return
        self.exit_seen = self.exit_seen or "EXIT" in line
        self.prev_code, self.code = self.code, line

    def padded_end(self) -> tuple[bool, bool]:
        """(whole, last_cut): whether the code ends in ``EXIT`` ... self-branch followed only
        by ``NOP`` padding, and whether the last instruction line is a ``NOP`` cut short."""
        code, last_cut = self.code, False
        if self.last_line is not None and self.last_line is code:
            m = _INS.match(code)
            text = m.group(2).strip() if m else ""
            if "NOP".startswith(text):  # "/*0770*/  NO": a padding line cut short
                code, last_cut = self.prev_code, True
        if code is None or not self.exit_seen:
            return False, last_cut
        m = _INS.match(code)
        sb = _SELF_BRANCH.match(m.group(2).strip()) if m else None
        return bool(sb and int(sb.group(1), 16) == int(m.group(1), 16)), last_cut


def _parse(address: int, text: str, lineno: int, **source_line) -> Instruction:
    """One instruction; a text the parser cannot read is a UsageError naming its line."""
    try:
        return parse_instruction(address, text, **source_line)
    except (IndexError, KeyError, ValueError) as exc:
        raise UsageError(f"line {lineno}: cannot parse instruction /*{address:04x}*/ {text!r} "
                         f"({type(exc).__name__}: {exc})") from None


def iter_cuobjdump(lines: Iterable[str], select: Select | None = None, *,
                   source: str = "cuobjdump listing") -> Iterator[KernelListing]:
    """Functions of a ``cuobjdump -sass`` listing (any number of ELF sections and arches).

    Raises :class:`TruncatedInputError` (naming ``source``) for a function cut inside its
    code: without its closing ``..........`` line and not ending in its ``EXIT``, self-branch
    and ``NOP`` padding; after yielding the complete functions before it.
    """
    select = select or _all
    arch = ""
    name: str | None = None
    wanted = ended = False
    done: list[str] = []
    body: list[tuple[int, str, int]] = []  # (address, text, line): parsed once the end is seen
    tail = _CuobjdumpTail()

    def close(lineno: int, at_end: bool) -> Iterator[KernelListing]:
        nonlocal body
        if name is None:
            return
        if not ended:
            whole, last_cut = tail.padded_end()
            if not whole:
                last = body[-1][0] if wanted and body else None
                raise _cut_short(source, lineno, name, arch, last,
                                 "its closing '..........' line", done, at_end)
            # the padding: plain NOPs (a line cut inside its encoding comment read as one),
            # and the last padding line, when cut short, not kept
            body = [(a, "NOP" if t.startswith("NOP") else t, ln) for a, t, ln in body
                    if not (last_cut and ln == tail.last_lineno)]
        done.append(name)
        if wanted:
            yield KernelListing(name, arch, tuple(_parse(*ins) for ins in body), "cuobjdump")

    lineno = 0
    for lineno, line in enumerate(lines, start=1):
        if "/*" in line:
            if name is None or ended or line.lstrip().startswith("/* "):
                continue  # outside a function, or an encoding-only line
            tail.instruction(line, lineno)
            if not wanted:
                continue
            m = _INS.match(line)
            if m:
                body.append((int(m.group(1), 16), m.group(2), lineno))
            continue
        if _CUOBJDUMP_END.match(line):
            ended = True
            continue
        fm = _FUNCTION.match(line)
        if fm:
            yield from close(lineno, False)
            name, body, ended, tail = fm.group(1), [], False, _CuobjdumpTail()
            wanted = select(name)
            continue
        am = _ARCH.match(line)
        if am:
            yield from close(lineno, False)
            name, body, wanted, ended, tail = None, [], False, False, _CuobjdumpTail()
            arch = am.group(1)
    yield from close(lineno, True)


def _finish_nvdisasm(name: str, arch: str, raw: list[tuple[int, str, str, int, int]],
                     labels: dict[str, int]) -> KernelListing:
    def resolve(text: str) -> str:
        return _LABEL_REF.sub(lambda m: hex(labels[m.group(1)]) if m.group(1) in labels
                              else m.group(0), text)

    body = tuple(_parse(addr, resolve(text), lineno, source_file=f, source_line=ln)
                 for addr, text, f, ln, lineno in raw)
    return KernelListing(name, arch, body, "nvdisasm")


class _NvdisasmReader:
    """The state of one pass over an ``nvdisasm`` text listing: the function being read, its
    buffered instructions and labels, and whether its ``.size`` end label has been reached.

    The instructions of a wanted function are kept raw and parsed only once its end is seen,
    so a listing cut short is refused before any of its last function is parsed.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.arch = ""
        self.name: str | None = None
        self.wanted = False
        self.raw: list[tuple[int, str, str, int, int]] = []
        self.labels: dict[str, int] = {}
        self.pending: list[str] = []  # labels waiting for the address of the next instruction
        self.src_file, self.src_line = "", 0
        self.end_label: str | None = None
        self.ended = False
        self.count = 0
        self.done: list[str] = []

    def close(self, lineno: int, at_end: bool) -> Iterator[KernelListing]:
        """The function being read, if wanted; raises when it stopped before its end."""
        if self.name is None:
            return
        if not self.ended or self.count == 0:
            marker = (f"its end label '{self.end_label}:'" if self.end_label
                      else "any instruction or .size end label")
            raise _cut_short(self.source, lineno, self.name, self.arch,
                             self.raw[-1][0] if self.raw else None, marker, self.done, at_end)
        self.done.append(self.name)
        if self.wanted:
            yield _finish_nvdisasm(self.name, self.arch, self.raw, self.labels)

    def start(self, name: str, select: Select) -> None:
        """Begin function ``name`` (a ``.section .text.NAME`` line)."""
        self.name, self.raw, self.labels, self.pending = name, [], {}, []
        self.src_file, self.src_line = "", 0
        self.end_label, self.ended, self.count = None, True, 0
        self.wanted = select(name)

    def instruction(self, m: re.Match, lineno: int) -> None:
        """An instruction line: counted always, kept (with its labels and source line) only
        for a wanted function."""
        self.count += 1
        if self.wanted:
            addr = int(m.group(1), 16)
            for label in self.pending:
                self.labels[label] = addr
            self.raw.append((addr, m.group(2), self.src_file, self.src_line, lineno))
        self.pending = []

    def directive(self, line: str) -> None:
        """Any other line: a ``//## File`` line info, a label, a ``.size`` or an arch."""
        lm = _LINEINFO.match(line)
        if lm:
            self.src_file, self.src_line = lm.group(1), int(lm.group(2))
            return
        lab = _LABEL.match(line)
        if lab:
            self.pending.append(lab.group(1))
            if lab.group(1) == self.end_label:
                self.ended = True
            return
        size = _NVDISASM_SIZE.match(line)
        if size and size.group(1) == self.name == size.group(3) and not self.count:
            # the end label is declared before the body: the function ends when it is reached
            self.end_label, self.ended = size.group(2), False
            return
        am = _ARCH.match(line)
        if am:
            self.arch = am.group(1)


def iter_nvdisasm(lines: Iterable[str], select: Select | None = None, *,
                  source: str = "nvdisasm listing") -> Iterator[KernelListing]:
    """Functions of an ``nvdisasm`` text listing; ``//## File`` comments give source lines and
    ``.L_x_N`` labels are resolved to addresses.

    Raises :class:`TruncatedInputError` (naming ``source``) for a function whose ``.size`` end
    label never comes, or that holds no instruction, after yielding the complete ones before it.
    """
    select = select or _all
    reader = _NvdisasmReader(source)
    lineno = 0
    for lineno, line in enumerate(lines, start=1):
        m = _INS.match(line) if "/*" in line else None
        if m:
            reader.instruction(m, lineno)
            continue
        sm = _SECTION.match(line)
        if sm:
            # the previous function is yielded before the next one is selected
            yield from reader.close(lineno, False)
            reader.start(sm.group(1), select)
            continue
        reader.directive(line)
    yield from reader.close(lineno, True)


def iter_nvdisasm_json(text: str, select: Select | None = None) -> Iterator[KernelListing]:
    """Functions of an ``nvdisasm -json`` document (instructions 16 bytes apart, sm_70+)."""
    select = select or _all
    try:
        doc = json.loads(text)
        header, functions = doc[0], doc[1]
        version = header.get("SM", {}).get("version", {})
    except (ValueError, IndexError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"not an nvdisasm -json listing: {exc}") from exc
    arch = f"sm_{version.get('major', '')}{version.get('minor', '')}" if version else ""
    for fn in functions:
        name = fn.get("function-name", "")
        if not select(name):
            continue
        start = int(fn.get("start", 0))
        body = []
        for i, ins in enumerate(fn.get("sass-instructions", [])):
            pred = ins.get("predicate", "")
            ops = ins.get("operands", "")
            text = f"{pred} {ins.get('opcode', '')} {ops.replace(',', ', ')}".strip()
            body.append(parse_instruction(start + 16 * i, text))
        yield KernelListing(name, arch, tuple(body), "nvdisasm-json")


def detect_format(head: str) -> str:
    """``cuobjdump``, ``nvdisasm`` or ``nvdisasm-json`` from the first few KB of a listing."""
    stripped = head.lstrip()
    if stripped.startswith("["):
        return "nvdisasm-json"
    if re.search(r"^\s*Function\s*:", head, re.M):
        return "cuobjdump"
    if re.search(r"^\s*\.section\s+\.text\.|^\s*//-+ \.text\.", head, re.M):
        return "nvdisasm"
    if re.search(r"/\*[0-9a-fA-F]{4}\*/", head):
        return "cuobjdump"
    raise UsageError("not a SASS listing: expected cuobjdump -sass, nvdisasm or nvdisasm -json "
                     "output")


def iter_listing_text(text: str, select: Select | None = None, *,
                      source: str = "listing") -> Iterator[KernelListing]:
    """Functions of a listing held in memory, whatever its format; ``source`` names it in the
    error for a listing cut short."""
    fmt = detect_format(text[:65536])
    if fmt == "nvdisasm-json":
        yield from iter_nvdisasm_json(text, select)
    elif fmt == "nvdisasm":
        yield from iter_nvdisasm(text.splitlines(), select, source=source)
    else:
        yield from iter_cuobjdump(text.splitlines(), select, source=source)


def read_listing(path: str | Path, select: Select | None = None) -> list[KernelListing]:
    """All (selected) functions of a saved listing file; a file cut inside a function raises
    :class:`~sparsescope.errors.TruncatedInputError` naming the file, line and function."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        return list(iter_listing_text(text, select, source=str(path)))
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from exc


def is_listing_file(path: str | Path) -> bool:
    """True when the file is text that looks like a SASS listing (not an ELF or fatbin)."""
    with open(path, "rb") as fh:
        head = fh.read(65536)
    if b"\0" in head or head[:4] == b"\x7fELF":
        return False
    try:
        detect_format(head.decode("utf-8", errors="replace"))
    except UsageError:
        return False
    return True
