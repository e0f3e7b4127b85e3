"""Get SASS out of binaries and sources: cubins, fatbins, objects, executables, shared libraries,
saved listings, and ``.cu`` files compiled here (nvcc, or NVRTC when nvcc is absent).

* A cubin (ELF with ``e_machine == EM_CUDA``) is disassembled with ``nvdisasm -c -g`` when nvdisasm
  is present (source lines and labels kept), else with ``cuobjdump -sass``.
* Anything else CUDA (fatbin, ``.o``, executable, ``.so``) goes through ``cuobjdump -sass``,
  streamed function by function, with ``-fun`` when only a few kernels are selected (for one
  kernel of libcusparse that is 0.6 s instead of minutes).
* Kernel names come first from ``cuobjdump -res-usage`` (fast, and it carries the resource figures),
  are demangled in one ``c++filt`` call, and are selected by a regular expression matched against
  the mangled or the demangled name.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sparsescope._tools import ToolError, demangle, find_tool, run_tool, stream_tool
from sparsescope.errors import MissingDependencyError, UsageError
from sparsescope.sass.listing import (
    KernelListing,
    is_listing_file,
    iter_cuobjdump,
    iter_nvdisasm,
    read_listing,
)
from sparsescope.sass.resources import KernelResources, parse_ptxas_verbose, parse_res_usage

EM_CUDA = 190
#: With at most this many kernels selected, cuobjdump is asked for them by name (``-fun``).
MAX_FUN_NAMES = 64


@dataclass(frozen=True)
class KernelEntry:
    """A kernel found in a binary or listing, before disassembly."""

    name: str
    """Name as in the binary (mangled for C++ kernels)."""
    demangled: str
    arch: str
    resources: KernelResources | None


def is_cubin(path: str | Path) -> bool:
    """True for an ELF file built for the CUDA machine (``e_machine`` 190)."""
    with open(path, "rb") as fh:
        head = fh.read(20)
    return len(head) == 20 and head[:4] == b"\x7fELF" and int.from_bytes(head[18:20],
                                                                         "little") == EM_CUDA


def _arch_flag(arch: str | None) -> list[str]:
    return ["-arch", arch] if arch else []


def _matcher(kernel: str | None):
    if not kernel:
        return lambda name, demangled: True
    try:
        rx = re.compile(kernel)
    except re.error as exc:
        raise UsageError(f"--kernel {kernel!r} is not a valid regular expression: {exc}") from exc
    return lambda name, demangled: bool(rx.search(name) or rx.search(demangled))


def list_kernels(path: str | Path, *, arch: str | None = None,
                 kernel: str | None = None) -> list[KernelEntry]:
    """Kernels in a CUDA binary or a saved listing, optionally filtered by a name regex."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    match = _matcher(kernel)
    if is_listing_file(path):
        listings = read_listing(path)
        names = demangle([k.name for k in listings])
        return [KernelEntry(k.name, names[k.name], k.arch, None) for k in listings
                if (not arch or not k.arch or k.arch == arch) and match(k.name, names[k.name])]
    proc = run_tool("cuobjdump", ["-res-usage", *_arch_flag(arch), str(path)],
                    purpose="listing the kernels of a CUDA binary", check=False)
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise ToolError(f"{path}: cuobjdump cannot read it ({msg[-1] if msg else 'no output'}); "
                        "expected a cubin, fatbin, object, executable or shared library with "
                        "device code")
    res = parse_res_usage(proc.stdout)
    names = demangle([n for n, _ in res])
    return [KernelEntry(n, names[n], a, r) for (n, a), r in res.items() if match(n, names[n])]


def _stream_binary(path: Path, arch: str | None, selected: set[str]) -> Iterator[KernelListing]:
    select = selected.__contains__
    if is_cubin(path) and find_tool("nvdisasm") is not None:
        proc = run_tool("nvdisasm", ["-c", "-g", str(path)], purpose="disassembling a cubin",
                        check=False)
        # an nvdisasm older than the cubin's architecture fails: cuobjdump may still read it
        if proc.returncode == 0:
            yield from iter_nvdisasm(proc.stdout.splitlines(), select,
                                     source=f"nvdisasm output for {path}")
            return
    args = ["-sass", *_arch_flag(arch)]
    if len(selected) <= MAX_FUN_NAMES:
        args += ["-fun", ",".join(sorted(selected))]
    with stream_tool("cuobjdump", [*args, str(path)], purpose="disassembling CUDA code") as lines:
        yield from iter_cuobjdump(lines, select, source=f"cuobjdump -sass output for {path}")


def iter_kernels(path: str | Path, *, arch: str | None = None, kernel: str | None = None
                 ) -> Iterator[tuple[KernelEntry, KernelListing]]:
    """(entry, listing) of every selected kernel of a binary or listing, streamed."""
    path = Path(path)
    entries = list_kernels(path, arch=arch, kernel=kernel)
    if not entries:
        return
    by_key = {(e.name, e.arch): e for e in entries}
    by_name = {e.name: e for e in entries}
    if is_listing_file(path):
        wanted = set(by_name)
        for lst in read_listing(path, wanted.__contains__):
            if arch and lst.arch and lst.arch != arch:
                continue
            yield by_key.get((lst.name, lst.arch), by_name[lst.name]), lst
        return
    for lst in _stream_binary(path, arch, set(by_name)):
        entry = by_key.get((lst.name, lst.arch)) or by_name.get(lst.name)
        if entry is not None:
            yield entry, lst


# --------------------------------------------------------------------------- compiling


@dataclass(frozen=True)
class CompiledSource:
    """A CUDA source compiled to a cubin for one architecture."""

    cubin: Path
    arch: str
    source: str
    """The CUDA source text (for parameter names)."""
    ptxas_log: str
    """``-Xptxas -v`` output: registers, stack, spills per kernel."""
    compiler: str
    """``nvcc`` or ``nvrtc``."""
    lowered_names: dict[str, str] = field(default_factory=dict)
    """Name expression -> the kernel's name in the cubin (mangled), for the ``name_expressions``
    compiled (NVRTC's ``nvrtcGetLoweredName``; empty with nvcc: find the kernel by its
    demangled name)."""
    version: str = ""
    """The compiler's version where known (NVRTC's ``13.5``); empty for nvcc."""


def compile_cuda(source: str | Path, arch: str = "sm_90", *, out_dir: str | Path | None = None,
                 options: tuple[str, ...] = (), name_expressions: tuple[str, ...] = (),
                 compiler: str | None = None) -> CompiledSource:
    """Compile a ``.cu`` file or a source string to a cubin with ``-lineinfo``.

    ``compiler``: ``nvrtc`` (``libnvrtc`` through ctypes, the compiler CuPy runs), ``nvcc``, or
    None: nvcc when found, else NVRTC -- but NVRTC first when ``name_expressions`` are given
    and libnvrtc loads. ``name_expressions`` (``"csr_vector<float, int, 8>"``) are template
    instances to compile without an explicit instantiation in the source: NVRTC takes them by
    ``nvrtcAddNameExpression`` and reports their lowered names
    (:attr:`CompiledSource.lowered_names`); nvcc gets a host-side reference to each appended to
    the source (which instantiates the kernel), its names to be found by demangling.
    ``options`` pass through to either compiler (``-std=c++17``).

    A file is compiled where it lies (nvcc) or with its folder on the include path (NVRTC), so its
    relative ``#include``s resolve and the line info names the real file. Without ``out_dir`` the
    cubin goes to a new temporary folder that the caller owns (:func:`analyse_source` removes it).
    """
    if compiler not in (None, "nvcc", "nvrtc"):
        raise UsageError(f"compiler must be nvcc or nvrtc, got {compiler!r}")
    path = None
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                    and source.endswith((".cu", ".cuh")) and Path(source).exists()):
        path = Path(source).resolve()
        text, name = path.read_text(), path.stem
    else:
        text, name = str(source), "kernel"
    if compiler is None:
        compiler = "nvcc" if find_tool("nvcc") is not None else "nvrtc"
        if name_expressions and compiler == "nvcc" and nvrtc_available():
            compiler = "nvrtc"
    out = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="sparsescope-sass-"))
    out.mkdir(parents=True, exist_ok=True)
    cubin = out / f"{name}_{arch}.cubin"
    if compiler == "nvcc":
        src = path
        if src is None or name_expressions:
            src = out / f"{name}.cu"
            head = f'#line 1 "{path}"\n' if path is not None else ""
            src.write_text(head + text + _host_references(name_expressions))
        proc = run_tool("nvcc", ["-cubin", f"-arch={arch}", "-lineinfo", "-Xptxas", "-v",
                                 *(("-I", str(path.parent)) if path is not None else ()),
                                 *options, "-o", str(cubin), str(src)],
                        purpose="compiling CUDA source for SASS analysis")
        return CompiledSource(cubin, arch, text, proc.stderr + proc.stdout, "nvcc")
    include = (f"-I{path.parent}",) if path is not None else ()
    image, log, lowered = _nvrtc_compile(text, name, arch, (*include, *options),
                                         name_expressions)
    cubin.write_bytes(image)
    return CompiledSource(cubin, arch, text, log, "nvrtc", lowered, nvrtc_version())


def _host_references(name_expressions: tuple[str, ...]) -> str:
    """Source appended for nvcc: one host-side reference per name expression (taking a kernel
    template's address instantiates it, device code included)."""
    if not name_expressions:
        return ""
    refs = "".join(f"static const void* const __sparsescope_instance_{k} = "
                   f"(const void*)&{expr};\n" for k, expr in enumerate(name_expressions))
    return "\n// sparsescope: instances to compile\n" + refs


@functools.cache
def _nvrtc_library() -> ctypes.CDLL:
    from sparsescope._tools import candidate_dirs

    override = os.environ.get("SPARSESCOPE_NVRTC")
    names = [override] if override else []
    for folder in candidate_dirs("nvrtc"):
        for sub in ("lib64", "lib"):
            lib = folder.parent / sub
            if lib.is_dir():
                names.extend(str(p) for p in sorted(lib.glob("libnvrtc.so*"), reverse=True)
                             if "builtins" not in p.name)
    names += ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    for candidate in names:
        folder = Path(candidate).parent
        # libnvrtc dlopens its builtins by soname: load them first from the same folder
        for builtins in sorted(folder.glob("libnvrtc-builtins.so*")) if str(folder) != "." else []:
            try:
                ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
                break
            except OSError:
                continue
        try:
            return ctypes.CDLL(candidate)
        except OSError:
            continue
    raise MissingDependencyError("neither nvcc nor libnvrtc was found (needed to compile CUDA "
                                 "source); install a CUDA toolkit or pip install nvidia-cuda-nvrtc")


def nvrtc_available() -> bool:
    """libnvrtc can be loaded (:func:`compile_cuda` with ``compiler="nvrtc"`` will work)."""
    try:
        _nvrtc_library()
    except MissingDependencyError:
        return False
    return True


def nvrtc_version() -> str:
    """``13.5``: the version of the libnvrtc :func:`compile_cuda` loads."""
    lib = _nvrtc_library()
    major, minor = ctypes.c_int(), ctypes.c_int()
    if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) != 0:
        return "unknown"
    return f"{major.value}.{minor.value}"


def _nvrtc_compile(text: str, name: str, arch: str, options: tuple[str, ...],
                   name_expressions: tuple[str, ...] = ()) -> tuple[bytes, str, dict[str, str]]:
    """Compile with NVRTC to a cubin (``--gpu-architecture=sm_XX -lineinfo``); with
    ``name_expressions``, each is added before compiling (instantiating the template) and its
    lowered (mangled) name read after. Returns (cubin, log, expression -> lowered name)."""
    lib = _nvrtc_library()
    prog = ctypes.c_void_p()
    check = _nvrtc_checker(lib)
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), text.encode(), f"{name}.cu".encode(), 0,
                                 None, None), "nvrtcCreateProgram")
    try:
        for expr in name_expressions:
            check(lib.nvrtcAddNameExpression(prog, expr.encode()),
                  f"nvrtcAddNameExpression({expr!r})")
        opts = [f"--gpu-architecture={arch}", "-lineinfo", "--ptxas-options=-v", *options]
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        status = lib.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace")
        if status != 0:
            raise ToolError(f"NVRTC failed to compile {name}.cu for {arch}: {log.strip()[-2000:]}")
        lowered = {}
        for expr in name_expressions:
            out = ctypes.c_char_p()
            check(lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(out)),
                  f"nvrtcGetLoweredName({expr!r})")
            lowered[expr] = out.value.decode()
        check(lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
        image = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetCUBIN(prog, image), "nvrtcGetCUBIN")
        return image.raw, log, lowered
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _nvrtc_checker(lib: ctypes.CDLL):
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(status: int, what: str) -> None:
        if status != 0:
            raise ToolError(f"{what} failed: {lib.nvrtcGetErrorString(status).decode()}")

    return check


def compiled_resources(compiled: CompiledSource) -> dict[str, KernelResources]:
    """ptxas figures of a compiled source, by kernel name."""
    return parse_ptxas_verbose(compiled.ptxas_log)
