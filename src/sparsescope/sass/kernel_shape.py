"""A kernel's shape read from its own SASS: compile one template instance of an own kernel
(``backends/kernels/*.cu``) the way CuPy does at run time -- NVRTC, ``-std=c++17``, the instance
named by its name expression -- disassemble it, and replace the figures a backend declares from
its template parameters with what the compiler made of them.

What the compiler changes (sm_90; the same figures from NVRTC 13.5, from NVRTC 13.0 -- CuPy
14.2's, whose own cached cubins were checked too -- and from nvcc 13.0):

* ``csr_scalar`` / ``csr_vector`` (any TPR, float or double): the source loop takes one nonzero
  per thread per iteration; the compiler unrolls it 4x, then the 4x loop 4x again. Of a thread's
  ``n`` nonzeros the SASS takes the first ``n mod 4`` one at a time (the remainder loop, 3 loads
  each), then 16 per iteration while more than 12 remain, then a straight-line copy of 8 if 8 or
  more remain and one of 4 if 4 remain (peeled): ``n mod 4 + n // 16 + (n mod 16) // 8 +
  (n mod 8) // 4`` iterations, where 16 per iteration with a remainder step of 1 counts
  ``n // 16 + n mod 16``.
* ``spmv_sell`` (IDX 0): UNROLL 4 becomes 8 steps per SASS iteration, an odd first UNROLL
  peeled; UNROLL 2 becomes 8 steps too, with a remainder loop of 2. The software pipelining
  holds for half of a SASS iteration: the second half's gathers wait for columns loaded in the
  same iteration (2 rounds per 8 steps where the template says 2 per UNROLL). delta16 (IDX 1):
  UNROLL 2 becomes 4 steps (odd iteration peeled), UNROLL 4 stays 4; 1 x 3 blocks stay UNROLL
  blocks (3 x UNROLL gathers).
* ``spmv_sell_dae``: STEPS x B gathers per chunk, STEPS = STAGE x 4 / sizeof(T): half of STAGE
  for double.
* ``spmv_tile``: no loop over nonzeros: a block's work is the grid-stride loop over its tiles,
  whose body holds the ITERS chunks of 4 (the loop the gathers are in, not the innermost loop of
  row-pointer loads that :attr:`ControlFlow.hot_loop` would pick).

Rules (see :mod:`sparsescope.sass.mlp` for the batches and chains):

* **nonzeros per iteration** = gathers per iteration of the loop holding the most gathers: loads
  whose base pointer is the kernel's ``x`` parameter. A 1 x B block gathers B entries of x for
  its B stored values, so B nonzeros in the shape's count. Or, with ``loads_per_nonzero``,
  ``loads per iteration / loads_per_nonzero`` (:func:`loads_per_nonzero` gives the figure for an
  own kernel; it holds for the CSR and SELL loops, not for the tile and staged kernels whose
  loops also load descriptors, row pointers or cp.async pieces).
* **remainder step** = gathers per iteration of the remainder loop (another innermost loop with
  gathers), 0 when there is none or it takes as many as the main loop.
* **issue schedule** (:mod:`sparsescope.sass.issue_order`): the loop's loads and the
  instructions waiting for them, in issue order, which the time model walks for the iteration's
  time; none for a staged kernel (its waits go through shared memory), a loop whose gathers
  are conditional, or one that holds another loop (``spmv_tile``'s row-pointer loop).
* **rounds per iteration** = 1 + the longest same-iteration chain ending at a gather, at most 2:
  a longer chain holds the work unit's own descriptor (``spmv_tile``'s tile bounds, loaded in
  its grid-stride loop), which the shape counts in ``setup_rounds``. A staged kernel keeps its
  declared rounds: a chain through shared memory (``LDGSTS col -> LDS -> LDG x``) is invisible.

Nothing here raises for a missing tool: without a compiler (NVRTC or nvcc) or cuobjdump
:func:`kernel_mlp_of` gives None and :func:`refine` the declared shape.
"""

from __future__ import annotations

import re
import tempfile
import threading
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from fractions import Fraction

from sparsescope._tools import find_tool
from sparsescope.errors import MissingDependencyError, SparsescopeError
from sparsescope.model.kernel_shape import KernelShape
from sparsescope.sass import sass_cache
from sparsescope.sass.mlp import KernelMLP, _short_name, kernel_mlp
from sparsescope.sass.programs import (
    Program,
    idle_cores,
    plan_programs,
    program_text,
    without_namespace,
)

#: NVRTC options CuPy's RawModule gets from the backends (``hardware._gpu_runtime.raw_module``).
OPTIONS = ("-std=c++17",)
#: The parameter the own kernels gather from.
GATHER_PARAM = "x"
#: At most 2 rounds per iteration: ``col -> x`` (see the module docstring).
MAX_ROUNDS = 2


def _same_name(a: str, b: str) -> bool:
    return re.sub(r"\s+", "", a) == re.sub(r"\s+", "", b)


def sass_tools_available() -> bool:
    """A compiler (libnvrtc or nvcc) and cuobjdump (kernel names and resources; it also
    disassembles where nvdisasm is absent) are present."""
    from sparsescope.sass.extract import nvrtc_available

    compiler = nvrtc_available() or find_tool("nvcc") is not None
    return compiler and find_tool("cuobjdump") is not None


def _compile_program(program: Program, arch: str) -> dict[tuple[str, str], KernelMLP]:
    """Compile ``program`` (``sass.programs``), disassemble its cubin once, measure each
    instance; (source, name expression) -> its :class:`KernelMLP` (raises)."""
    from sparsescope.hardware._gpu_runtime import kernel_source
    from sparsescope.sass.analysis import analyse_listing
    from sparsescope.sass.extract import compile_cuda, iter_kernels

    texts = {source: kernel_source(source) for source in program.sources}
    unit = program_text(program, texts)
    with tempfile.TemporaryDirectory(prefix="sparsescope-shape-") as folder:
        compiled = compile_cuda(unit.text, arch, out_dir=folder, options=OPTIONS,
                                name_expressions=tuple(unit.names.values()))
        pairs = list(iter_kernels(compiled.cubin))
    compiler = f"{compiled.compiler} {compiled.version}".strip()
    out = {}
    for (source, expr), name in unit.names.items():
        lowered = compiled.lowered_names.get(name)
        found = [(e, lst) for e, lst in pairs if e.name == lowered or
                 (not lowered and _same_name(_short_name(e.demangled), name))]
        if not found:
            continue
        entry, listing = found[0]
        # the names the source compiled alone would show (its parameters, the schedule's
        # source), read against the source's own text
        demangled = without_namespace(entry.demangled, unit.namespaces.get(source, ""))
        analysis = analyse_listing(listing, demangled=demangled, resources=entry.resources,
                                   source=texts[source])
        out[(source, expr)] = replace(kernel_mlp(analysis, gather_param=GATHER_PARAM),
                                      kernel=expr, arch=arch, compiler=compiler)
    return out


def _run_program(program: Program, arch: str) -> dict[tuple[str, str], KernelMLP]:
    """:func:`_compile_program`, counted; a program of several sources that fails is compiled
    again a source at a time, so that a failure is its own source's (a warning naming its
    instances, which stay unread)."""
    try:
        found = _compile_program(program, arch)
    except MissingDependencyError:
        raise
    except (SparsescopeError, OSError) as exc:
        if len(program.parts) > 1:
            out: dict[tuple[str, str], KernelMLP] = {}
            for part in program.parts:
                out.update(_run_program(Program((part,)), arch))
            return out
        source, exprs = program.parts[0]
        warnings.warn(f"no SASS for {', '.join(exprs)} of {source}: {exc}", stacklevel=3)
        return {}
    sass_cache.count("programs")
    sass_cache.count("instances", program.instances)
    return found


def read_instances(wanted: Mapping[str, Sequence[str]], arch: str = "sm_90",
                   cores: int | None = None) -> dict[str, dict[str, KernelMLP | None]]:
    """:func:`kernel_mlp_of` of every instance of every source in ``wanted`` (source name ->
    name expressions): each read from the SASS cache folder (``sass.sass_cache``: the same
    source, instance, architecture, toolchain and reading code), the rest compiled in the
    programs of ``sass.programs.plan_programs`` (one for all the sources that can share it,
    cut for ``cores`` idle cores: :func:`~sparsescope.sass.programs.idle_cores` by default),
    side by side, each disassembled once, then stored there. None for an instance when tools
    are missing or its source does not compile (a warning)."""
    from sparsescope.hardware._gpu_runtime import kernel_source

    asked = {s: tuple(dict.fromkeys(exprs)) for s, exprs in wanted.items()}
    found: dict[tuple[str, str], KernelMLP] = {}
    try:
        texts = {s: kernel_source(s) for s in asked}
        keys = {(s, e): sass_cache.entry_key(texts[s], e, arch, OPTIONS, GATHER_PARAM)
                for s, exprs in asked.items() for e in exprs}
        for instance, key in keys.items():
            hit = sass_cache.load(key)
            if isinstance(hit, KernelMLP):
                found[instance] = hit
        missing = [(s, [e for e in exprs if (s, e) not in found]) for s, exprs in asked.items()]
        missing = [(s, exprs) for s, exprs in missing if exprs]
        if missing:
            programs = plan_programs(missing, texts, idle_cores() if cores is None else cores)
            if len(programs) == 1:
                compiled = [_run_program(programs[0], arch)]
            else:
                # compilers and disassemblers are processes: threads wait for them side by side
                with ThreadPoolExecutor(max_workers=len(programs)) as pool:
                    compiled = list(pool.map(lambda p: _run_program(p, arch), programs))
            for result in compiled:
                for instance, mlp in result.items():
                    sass_cache.store(keys[instance], mlp)
                found.update(result)
    except MissingDependencyError:
        found = {}
    except (SparsescopeError, OSError) as exc:
        warnings.warn(f"no SASS for {', '.join(asked)}: {exc}", stacklevel=2)
    return {s: {e: found.get((s, e)) for e in exprs} for s, exprs in asked.items()}


def kernel_mlps_of(source_name: str, name_expressions: tuple[str, ...] | list[str],
                   arch: str = "sm_90") -> dict[str, KernelMLP | None]:
    """:func:`read_instances` of one source: its instances read from the SASS cache folder,
    the rest compiled together (one program, or one per idle core for many instances:
    ``sass.programs``) and stored."""
    return read_instances({source_name: name_expressions}, arch)[source_name]


_MEMO: dict[tuple[str, str, str], KernelMLP | None] = {}
"""(source, name expression, arch) -> what :func:`kernel_mlp_of` answered in this process."""
_MEMO_LOCK = threading.Lock()


def prefetch_all(wanted: Mapping[str, Sequence[str]], arch: str = "sm_90") -> None:
    """Read the SASS of every instance in ``wanted`` (source name -> name expressions) not yet
    answered in this process, in as few programs as :func:`read_instances` compiles: the
    kernels of a what-if and the candidates of an auto choice, planned first, cost one
    compile (or one per idle core) instead of one a source or a kernel."""
    todo = {s: [e for e in dict.fromkeys(exprs) if (s, e, arch) not in _MEMO]
            for s, exprs in wanted.items()}
    todo = {s: exprs for s, exprs in todo.items() if exprs}
    if not todo:
        return
    found = read_instances(todo, arch)
    with _MEMO_LOCK:
        for source, mlps in found.items():
            for expr, mlp in mlps.items():
                _MEMO.setdefault((source, expr, arch), mlp)


def prefetch(source_name: str, name_expressions, arch: str = "sm_90") -> None:
    """:func:`prefetch_all` of one source."""
    prefetch_all({source_name: name_expressions}, arch)


def kernel_mlp_of(source_name: str, name_expression: str, arch: str = "sm_90"
                  ) -> KernelMLP | None:
    """The :class:`KernelMLP` of one template instance of own kernel source ``source_name``
    (``spmv_csr.cu``), named as CuPy names it (``csr_vector<float, int, 8>``), compiled for
    ``arch`` by NVRTC (nvcc where libnvrtc is absent) with the backends' options, with the
    gather fields filled (parameter ``x``), ``kernel`` the name expression and ``compiler`` set
    (``nvrtc 13.5``).

    None, never an exception, when a compiler or cuobjdump is missing; a source that does not
    compile (a wrong name expression) gives None with a warning. Kept per (source, expression,
    arch) for the process (``kernel_mlp_of.cache_clear()`` forgets it, and the toolchain) and
    on disk across processes (``sass.sass_cache``); a compile takes about 1 s (NVRTC 0.1-0.8
    s, nvdisasm 0.3-0.5 s, the analysis 0.02 s), a disk read about a millisecond.
    """
    key = (source_name, name_expression, arch)
    if key not in _MEMO:
        prefetch(source_name, (name_expression,), arch)
    return _MEMO.get(key)


def _forget() -> None:
    with _MEMO_LOCK:
        _MEMO.clear()
    sass_cache.clear_toolchain()


kernel_mlp_of.cache_clear = _forget  # type: ignore[attr-defined]


def _template_args(name_expression: str) -> tuple[str, list[str]]:
    """``spmv_sell<float, 0, 1>`` -> (``spmv_sell``, [``float``, ``0``, ``1``])."""
    head, _, rest = name_expression.partition("<")
    return head.strip(), [a.strip() for a in rest.rstrip().rstrip(">").split(",")] if rest else []


def loads_per_nonzero(name_expression: str) -> Fraction | None:
    """Global loads one nonzero costs in the main loop of an own kernel, from its template
    arguments, as the SASS shows them (one load per element: the compiler does not merge them):

    * ``csr_scalar`` / ``csr_vector``: 3 (col, val, x);
    * ``spmv_sell<T, IDX, B, ...>``, per 1 x B block of B nonzeros: one column index (32-bit for
      IDX 0, ``LDG.U16`` for IDX 1), B values and B gathers, and for IDX 1 the escape load
      (``esc[...]``, present in the code of every step, run only for an escape):
      ``(1 + 2B) / B`` for IDX 0 (3), ``(2 + 2B) / B`` for IDX 1 (4 for delta16, 8/3 for the
      1 x 3 blocks);
    * None for ``spmv_tile`` (per chunk of 4 nonzeros one 16-byte value load, two for double,
      one column load, 16 bytes INT32 or 8 bytes delta16, and 4 gathers, but its loop also
      loads the tile's descriptor and row pointers) and ``spmv_sell_dae`` (its streams are
      cp.async pieces shared by the warp): count their gathers instead.
    """
    head, args = _template_args(name_expression)
    if head in ("csr_scalar", "csr_vector"):
        return Fraction(3)
    if head == "spmv_sell" and len(args) >= 3:
        idx, width = int(args[1]), int(args[2])
        return Fraction(1 + idx + 2 * width, width)
    return None


def shape_from_sass(shape: KernelShape, mlp: KernelMLP,
                    loads_per_nonzero: float | Fraction | None = None) -> KernelShape:
    """The declared ``shape`` with the figures the SASS shows (module docstring): nonzeros per
    iteration (gathers per iteration, or loads per iteration / ``loads_per_nonzero``), remainder
    step, rounds per iteration (declared for a staged kernel), and ``source`` saying so. A figure
    the SASS does not show keeps its declared value; with no gathers found (a listing read
    without its source) and no ``loads_per_nonzero`` the shape comes back unchanged."""
    if not loads_per_nonzero and not mlp.gathers_per_iteration:
        return shape

    def nonzeros(loads: int, gathers: int) -> int:
        if loads_per_nonzero:
            return round(loads / loads_per_nonzero)
        return gathers

    step = nonzeros(mlp.loads_per_iteration, mlp.gathers_per_iteration)
    if step <= 0:
        step = shape.nnz_per_iteration
    rem = 0
    if mlp.remainder_span is not None:
        rem = nonzeros(mlp.remainder_loads_per_iteration, mlp.remainder_gathers_per_iteration)
    if rem >= step:
        rem = 0
    peeled = _peeled_nonzeros(mlp, step)
    if shape.staged or mlp.staged or not mlp.gathers_per_iteration:
        rounds = shape.rounds_per_iteration
    else:
        rounds = min(MAX_ROUNDS, mlp.gather_rounds)
    where = ", ".join(p for p in (mlp.arch, mlp.compiler) if p)
    staged = shape.staged or mlp.staged
    return replace(shape, nnz_per_iteration=step, remainder_step=rem, peeled_nonzeros=peeled,
                   rounds_per_iteration=rounds,
                   issue_schedule=None if staged else mlp.schedule,
                   staged_path=mlp.staged_path if staged else None,
                   loop_instructions=mlp.loop_instructions,
                   remainder_instructions=mlp.remainder_instructions if rem else 0,
                   other_instructions=mlp.other_instructions + (
                       0 if rem else mlp.remainder_instructions),
                   local_bytes_per_iteration=mlp.local_bytes_per_iteration,
                   local_store_bytes_per_iteration=mlp.local_store_bytes_per_iteration,
                   local_frame_bytes=mlp.local_frame_bytes,
                   registers=mlp.registers or shape.registers,
                   shared_bytes=mlp.shared_bytes or shape.shared_bytes,
                   source=f"SASS of {mlp.kernel}" + (f" ({where})" if where else ""))


def _peeled_nonzeros(mlp: KernelMLP, step: int) -> int:
    """Nonzeros the gathers outside every loop take (``KernelShape.peeled_nonzeros``): the
    peeled gathers at the main loop's gathers a nonzero (``gathers_per_iteration / step``);
    0 where that is not fewer than a step (not a copy of the body's tail) or there are none.
    Hand check: csr_scalar, 16 gathers a 16-nonzero step, 12 peeled -> 12; spmv_sell UNROLL 4,
    8 gathers an 8-nonzero step, 4 peeled -> 4."""
    if step <= 0 or not mlp.gathers_per_iteration or not mlp.peeled_gathers:
        return 0
    peeled = round(mlp.peeled_gathers * step / mlp.gathers_per_iteration)
    return peeled if 0 < peeled < step else 0


def refine(shape: KernelShape, source_name: str, arch: str = "sm_90") -> KernelShape:
    """``shape`` (declared by a backend for ``shape.kernel``, a name expression of own kernel
    source ``source_name``) with the figures of its SASS for ``arch``; unchanged, ``source``
    included, when no SASS can be had (no compiler or disassembler)."""
    mlp = kernel_mlp_of(source_name, shape.kernel, arch)
    if mlp is None:
        return shape
    return shape_from_sass(shape, mlp)
