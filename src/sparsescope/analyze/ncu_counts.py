"""What Nsight Compute counted for one profiled SpMV call: the counts the time model predicts,
read from an ncu export (``sparsescope model score --profile-check``, :mod:`.profile_check`).

**The kernel.** The raw page (``*_raw.csv``, xz- or gzip-compressed or not) holds one row per
profiled launch. Helper launches are passed over: fills, copies, memsets, the runner's poison
of y and a library's row partition (:data:`HELPER_KERNEL`). Of the rest, the kernel with the
most warp instructions is the call's own (``csrmv_v3_kernel`` of a cuSPARSE call, ``spmv_tile``
beside its ``spmv_fixup``); its first launch is read (older exports hold several calls)::

    warp instructions = smsp__inst_executed.sum
    DRAM bytes read   = dram__bytes_read.sum
    duration          = gpu__time_duration.sum
    warps launched    = launch__grid_size x ceil(launch__block_size / 32)

**The loops** (the source page, ``*_source.csv``, where the export has one): the kernel's SASS
with the warp-level executions of every instruction. Addresses are absolute (the first
instruction's address is subtracted for offsets); branch targets are too, so the control flow
(:func:`sparsescope.sass.cfg.build_cfg`: natural loops from back edges) is built on them as
printed. For each loop::

    iterations                  = executions of its header (the back edges' target)
    instructions an iteration   = instructions executed in its blocks / iterations
                                  (nested loops' instructions included)

The main loop is the one that executes the most instructions; the instructions executed outside
every loop, divided by the warps launched, are the per-warp code (setup, reduction, store).

**The cases** (:func:`find_cases`): every raw-page export in the folders and below; the matrix
and the backend from its name, ``profile_SUITE_MATRIX_BACKEND`` (``sparsescope profile run``:
the matrix ends at the first ``_`` a registered backend's name follows) or
``MATRIX.spmvK.BACKEND[options]`` (``sparsescope profile cases``), else its folder's name.
Another op's case, or a name neither way, is passed over with a note.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sparsescope._compressed import kept_file, without_compression
from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.profile import metrics as M
from sparsescope.profile.records import KernelProfile, short_kernel_name, without_parameters

#: Launches that are not the call's kernel: CuPy/PyTorch fills and copies, memsets, the
#: runner's poison of y, a library's row partition (cuSPARSE ``csr_partition_kernel``).
HELPER_KERNEL = re.compile(r"fill|copy|memset|poison|partition", re.IGNORECASE)
DRAM_READ = "dram__bytes_read.sum"
#: The ops whose profiles the check reads (the model's loop counts are SpMV kernels').
CHECKED_OPS = frozenset({"spmv"})
_PROFILE_NAME = re.compile(r"^profile_(?P<suite>[^_]+)_(?P<rest>.+)$")
_CASE_NAME = re.compile(r"^(?P<matrix>.+)\.(?P<op>[a-z]+)\d+\.(?P<backend>.+)$")
_RAW = re.compile(r"_raw\.csv(\.xz|\.gz)?$")
_ANONYMOUS = re.compile(r"(?:<unnamed>|\(anonymous namespace\)|unnamed>)::")
_CAST = re.compile(r"\((?:unsigned\s+)?(?:int|long|long long|short|char|bool)\)")


def kernel_instance(name: str) -> str:
    """The template instance of a kernel name, as the model names it:
    ``void spmv_sell<float, (int)0, (int)1>(int, const int *)`` -> ``spmv_sell<float, 0, 1>``
    (the source page's casts, the return type, the parameter list and anonymous namespaces
    dropped; blanks made single)."""
    text = _CAST.sub("", _ANONYMOUS.sub("", name)).strip()
    text = without_parameters(text.removeprefix("void ").strip())
    return re.sub(r"\s+", " ", text).strip()


def template_arguments(name: str) -> str:
    """The template arguments of :func:`kernel_instance` without namespaces (``std::``), or ""
    for a name without them: what tells two instances of one kernel apart."""
    instance = kernel_instance(name)
    if "<" not in instance:
        return ""
    args = instance[instance.index("<"):]
    return re.sub(r"\w+::", "", args).replace(" ", "")


def same_kernel(a: str, b: str) -> bool:
    """Whether two names are the same kernel: the same function, and the same template
    arguments where both names give them (the model names a library's kernel without them)."""
    if short_kernel_name(a) != short_kernel_name(b):
        return False
    ta, tb = template_arguments(a), template_arguments(b)
    return not ta or not tb or ta == tb


@dataclass(frozen=True)
class NcuLoop:
    """One natural loop of the profiled kernel's SASS, with its executions."""

    header_offset: int
    """Bytes from the kernel's first instruction to the loop header (the back edges' target)."""
    end_offset: int
    """Offset of the loop's last instruction (containment of two loops: their offset ranges)."""
    static_instructions: int
    """Instructions in the loop's body, nested loops included (the SASS listing's count)."""
    iterations: int
    """Warp-level executions of the header's first instruction: the loop's iterations summed
    over warps."""
    executed_instructions: int
    """Warp-level executions of the instructions in its body, nested loops included."""
    depth: int
    """1 for an outermost loop."""

    @property
    def instructions_per_iteration(self) -> float | None:
        """None for a loop that never ran."""
        return self.executed_instructions / self.iterations if self.iterations else None

    def contains(self, other: NcuLoop) -> bool:
        return self.header_offset <= other.header_offset and other.end_offset <= self.end_offset

    def as_dict(self) -> dict:
        return {"header_offset": f"0x{self.header_offset:x}",
                "static_instructions": self.static_instructions,
                "iterations": self.iterations,
                "executed_instructions": self.executed_instructions,
                "instructions_per_iteration": self.instructions_per_iteration,
                "depth": self.depth}


@dataclass(frozen=True)
class SourceCounts:
    """The source page's block of the profiled kernel: its loops and the rest."""

    kernel: str
    """The kernel as the page's ``Kernel Name`` row names it."""
    instructions: int
    """Warp-level executions of every instruction (within a few hundred of the raw page's
    ``smsp__inst_executed.sum``: the page comes from its own replay)."""
    loops: tuple[NcuLoop, ...]
    """Every natural loop, by header offset."""
    outside_instructions: int
    """Executions of the instructions outside every loop."""

    @property
    def main_loop(self) -> NcuLoop | None:
        """The loop that executes the most instructions (None: no loop ran)."""
        best = max(self.loops, key=lambda lp: lp.executed_instructions, default=None)
        return best if best is not None and best.executed_instructions > 0 else None

    def as_dict(self) -> dict:
        main = self.main_loop
        return {"kernel": self.kernel, "instructions": self.instructions,
                "outside_instructions": self.outside_instructions,
                "main_loop": f"0x{main.header_offset:x}" if main else None,
                "loops": [lp.as_dict() for lp in self.loops]}


@dataclass(frozen=True)
class NcuCounts:
    """What ncu counted for the call's own kernel (module docstring)."""

    kernel: str
    """The launch's demangled name as the raw page gives it."""
    gpu: str
    """The device ncu names (``NVIDIA H200``), or "" where the export holds no name."""
    warp_instructions: float
    dram_read_bytes: float | None
    """None where the export holds no ``dram__bytes_read.sum``."""
    duration_ns: float | None
    grid_blocks: int
    block_threads: int
    launches: int
    """Launches of this kernel in the export (several calls profiled: the first is read)."""
    other_kernels: tuple[str, ...] = ()
    """The call's other launches that are not helpers, each with its warp instructions
    (``spmv_fixup: 21,977 warp instructions``): not compared."""
    source: SourceCounts | None = None
    """The loops, where the export has a source page of this kernel."""

    @property
    def warps(self) -> int:
        return self.grid_blocks * math.ceil(self.block_threads / 32)

    def as_dict(self) -> dict:
        return {"kernel": self.kernel, "gpu": self.gpu,
                "warp_instructions": self.warp_instructions,
                "dram_read_bytes": self.dram_read_bytes, "duration_ns": self.duration_ns,
                "grid_blocks": self.grid_blocks, "block_threads": self.block_threads,
                "warps": self.warps, "launches": self.launches,
                "other_kernels": list(self.other_kernels),
                "source": self.source.as_dict() if self.source else None}


def main_launch(profiles: tuple[KernelProfile, ...], path: str | Path
                ) -> tuple[KernelProfile, int, tuple[str, ...]]:
    """(the call's own launch, launches of its kernel, the other kernels with their warp
    instructions) of an export's launches: the non-helper kernel with the most warp
    instructions, its first launch. A :class:`UsageError` naming ``path`` where every launch
    is a helper."""
    kept = [p for p in profiles if not HELPER_KERNEL.search(kernel_instance(p.demangled_name))]
    if not kept:
        names = ", ".join(dict.fromkeys(p.name for p in profiles))
        raise UsageError(f"{path}: every launch is a helper kernel ({names}), none to compare")
    def instructions(p: KernelProfile) -> float:
        return p.value(*M.WARP_INST) or 0.0

    top = max(kept, key=instructions)
    instance = kernel_instance(top.demangled_name)
    same = [p for p in kept if kernel_instance(p.demangled_name) == instance]
    others = {kernel_instance(p.demangled_name): instructions(p) for p in kept
              if kernel_instance(p.demangled_name) != instance}
    return same[0], len(same), tuple(f"{name}: {count:,.0f} warp instructions"
                                     for name, count in others.items())


def source_counts(path: str | Path, kernel: str) -> SourceCounts | None:
    """The loops of ``kernel`` on the source page at ``path`` (its first block of that kernel),
    or None where the page holds no block of it."""
    from sparsescope.sass.cfg import build_cfg
    from sparsescope.sass.instructions import parse_instruction
    from sparsescope.sass.source_page import read_source_page

    block = next((b for b in read_source_page(path)
                  if kernel_instance(b.kernel) == kernel_instance(kernel)), None)
    if block is None or not block.rows:
        return None
    rows = block.rows
    base = rows[0].address
    instructions = tuple(parse_instruction(r.address, r.sass) for r in rows)
    cfg = build_cfg(instructions)
    executed = [r.instructions_executed for r in rows]
    index_of = {ins.address: i for i, ins in enumerate(instructions)}
    loops = tuple(NcuLoop(
        header_offset=lp.header_address - base, end_offset=lp.end_address - base,
        static_instructions=lp.instructions, iterations=executed[index_of[lp.header_address]],
        executed_instructions=sum(executed[i] for i in cfg.instructions_of(lp.blocks)),
        depth=lp.depth) for lp in cfg.loops)
    outside = sum(n for n, loop in zip(executed, cfg.loop_of, strict=True) if loop == -1)
    return SourceCounts(kernel=block.kernel, instructions=sum(executed), loops=loops,
                        outside_instructions=outside)


def source_page_of(raw: Path) -> Path | None:
    """The source-page export beside a raw-page export (``X_raw.csv[.xz|.gz]`` ->
    ``X_source.csv``, else ``X_source.csv.xz`` or ``.gz``), or None."""
    stem = without_compression(raw.name).removesuffix(".csv").removesuffix("_raw")
    return kept_file(raw.parent / f"{stem}_source.csv")


def read_ncu_counts(raw: str | Path) -> NcuCounts:
    """:class:`NcuCounts` of the raw-page export at ``raw`` (module docstring), with the loops
    of the source page beside it where there is one."""
    from sparsescope.profile.read_csv import load_profiles_csv

    raw = Path(raw)
    launch, launches, others = main_launch(load_profiles_csv(raw), raw)
    source_path = source_page_of(raw)
    source = source_counts(source_path, launch.demangled_name) if source_path else None
    return NcuCounts(
        kernel=launch.demangled_name, gpu=launch.text(M.DEVICE_NAME) or "",
        warp_instructions=launch.value(*M.WARP_INST) or 0.0,
        dram_read_bytes=launch.value(DRAM_READ), duration_ns=launch.duration_ns,
        grid_blocks=int(launch.grid_size or 0), block_threads=int(launch.block_size or 0),
        launches=launches, other_kernels=others, source=source)


# -- the profiled cases a folder holds ----------------------------------------------------------
@dataclass(frozen=True)
class ProfiledCase:
    """One profiled call: its raw-page export and what its name says it ran."""

    raw: Path
    matrix: str
    backend: str
    """The backend's label, variant options included (``cuda-spmv-sell[tpr=2]``)."""
    suite: str = ""
    """The suite the name gives (``profile_seed6_...``); "" for a ``MATRIX.spmvK.B`` name."""


def _known_backend(label: str) -> str | None:
    """The op of the backend a label names (``name[options]``), or None for an unknown name."""
    from sparsescope.registry import backend_op

    try:
        return backend_op(label.partition("[")[0])
    except UnknownNameError:
        return None


def profiled_case(raw: Path) -> ProfiledCase | str:
    """The case a raw-page export holds, or why it is not an SpMV case this check reads."""
    name = _RAW.sub("", raw.name)
    found = _PROFILE_NAME.match(name)
    if found:
        rest = found["rest"]
        # the matrix ends at the first '_' after which a known backend's name follows
        for at in (i for i, ch in enumerate(rest) if ch == "_"):
            op = _known_backend(rest[at + 1:])
            if op is not None:
                case = ProfiledCase(raw, rest[:at], rest[at + 1:], found["suite"])
                return case if op in CHECKED_OPS else f"{name}: an {op} case; the check reads SpMV"
        return f"{name}: no known backend at the end of the name"
    for text in (name, raw.parent.name):
        found = _CASE_NAME.match(text)
        if found:
            if found["op"] not in CHECKED_OPS:
                return f"{name}: an {found['op']} case; the check reads SpMV"
            if _known_backend(found["backend"]) is None:
                return f"{name}: unknown backend {found['backend']!r}"
            return ProfiledCase(raw, found["matrix"], found["backend"])
    return (f"{name}: neither profile_SUITE_MATRIX_BACKEND nor MATRIX.spmvK.BACKEND (nor is "
            f"its folder's name)")


def find_cases(folders: Sequence[str | Path]) -> tuple[list[ProfiledCase], list[str]]:
    """(every SpMV case under ``folders``, searched through their subfolders, by matrix and
    backend; a note for each export passed over). A folder that does not exist or holds no
    raw-page export is a :class:`UsageError`."""
    cases: list[ProfiledCase] = []
    notes: list[str] = []
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise UsageError(f"{folder}: not a profile folder")
        raws = sorted(p for p in folder.rglob("*") if _RAW.search(p.name) and p.is_file())
        if not raws:
            raise UsageError(f"{folder}: no ncu raw-page export (*_raw.csv, *_raw.csv.xz or "
                             "*_raw.csv.gz) in it or below")
        for raw in raws:
            found = profiled_case(raw)
            (cases.append if isinstance(found, ProfiledCase) else notes.append)(found)
    return sorted(cases, key=lambda c: (c.matrix, c.backend, str(c.raw))), notes
