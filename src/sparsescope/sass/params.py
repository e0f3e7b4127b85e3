"""Kernel parameters: their types and names, where they sit in constant bank 0, and which one a
load's base pointer comes from.

Kernel parameters are passed in constant bank 0 from an architecture-dependent base
(:func:`param_base`: ``0x160`` on sm_70-sm_89, ``0x210`` on sm_90, ``0x380`` on sm_100+, read off
nvcc 13 output). Each parameter is aligned to its own size (the C ABI), so with the types known,
``c[0x0][0x230]`` on sm_90 is the parameter at offset ``0x20``: for
``spmv(int n, const int* rowptr, const int* col, const float* val, const float* x, float* y)``
that is ``x`` (n at 0x0, 4 bytes of padding, then 8-byte pointers at 0x8, 0x10, 0x18, 0x20, 0x28).

Types come from the demangled name (C++ kernels) or the ``.cu`` source (``extern "C"`` kernels have
unmangled names); names come from the source or a user-given list. A type whose size is not known
(a struct such as ``cusparse::KernelCoeffs<float>``) ends the layout: parameters after it keep
their index and type but no offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SIZE = {
    "bool": 1, "char": 1, "signed char": 1, "unsigned char": 1, "int8_t": 1, "uint8_t": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "__half": 2, "half": 2,
    "__nv_bfloat16": 2, "int": 4, "unsigned": 4, "unsigned int": 4, "float": 4, "int32_t": 4,
    "uint32_t": 4, "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8,
    "double": 8, "int64_t": 8, "uint64_t": 8, "size_t": 8, "ptrdiff_t": 8, "float2": 8, "int2": 8,
    "uint2": 8, "float4": 16, "int4": 16, "uint4": 16, "double2": 16, "long2": 16,
}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|struct|class|"
                         r"__grid_constant__)\b")


@dataclass(frozen=True)
class KernelParam:
    """One kernel parameter."""

    index: int
    """Position in the parameter list, from 0."""
    type: str
    """C type as written (``const int*``); empty when only a name is known."""
    name: str
    """Parameter name; empty when unknown."""
    offset_bytes: int | None
    """Offset from the start of the parameter space; None when the layout is not known."""
    size_bytes: int | None
    """Size in bytes; None for a type of unknown size."""

    @property
    def is_pointer(self) -> bool:
        return "*" in self.type or "&" in self.type


def param_base(arch: str) -> int | None:
    """Offset of the first kernel parameter in constant bank 0 for ``arch`` (``sm_90``, ``90``)."""
    m = re.search(r"(\d+)", arch or "")
    if not m:
        return None
    sm = int(m.group(1))
    if sm < 70:
        return 0x140
    if sm < 90:
        return 0x160
    if sm < 100:
        return 0x210
    return 0x380


def type_size(ctype: str) -> int | None:
    """Size in bytes of a parameter type (pointers 8); None when unknown."""
    if "*" in ctype or "&" in ctype:
        return 8
    base = " ".join(_QUALIFIERS.sub(" ", ctype).split())
    base = base.removeprefix("std::")
    if base.startswith("integral_constant<") or base.startswith("std::integral_constant<"):
        return 1
    return _SIZE.get(base)


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside ``<>``, ``()`` and ``[]``."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _matching_paren(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def demangled_parts(demangled: str) -> tuple[str, list[str]]:
    """(base function name, parameter types) of a demangled signature.

    ``void ns::spmv<int>(int, int const*)`` -> ``("spmv", ["int", "int const*"])``; a name
    without a parameter list gives ``(name, [])``.
    """
    text = demangled.strip()
    if not text.endswith(")"):
        return text, []
    depth, open_at = 0, -1
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                open_at = i
                break
    head, args = text[:open_at], text[open_at + 1:-1]
    # drop template arguments at the end of the name, then the return type and namespaces
    while head.endswith(">"):
        depth = 0
        for i in range(len(head) - 1, -1, -1):
            depth += head[i] == ">"
            depth -= head[i] == "<"
            if depth == 0:
                head = head[:i]
                break
    base = head.split()[-1] if head.split() else head
    base = base.split("::")[-1]
    types = [t for t in split_top_level(args) if t and t != "void"]
    return base, types


def _split_decl(param: str) -> tuple[str, str]:
    """``const int* __restrict__ rowptr`` -> (``const int* __restrict__``, ``rowptr``)."""
    param = param.split("=")[0].strip()
    m = re.match(r"^(.*?)([A-Za-z_]\w*)\s*(\[[^\]]*\])?$", param, re.S)
    if not m or not m.group(1).strip() or m.group(1).strip().endswith("::"):
        return param, ""
    ctype = m.group(1).strip()
    if _QUALIFIERS.sub("", ctype).strip() == "":
        return param, ""
    if m.group(3):
        ctype += "*"
    return ctype, m.group(2)


def params_from_source(source: str, kernel: str) -> list[tuple[str, str]] | None:
    """(type, name) of each parameter of ``__global__`` function ``kernel`` in CUDA source."""
    for m in re.finditer(r"__global__", source):
        pos = m.end()
        while True:
            nm = re.compile(r"\b([A-Za-z_]\w*)\s*\(").search(source, pos)
            if not nm:
                break
            close = _matching_paren(source, nm.end() - 1)
            if close < 0:
                break
            if nm.group(1) in ("__launch_bounds__", "__cluster_dims__", "__maxnreg__",
                               "alignas", "__align__", "__declspec"):
                pos = close + 1
                continue
            if nm.group(1) == kernel:
                args = source[nm.end():close]
                return [_split_decl(p) for p in split_top_level(" ".join(args.split()))
                        if p and p != "void"]
            break
    return None


def layout(types: list[str], names: list[str] | None = None) -> tuple[KernelParam, ...]:
    """Parameters with C-ABI offsets (each aligned to its size) until a type of unknown size."""
    names = list(names or [])
    count = max(len(types), len(names))
    out: list[KernelParam] = []
    offset: int | None = 0
    for i in range(count):
        ctype = types[i] if i < len(types) else ""
        name = names[i] if i < len(names) else ""
        size = type_size(ctype) if ctype else None
        here = None
        if offset is not None and size is not None:
            align = min(size, 16) or 1
            here = (offset + align - 1) // align * align
            offset = here + size
        else:
            offset = None
        out.append(KernelParam(i, ctype, name, here, size))
    return tuple(out)


def resolve_params(demangled: str, source: str | None = None,
                   names: list[str] | None = None) -> tuple[KernelParam, ...]:
    """Parameters of a kernel from its demangled name, its source and/or a list of names.

    Types: the demangled signature, else the source. Names: ``names`` when given, else the source.
    """
    base, types = demangled_parts(demangled)
    src = params_from_source(source, base) if source else None
    if not types and src:
        types = [t for t, _ in src]
    if names is None and src:
        names = [n for _, n in src]
    return layout(types, names)


def param_for_offset(params: tuple[KernelParam, ...], offset: int) -> KernelParam | None:
    """The parameter whose bytes hold ``offset`` (relative to the parameter base)."""
    for p in params:
        if p.offset_bytes is not None and p.size_bytes is not None and \
                p.offset_bytes <= offset < p.offset_bytes + p.size_bytes:
            return p
    return None
