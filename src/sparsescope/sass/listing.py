"""Read SASS listings: ``cuobjdump -sass`` text, ``nvdisasm`` text (with ``-g`` line info) and
``nvdisasm -json``.

Each reader yields one :class:`KernelListing` per function, in file order, parsing lazily, so a
multi-gigabyte ``cuobjdump -sass`` of a library streams through in constant memory. A ``select``
predicate on the (mangled) function name skips the parsing of functions nobody asked for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sparsescope.errors import UsageError
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


def _all(_: str) -> bool:
    return True


def iter_cuobjdump(lines: Iterable[str], select: Select | None = None) -> Iterator[KernelListing]:
    """Functions of a ``cuobjdump -sass`` listing (any number of ELF sections and arches)."""
    select = select or _all
    arch = ""
    name: str | None = None
    wanted = False
    body: list[Instruction] = []
    for line in lines:
        if "/*" in line:
            if not wanted:
                continue
            m = _INS.match(line)
            if m:
                body.append(parse_instruction(int(m.group(1), 16), m.group(2)))
            continue
        fm = _FUNCTION.match(line)
        if fm:
            if name is not None and wanted:
                yield KernelListing(name, arch, tuple(body), "cuobjdump")
            name, body = fm.group(1), []
            wanted = select(name)
            continue
        am = _ARCH.match(line)
        if am:
            if name is not None and wanted:
                yield KernelListing(name, arch, tuple(body), "cuobjdump")
            name, body, wanted = None, [], False
            arch = am.group(1)
    if name is not None and wanted:
        yield KernelListing(name, arch, tuple(body), "cuobjdump")


def _finish_nvdisasm(name: str, arch: str, raw: list[tuple[int, str, str, int]],
                     labels: dict[str, int]) -> KernelListing:
    def resolve(text: str) -> str:
        return _LABEL_REF.sub(lambda m: hex(labels[m.group(1)]) if m.group(1) in labels
                              else m.group(0), text)

    body = tuple(parse_instruction(addr, resolve(text), source_file=f, source_line=ln)
                 for addr, text, f, ln in raw)
    return KernelListing(name, arch, body, "nvdisasm")


def iter_nvdisasm(lines: Iterable[str], select: Select | None = None) -> Iterator[KernelListing]:
    """Functions of an ``nvdisasm`` text listing; ``//## File`` comments give source lines and
    ``.L_x_N`` labels are resolved to addresses."""
    select = select or _all
    arch = ""
    name: str | None = None
    wanted = False
    raw: list[tuple[int, str, str, int]] = []
    labels: dict[str, int] = {}
    pending: list[str] = []
    src_file, src_line = "", 0
    for line in lines:
        m = _INS.match(line) if "/*" in line else None
        if m:
            if wanted:
                addr = int(m.group(1), 16)
                for label in pending:
                    labels[label] = addr
                raw.append((addr, m.group(2), src_file, src_line))
            pending = []
            continue
        sm = _SECTION.match(line)
        if sm:
            if name is not None and wanted:
                yield _finish_nvdisasm(name, arch, raw, labels)
            name, raw, labels, pending = sm.group(1), [], {}, []
            src_file, src_line = "", 0
            wanted = select(name)
            continue
        lm = _LINEINFO.match(line)
        if lm:
            src_file, src_line = lm.group(1), int(lm.group(2))
            continue
        lab = _LABEL.match(line)
        if lab:
            pending.append(lab.group(1))
            continue
        am = _ARCH.match(line)
        if am:
            arch = am.group(1)
    if name is not None and wanted:
        yield _finish_nvdisasm(name, arch, raw, labels)


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


def iter_listing_text(text: str, select: Select | None = None) -> Iterator[KernelListing]:
    """Functions of a listing held in memory, whatever its format."""
    fmt = detect_format(text[:65536])
    if fmt == "nvdisasm-json":
        yield from iter_nvdisasm_json(text, select)
    elif fmt == "nvdisasm":
        yield from iter_nvdisasm(text.splitlines(), select)
    else:
        listings = iter_cuobjdump(text.splitlines(), select)
        yield from listings


def read_listing(path: str | Path, select: Select | None = None) -> list[KernelListing]:
    """All (selected) functions of a saved listing file."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        return list(iter_listing_text(text, select))
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
