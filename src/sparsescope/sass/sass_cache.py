"""What the SASS of an own kernel's template instance showed, kept on disk across runs.

Reading one instance's SASS means compiling its source and disassembling it: 1-2 s of nvcc or
NVRTC and nvdisasm, of which ``sparsescope model MATRIX --backend all`` needs a dozen (every
launch auto weighs), 12 s of a 14 s command before this cache. The answer
(:class:`~sparsescope.sass.mlp.KernelMLP`) depends on nothing else than::

    key = sha256(kernel source text, name expression, arch, compiler options,
                 the compiler and its version, the disassembler and its version,
                 the source of the code that reads the listing (sass/*.py,
                 model/issue_schedule.py), CACHE_FORMAT)

so an entry is found again only while all of them stand: an edited kernel, another toolkit or
a changed analysis misses and compiles afresh. The folder is ``$SPARSESCOPE_CACHE/sass`` (the
per-user cache of sparsescope when unset); each entry is one pickle, written atomically; one
that cannot be read is a miss. Without a compiler or a disassembler there is no key (the
toolchain is part of it) and nothing is read: the declared shapes stand, as they do uncached.

:data:`COUNTS` counts the work (programs compiled, instances compiled, entries read from disk),
so tests check that a warm cache compiles nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import threading
from collections import Counter
from pathlib import Path
from typing import Any

#: Bump when an entry's meaning changes in a way the code fingerprint would not see.
CACHE_FORMAT = 1
#: Modules whose code decides what an entry holds, besides every module of ``sparsescope.sass``.
_READER_MODULES = ("model/issue_schedule.py",)

COUNTS: Counter = Counter()
"""``programs``: compiler runs; ``instances``: template instances compiled; ``disk_hits``:
instances read from the cache folder; ``stored``: entries written."""
_COUNT_LOCK = threading.Lock()


def count(what: str, n: int = 1) -> None:
    with _COUNT_LOCK:
        COUNTS[what] += n


def cache_dir() -> Path:
    """``$SPARSESCOPE_CACHE/sass``, else the per-user cache folder of sparsescope's ``sass``."""
    env = os.environ.get("SPARSESCOPE_CACHE")
    if env:
        return Path(env) / "sass"
    import platformdirs

    return Path(platformdirs.user_cache_dir("sparsescope")) / "sass"


@functools.cache
def _code_fingerprint() -> str:
    """sha256 of the code that turns a listing into an entry (module docstring)."""
    package = Path(__file__).resolve().parents[1]
    files = sorted((package / "sass").glob("*.py")) + [package / m for m in _READER_MODULES]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@functools.cache
def toolchain() -> str:
    """The compiler (as ``extract.compile_cuda`` picks it for name expressions: NVRTC where
    libnvrtc loads, else nvcc) and the disassembler (nvdisasm for a cubin, else cuobjdump),
    each with its version line; raises ``MissingDependencyError`` when one is missing."""
    from sparsescope._tools import find_tool, require_tool, run_tool
    from sparsescope.sass.extract import nvrtc_available, nvrtc_version

    if nvrtc_available():
        compiler = f"nvrtc {nvrtc_version()}"
    else:
        require_tool("nvcc", "compiling own kernels for their SASS")
        compiler = "nvcc " + _version_line(run_tool("nvcc", ["--version"]).stdout)
    require_tool("cuobjdump", "reading own kernels' SASS")
    reader = "nvdisasm" if find_tool("nvdisasm") is not None else "cuobjdump"
    return f"{compiler}; {reader} " + _version_line(run_tool(reader, ["--version"]).stdout)


def _version_line(text: str) -> str:
    """The release line of a CUDA tool's ``--version`` (``Cuda compilation tools, release
    13.0, V13.0.88``) and its build line, or the whole text."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    picked = [ln for ln in lines if ln.startswith(("Cuda compilation tools", "Build "))]
    return " / ".join(picked or lines)


def clear_toolchain() -> None:
    """Forget the toolchain found (tools installed or hidden since)."""
    forget = getattr(toolchain, "cache_clear", None)
    if forget is not None:
        forget()


def entry_key(source_text: str, expression: str, arch: str, options: tuple[str, ...],
              gather_param: str) -> str:
    """The entry's key (module docstring); raises ``MissingDependencyError`` without tools."""
    parts = [CACHE_FORMAT, hashlib.sha256(source_text.encode()).hexdigest(), expression, arch,
             list(options), gather_param, toolchain(), _code_fingerprint()]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def load(key: str) -> Any | None:
    """The entry stored under ``key``, or None (absent, unreadable or of another shape)."""
    path = cache_dir() / f"{key}.pickle"
    try:
        with open(path, "rb") as fh:
            value = pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError,
            TypeError, ValueError):
        return None
    count("disk_hits")
    return value


def store(key: str, value: Any) -> None:
    """Write ``value`` under ``key`` (atomically); a folder that cannot be written is no
    error: the next run compiles again."""
    from sparsescope._atomic import write_bytes_atomic

    try:
        write_bytes_atomic(cache_dir() / f"{key}.pickle",
                           pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        return
    count("stored")
