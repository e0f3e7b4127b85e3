"""Find and run the CUDA command-line tools: nvcc, ptxas, cuobjdump, nvdisasm, ncu, c++filt.

Search order for a tool (first hit wins):

0. ``$SPARSESCOPE_<TOOL>`` (``SPARSESCOPE_NCU``, ``SPARSESCOPE_CFILT`` for c++filt): an explicit
   executable, used as given;
1. ``PATH`` (``shutil.which``);
2. ``$CUDA_HOME/bin`` and ``$CUDA_PATH/bin``;
3. ``/usr/local/cuda/bin`` then ``/usr/local/cuda-*/bin``, newest version first
   (:data:`TOOLKIT_GLOBS`);
4. the tool's own install folders (:data:`TOOL_DIR_GLOBS`: standalone Nsight Compute under
   ``/opt/nvidia/nsight-compute*`` for ncu), newest version first;
5. the NVIDIA pip wheels: ``site-packages/nvidia/cu13/bin``, ``nvidia/cu12/bin`` and the older
   per-tool layout ``nvidia/cuda_<tool>/bin`` (``nvidia-cuda-cuobjdump``, ``nvidia-cuda-nvdisasm``).

"Newest" compares the numbers in a folder's name as integers (``cuda-12.10`` after
``cuda-12.9``), not as text.

A missing tool raises :class:`~sparsescope.errors.MissingDependencyError` whose message says what
to install: the ``profile`` extra for cuobjdump/nvdisasm/ncu, a CUDA toolkit for nvcc/ptxas,
binutils for c++filt. A tool that runs but fails raises :class:`ToolError` with its stderr.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import site
import subprocess
import sys
import warnings
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path

from sparsescope.errors import MissingDependencyError, SparsescopeError

#: tool -> what to install when it is missing
INSTALL_HINT = {
    "cuobjdump": "pip install 'sparsescope[profile]' (wheel nvidia-cuda-cuobjdump) "
                 "or a CUDA toolkit",
    "nvdisasm": "pip install 'sparsescope[profile]' (wheel nvidia-cuda-nvdisasm) "
                "or a CUDA toolkit",
    "ncu": "NVIDIA Nsight Compute (part of the CUDA toolkit)",
    "nvcc": "a CUDA toolkit (nvcc), or set CUDA_HOME to one",
    "ptxas": "a CUDA toolkit (ptxas), or set CUDA_HOME to one",
    "c++filt": "binutils (apt-get install binutils)",
}

#: environment variable that overrides the location of one tool (a full path)
ENV_OVERRIDE = "SPARSESCOPE_{}"

#: CUDA toolkit roots searched after CUDA_HOME/CUDA_PATH (their ``bin``), in this order; the
#: matches of one pattern newest version first.
TOOLKIT_GLOBS: tuple[str, ...] = ("/usr/local/cuda", "/usr/local/cuda-*")

#: tool -> further folders holding the executable itself (no ``bin``), searched after the
#: toolkits, the matches of one pattern newest version first. Standalone Nsight Compute installs
#: put ncu at ``/opt/nvidia/nsight-compute/<version>/ncu`` or ``nsight-compute-<version>/ncu``.
TOOL_DIR_GLOBS: dict[str, tuple[str, ...]] = {
    "ncu": ("/opt/nvidia/nsight-compute*", "/opt/nvidia/nsight-compute*/*"),
}


class ToolError(SparsescopeError):
    """A CUDA tool ran and failed (bad input file, unsupported architecture, ...)."""

    exit_code = 8


def _version_key(path: Path) -> tuple[int, ...]:
    numbers = re.findall(r"\d+", path.name)
    return tuple(int(n) for n in numbers) or (0,)


def _site_dirs() -> list[Path]:
    dirs: list[str] = []
    with contextlib.suppress(AttributeError):
        dirs.extend(site.getsitepackages())
    with contextlib.suppress(AttributeError):
        dirs.append(site.getusersitepackages())
    dirs.extend(p for p in sys.path if p.endswith("site-packages"))
    seen: list[Path] = []
    for d in dirs:
        path = Path(d)
        if path not in seen:
            seen.append(path)
    return seen


def _newest_first(pattern: str) -> list[Path]:
    return sorted((Path(p) for p in glob.glob(pattern)), key=_version_key, reverse=True)


def candidate_dirs(tool: str) -> list[Path]:
    """Folders searched for ``tool`` after PATH, in order (steps 2 to 5 of the module doc)."""
    out: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            out.append(Path(os.environ[var]) / "bin")
    for pattern in TOOLKIT_GLOBS:
        out.extend(p / "bin" for p in _newest_first(pattern))
    for pattern in TOOL_DIR_GLOBS.get(tool, ()):
        out.extend(_newest_first(pattern))
    for sp in _site_dirs():
        out.extend([sp / "nvidia" / "cu13" / "bin", sp / "nvidia" / "cu12" / "bin",
                    sp / "nvidia" / f"cuda_{tool}" / "bin", sp / "nvidia" / "cuda_nvcc" / "bin"])
    return out


@cache
def _find_cached(tool: str, path_env: str, cuda_dirs: tuple[str, str],
                 globs: tuple[tuple[str, ...], ...]) -> str | None:
    # Everything the search depends on is in the key (the globs too, so a changed table is
    # searched afresh); installs made while the process runs are not seen.
    hit = shutil.which(tool, path=path_env)
    if hit:
        return hit
    for folder in candidate_dirs(tool):
        exe = folder / tool
        if exe.is_file() and os.access(exe, os.X_OK):
            return str(exe)
    return None


def override_variable(tool: str) -> str:
    """The environment variable naming ``tool``'s executable: ``SPARSESCOPE_<TOOL>`` (upper
    case, ``-`` as ``_``; ``SPARSESCOPE_CFILT`` for c++filt)."""
    if tool == "c++filt":
        return ENV_OVERRIDE.format("CFILT")
    return ENV_OVERRIDE.format(tool.upper().replace("+", "").replace("-", "_"))


def find_tool(tool: str) -> Path | None:
    """Absolute path of ``tool``, or None when it is nowhere to be found.

    :func:`override_variable` names an explicit executable and wins over the search.
    """
    override = os.environ.get(override_variable(tool))
    if override:
        return Path(override)
    hit = _find_cached(tool, os.environ.get("PATH", ""),
                       (os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", "")),
                       (TOOLKIT_GLOBS, TOOL_DIR_GLOBS.get(tool, ())))
    return Path(hit) if hit else None


def searched_places(tool: str) -> str:
    """Where :func:`find_tool` looks for ``tool``, in words (for "not found" messages)."""
    places = [f"${override_variable(tool)}", "PATH", "$CUDA_HOME/bin", "$CUDA_PATH/bin",
              *(f"{g}/bin" for g in TOOLKIT_GLOBS), *TOOL_DIR_GLOBS.get(tool, ()),
              "the nvidia-cuda-* wheels"]
    return ", ".join(places)


def require_tool(tool: str, purpose: str = "") -> Path:
    """Like :func:`find_tool` but raise :class:`MissingDependencyError` naming what to install."""
    path = find_tool(tool)
    if path is None:
        why = f" (needed for {purpose})" if purpose else ""
        hint = INSTALL_HINT.get(tool, "the CUDA toolkit")
        raise MissingDependencyError(f"{tool} was not found ({searched_places(tool)}){why}; "
                                     f"install {hint}")
    return path


def run_tool(tool: str, args: Sequence[str], *, purpose: str = "", input_text: str | None = None,
             timeout_s: float | None = 600, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``tool args...`` and return the completed process (text mode, output captured).

    Raises :class:`ToolError` on a non-zero exit when ``check`` is true (stderr in the message).
    """
    exe = require_tool(tool, purpose)
    try:
        proc = subprocess.run([str(exe), *args], input=input_text, capture_output=True, text=True,
                              timeout=timeout_s, errors="replace")
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{tool} timed out after {timeout_s} s: {' '.join(args)}") from exc
    if check and proc.returncode != 0:
        err = (proc.stderr or proc.stdout).strip().splitlines()
        tail = "\n".join(err[-8:])
        raise ToolError(f"{tool} failed (exit {proc.returncode}) on {' '.join(args)}: {tail}")
    return proc


@contextlib.contextmanager
def stream_tool(tool: str, args: Sequence[str], *, purpose: str = "") -> Iterator[Iterator[str]]:
    """Run ``tool`` and yield an iterator over its stdout lines, without holding them all.

    Used for disassembling large libraries whose listing runs to gigabytes. stderr goes to a
    temporary file (cuobjdump warns once per cubin that lacks a ``-fun`` name); a non-zero exit
    raises :class:`ToolError` after the lines are consumed.
    """
    import tempfile

    exe = require_tool(tool, purpose)
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, stderr=err, text=True,
                                errors="replace", bufsize=1 << 20)
        try:
            assert proc.stdout is not None
            yield proc.stdout
        finally:
            if proc.stdout is not None:
                # Drain so the tool is never blocked on a full pipe when the caller stops early.
                proc.stdout.close()
            code = proc.wait()
        if code not in (0, -13):  # -13: SIGPIPE after an early stop
            err.seek(0)
            tail = "\n".join(err.read().strip().splitlines()[-8:])
            raise ToolError(f"{tool} failed (exit {code}) on {' '.join(args)}: {tail}")


def demangle(names: Sequence[str]) -> dict[str, str]:
    """Mangled name -> demangled name, through one ``c++filt`` call for all names.

    Names that are not mangled (``extern "C"`` kernels) map to themselves. Without c++filt the
    names stay mangled and a warning says so (demangling only changes how names are shown and
    matched).
    """
    unique = list(dict.fromkeys(names))
    if not unique:
        return {}
    mangled = [n for n in unique if n.startswith("_Z")]
    out = {n: n for n in unique}
    if not mangled:
        return out
    exe = find_tool("c++filt")
    if exe is None:
        warnings.warn("c++filt not found: kernel names stay mangled; install binutils",
                      stacklevel=2)
        return out
    proc = subprocess.run([str(exe)], input="\n".join(mangled) + "\n", capture_output=True,
                          text=True, errors="replace")
    lines = proc.stdout.splitlines()
    if proc.returncode == 0 and len(lines) == len(mangled):
        out.update(zip(mangled, lines, strict=True))
    return out
