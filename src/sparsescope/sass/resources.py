"""Per-kernel resource usage from ``cuobjdump -res-usage`` and ``nvcc -Xptxas -v`` output.

``cuobjdump -res-usage`` prints, per function,
``REG:32 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:576 TEXTURE:0 SURFACE:0 SAMPLER:0``; ptxas prints
``Used 32 registers, used 0 barriers, 8 bytes smem, 400 bytes cmem[0]`` and
``0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads``. Both readers return the same
record; :func:`merge_resources` combines them (cuobjdump's figures win, ptxas adds spills and
barriers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class KernelResources:
    """Static resources of one compiled kernel."""

    name: str
    """Function name as in the binary (mangled for C++ kernels)."""
    arch: str = ""
    """Architecture the figures are for (``sm_90``), when the output says."""
    registers: int = 0
    """Registers per thread."""
    shared_bytes: int = 0
    """Static shared memory per block, bytes (dynamic shared memory is set at launch)."""
    local_bytes: int = 0
    """Local memory per thread, bytes (spills and stack-allocated arrays)."""
    stack_bytes: int = 0
    """Stack frame per thread, bytes."""
    constant_bytes: int = 0
    """Constant bank 0 bytes (kernel parameters and driver-reserved words)."""
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    barriers: int = 0
    """Named barriers used."""
    source: str = ""
    """``cuobjdump``, ``ptxas`` or ``cuobjdump+ptxas``."""


_RES_FN = re.compile(r"^\s*Function\s+(\S+?):\s*$")
_RES_ITEM = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
_ARCH = re.compile(r"^\s*arch\s*=\s*(sm_\w+)")


def parse_res_usage(text: str) -> dict[tuple[str, str], KernelResources]:
    """``cuobjdump -res-usage`` output -> {(name, arch): resources}."""
    out: dict[tuple[str, str], KernelResources] = {}
    arch = ""
    name: str | None = None
    for line in text.splitlines():
        am = _ARCH.match(line)
        if am:
            arch = am.group(1)
            continue
        fm = _RES_FN.match(line)
        if fm:
            name = fm.group(1)
            continue
        if name is not None and "REG:" in line:
            items = dict(_RES_ITEM.findall(line))
            out[(name, arch)] = KernelResources(
                name=name, arch=arch, registers=int(items.get("REG", 0)),
                shared_bytes=int(items.get("SHARED", 0)), local_bytes=int(items.get("LOCAL", 0)),
                stack_bytes=int(items.get("STACK", 0)),
                constant_bytes=int(items.get("CONSTANT[0]", 0)), source="cuobjdump")
            name = None
    return out


_PTX_FN = re.compile(r"(?:Compiling entry function|Function properties for)\s+'?([^'\s]+)'?"
                     r"(?:\s+for\s+'(sm_\w+)')?")
_PTX_USED = re.compile(r"Used (\d+) registers")
_PTX_NUM = {
    "stack_bytes": re.compile(r"(\d+) bytes stack frame"),
    "spill_store_bytes": re.compile(r"(\d+) bytes spill stores"),
    "spill_load_bytes": re.compile(r"(\d+) bytes spill loads"),
    "barriers": re.compile(r"used (\d+) barriers"),
    "shared_bytes": re.compile(r"(\d+) bytes smem"),
    "constant_bytes": re.compile(r"(\d+) bytes cmem\[0\]"),
    "local_bytes": re.compile(r"(\d+) bytes lmem"),
}


def parse_ptxas_verbose(text: str) -> dict[str, KernelResources]:
    """``nvcc -Xptxas -v`` output -> {name: resources} (entry functions only)."""
    fields: dict[str, dict[str, object]] = {}
    name: str | None = None
    for line in text.splitlines():
        fm = _PTX_FN.search(line)
        if fm:
            name = fm.group(1)
            rec = fields.setdefault(name, {})
            if fm.group(2):
                rec["arch"] = fm.group(2)
            continue
        if name is None:
            continue
        rec = fields[name]
        um = _PTX_USED.search(line)
        if um:
            rec["registers"] = int(um.group(1))
        for key, rx in _PTX_NUM.items():
            m = rx.search(line)
            if m:
                rec[key] = int(m.group(1))
    return {n: KernelResources(name=n, source="ptxas", **f) for n, f in fields.items()
            if "registers" in f}


def merge_resources(cuobjdump: KernelResources | None,
                    ptxas: KernelResources | None) -> KernelResources | None:
    """One record from both readers: cuobjdump's figures, ptxas's spills and barriers."""
    if cuobjdump is None or ptxas is None:
        return cuobjdump or ptxas
    return replace(cuobjdump, spill_store_bytes=ptxas.spill_store_bytes,
                   spill_load_bytes=ptxas.spill_load_bytes, barriers=ptxas.barriers,
                   source="cuobjdump+ptxas")
