"""The template instances of several own kernel sources, grouped into as few compiler runs as
the machine's idle cores want: which instances go into which program, and one program's text.

A compiler run of an own kernel source costs a fixed part and a part per instance. Measured
with nvcc 13.0 for sm_90 on a 2-core machine (``benchmarks/model_speed.py``'s what-if, 17
instances of two sources): the fixed part is about 0.6 s of CPU -- the host preprocessor and
the C++ front end reading ``cuda_runtime.h`` (0.25 s, paid even with no instance) and the
disassembler's start (``nvdisasm`` builds its tables for 0.3 s before it reads the cubin) --
and an instance 0.03-0.09 s (NVVM and ptxas). So two sources compiled as two programs cost
two fixed parts, and as one program one: a program holds the instances of every source it can
take, and the instances are cut into more programs only for cores that would otherwise sit
idle (:func:`program_count`), never into programs of fewer than
:data:`MIN_INSTANCES_PER_PROGRAM` instances. On a busy machine one program is the fastest (the
same what-if: 1.4 s of CPU in one program against 2.2 s in two); on two idle cores two
programs of half the instances each finish sooner than one.

One program of several sources is one translation unit: each source inside a namespace of its
own (``sparsescope_source_K``: the same template names in two sources do not meet), its first
line numbered 1 again (``#line``), and every macro it defines undefined after it (none leaks
into the next). The instances are named in the namespace (``sparsescope_source_1::
spmv_sell<float, 0, 1, 1, 4, 6, 1>``) and read back without it, so each kernel's analysis
sees the names it would see compiled alone; a kernel's code does not depend on the other
kernels of its program (each is compiled and disassembled as a function of its own), which
``tests/sass/test_sass_programs.py`` checks against the per-source compile. A source that
includes a file or declares ``extern "C"`` names (which a namespace does not separate) is
compiled alone, as is a program's source when the program fails (the error is then its own).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: The fewest instances a program is cut to: a program of ``n`` instances on a core of its own
#: saves about ``n x 0.05 s`` of wall time and costs the machine another fixed part (0.6 s of
#: CPU, module docstring); below half of that fixed part in saved time (``n < 6``) the extra
#: process is not worth a shared machine's core.
MIN_INSTANCES_PER_PROGRAM = 6
#: Prefix of the namespace each source of a program of several sources is put in.
NAMESPACE = "sparsescope_source_"

_INCLUDE = re.compile(r"^\s*#\s*include\b", re.M)
_EXTERN_C = re.compile(r'\bextern\s+"C"')
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)", re.M)


@dataclass(frozen=True)
class Program:
    """One compiler run: some instances of one or more sources."""

    parts: tuple[tuple[str, tuple[str, ...]], ...]
    """(source name, its name expressions in this program), in source order."""

    @property
    def instances(self) -> int:
        return sum(len(exprs) for _, exprs in self.parts)

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(source for source, _ in self.parts)


@dataclass(frozen=True)
class ProgramText:
    """A program's source text and the name each instance has in it."""

    text: str
    names: dict[tuple[str, str], str]
    """(source name, name expression) -> the expression in the program (namespaced when the
    program holds several sources)."""
    namespaces: dict[str, str]
    """Source name -> its namespace (``sparsescope_source_0``); empty for one source."""


def mergeable(text: str) -> bool:
    """A source that can share a program: it includes no file (an ``#include`` inside a
    namespace would put the header's names there) and declares no ``extern "C"`` name (C
    names ignore namespaces, so two sources could clash)."""
    return not _INCLUDE.search(text) and not _EXTERN_C.search(text)


def idle_cores() -> int:
    """Logical cores this process may use less the machine's load (the 1-minute run-queue
    average, other users' jobs included), at least 1."""
    from sparsescope.hardware.cpuinfo import logical_cores

    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return max(1, int(logical_cores() - load + 0.5))


def program_count(instances: int, cores: int) -> int:
    """Programs to cut ``instances`` of mergeable sources into: one per idle core, each of at
    least :data:`MIN_INSTANCES_PER_PROGRAM` instances, at least one."""
    return max(1, min(cores, instances // MIN_INSTANCES_PER_PROGRAM))


def plan_programs(wanted: Sequence[tuple[str, Sequence[str]]], texts: Mapping[str, str],
                  cores: int) -> list[Program]:
    """The programs that compile ``wanted`` ((source, name expressions), in the order asked):
    the mergeable sources' instances, in that order, cut into :func:`program_count` runs of
    near-equal size (a run's instances of one source stay together); each other source a
    program of its own."""
    pooled = [(s, e) for s, exprs in wanted if mergeable(texts[s]) for e in exprs]
    alone = [Program(((s, tuple(exprs)),)) for s, exprs in wanted
             if exprs and not mergeable(texts[s])]
    count = program_count(len(pooled), cores)
    programs = []
    start = 0
    for k in range(count):
        end = start + (len(pooled) - start) // (count - k)
        chunk = pooled[start:end]
        start = end
        parts: dict[str, list[str]] = {}
        for source, expr in chunk:
            parts.setdefault(source, []).append(expr)
        if parts:
            programs.append(Program(tuple((s, tuple(e)) for s, e in parts.items())))
    return programs + alone


def program_text(program: Program, texts: Mapping[str, str]) -> ProgramText:
    """The translation unit of ``program`` (module docstring): a source alone is its own text,
    its instances named as asked."""
    if len(program.parts) == 1:
        source, exprs = program.parts[0]
        return ProgramText(texts[source], {(source, e): e for e in exprs}, {})
    pieces, names, spaces = [], {}, {}
    for k, (source, exprs) in enumerate(program.parts):
        space = f"{NAMESPACE}{k}"
        spaces[source] = space
        text = texts[source]
        undefine = "".join(f"#undef {m}\n" for m in dict.fromkeys(_DEFINE.findall(text)))
        pieces.append(f'namespace {space} {{\n#line 1 "{source}"\n{text}\n}}\n{undefine}')
        names.update({(source, e): f"{space}::{e}" for e in exprs})
    return ProgramText("".join(pieces), names, spaces)


def without_namespace(demangled: str, namespace: str) -> str:
    """A demangled name as the source compiled alone would give it (``void
    sparsescope_source_1::spmv_tile<...>(...)`` -> ``void spmv_tile<...>(...)``)."""
    return demangled.replace(f"{namespace}::", "") if namespace else demangled
