"""Generated matrices kept on disk: each suite analog is generated once per machine.

Generating the seed6 analogs at scale 0.05 (11 M nonzeros) took 1-2 s of every main job on a
2-core machine, and a full-scale suite tens of seconds, every run, for the same matrices:
a generator is deterministic (same arguments, same code, same NumPy: same matrix). So
:func:`generate_cached` keeps each generated matrix as an uncompressed ``.npz`` (its three
CSR arrays) under ``<cache root>/generated/`` and reads it back next time (0.26 s for all
six at scale 0.05, against 1.9 s to generate them on the same machine).

The file's name is a hash of everything the matrix depends on (:func:`cache_key`): the
generator's name and parameters, rows, cols, nnz, seed and the code version
(:func:`code_version`: the source of the generator's module, of the sampling and CSR helpers,
and NumPy's version, whose random streams the generators draw from). A change to any of them
names another file, so a stale matrix is never read. A file that does not read back whole
(zip CRC, array lengths, dtypes) is generated again and replaced.

Small matrices (fewer than :data:`MIN_NNZ` nonzeros) generate in milliseconds and are not
kept. The folder is bounded: after a write, the least recently used files go until it holds
at most :data:`DEFAULT_MAX_MB` MiB (``$SPARSESCOPE_GENERATED_CACHE_MB``); nothing is written
where the disk would keep less than :data:`MIN_FREE_BYTES` free.
``SPARSESCOPE_GENERATED_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import scipy.sparse as sp

#: Environment variable: ``0`` (or ``off``) turns the cache off.
CACHE_ENV = "SPARSESCOPE_GENERATED_CACHE"
#: Environment variable: the folder's bound in MiB.
MAX_MB_ENV = "SPARSESCOPE_GENERATED_CACHE_MB"
#: Fewest nonzeros worth a file: below this a generator takes a few milliseconds.
MIN_NNZ = 65_536
#: The folder's default bound: the seed6 suite at full scale (2.8 GB) and some room.
DEFAULT_MAX_MB = 4096
#: Disk space a write must leave free.
MIN_FREE_BYTES = 1 << 30

Generate = Callable[..., sp.csr_matrix]


def enabled(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the cache is on (``$SPARSESCOPE_GENERATED_CACHE`` not ``0``/``off``/``no``)."""
    return env.get(CACHE_ENV, "").strip().lower() not in ("0", "off", "no", "false")


def cache_dir() -> Path:
    """``<cache root>/generated`` (the root of ``matrices.suitesparse.cache_root``:
    ``$SPARSESCOPE_CACHE``, else the user cache folder)."""
    from sparsescope.matrices.suitesparse import cache_root

    return cache_root() / "generated"


@functools.lru_cache(maxsize=32)
def code_version(kind: str) -> str:
    """Hash of the code a ``kind`` matrix comes from: its generator's module source, the
    sampling and CSR helpers' sources, and NumPy's version (the random streams)."""
    from sparsescope.matrices import _csr, _sampling
    from sparsescope.matrices.generators import GENERATORS

    digest = hashlib.sha256(np.__version__.encode())
    modules = {inspect.getmodule(GENERATORS[kind]), _sampling, _csr}
    for module in sorted(modules, key=lambda m: m.__name__):
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()[:16]


def cache_key(kind: str, rows: int, cols: int, nnz: int, seed: int,
              params: Mapping[str, object]) -> str:
    """The file name (without ``.npz``) of a generated matrix: ``<kind>-<rows>x<cols>-<nnz>-``
    and a hash of the arguments with :func:`code_version`."""
    what = json.dumps({"kind": kind, "rows": rows, "cols": cols, "nnz": nnz, "seed": seed,
                       "params": {k: params[k] for k in sorted(params)},
                       "code": code_version(kind)}, sort_keys=True, default=repr)
    return f"{kind}-{rows}x{cols}-{nnz}-{hashlib.sha256(what.encode()).hexdigest()[:20]}"


def read_cached(path: Path, rows: int, cols: int, nnz: int) -> sp.csr_matrix | None:
    """The matrix in ``path`` when it reads back whole and has the expected shape and nnz,
    else None (a missing, torn or foreign file)."""
    from sparsescope.matrices._csr import index_dtype, make_csr

    try:
        with np.load(path, allow_pickle=False) as files:
            data, indices, indptr = files["data"], files["indices"], files["indptr"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
        return None
    itype = index_dtype(rows, cols, nnz)
    if (data.dtype != np.float64 or indices.dtype != itype or indptr.dtype != itype
            or data.shape != (nnz,) or indices.shape != (nnz,) or indptr.shape != (rows + 1,)
            or int(indptr[0]) != 0 or int(indptr[-1]) != nnz):
        return None
    return make_csr(data, indices, indptr, (rows, cols))


def _folder_bound(env: Mapping[str, str] = os.environ) -> int:
    text = env.get(MAX_MB_ENV, "").strip()
    return (int(text) if text.isdigit() else DEFAULT_MAX_MB) * 1024 * 1024


def trim(folder: Path, bound_bytes: int) -> list[Path]:
    """Remove the least recently used ``.npz`` files of ``folder`` until the rest hold at most
    ``bound_bytes``; returns those removed (oldest first)."""
    files = []
    for path in folder.glob("*.npz"):
        try:
            stat = path.stat()
        except OSError:
            continue
        files.append((stat.st_mtime, stat.st_size, path))
    files.sort()
    total = sum(size for _, size, _ in files)
    removed = []
    for _, size, path in files:
        if total <= bound_bytes:
            break
        path.unlink(missing_ok=True)
        total -= size
        removed.append(path)
    return removed


def write_cached(path: Path, csr: sp.csr_matrix) -> bool:
    """Write ``csr``'s arrays to ``path`` (a temporary file renamed over it: a reader never
    sees half a file; no fsync: a file lost to a crash is generated again). False, writing
    nothing, where the disk would keep less than :data:`MIN_FREE_BYTES` free or the folder
    cannot be written."""
    size = csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if shutil.disk_usage(path.parent).free < size + MIN_FREE_BYTES:
            return False
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)  # mkstemp's 0600 would hide the file from a shared cache
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, data=csr.data, indices=csr.indices, indptr=csr.indptr)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        return False
    return True


def generate_cached(generate: Generate, kind: str, rows: int, nnz: int, *, cols: int,
                    seed: int, params: Mapping[str, object]) -> sp.csr_matrix:
    """``generate(kind, rows, nnz, cols=cols, seed=seed, **params)``, read from the cache when
    it holds that matrix, else generated and (at :data:`MIN_NNZ` nonzeros or more) kept."""
    from sparsescope.matrices.generators import GENERATORS

    if not enabled() or nnz < MIN_NNZ or kind not in GENERATORS:  # unknown: generate says so
        return generate(kind, rows, nnz, cols=cols, seed=seed, **params)
    path = cache_dir() / f"{cache_key(kind, rows, cols, nnz, seed, params)}.npz"
    if path.is_file():
        csr = read_cached(path, rows, cols, nnz)
        if csr is not None:
            try:
                os.utime(path)  # recently used: the last to be trimmed
            except OSError:
                pass
            return csr
    csr = generate(kind, rows, nnz, cols=cols, seed=seed, **params)
    if write_cached(path, csr):
        trim(path.parent, _folder_bound())
    return csr
