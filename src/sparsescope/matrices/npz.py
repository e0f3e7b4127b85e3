"""SciPy ``.npz`` files written by :func:`scipy.sparse.save_npz`.

The arrays are read from the zip as ``.npy`` members (no pickles) and checked before any SciPy
object is built, so a damaged file gets a :class:`MatrixFormatError` naming the 0-based entry
index rather than a crash later: index ranges, pointer monotonicity, non-finite values.
``csr``, ``csc`` and ``coo`` layouts are checked entry by entry; ``bsr`` and ``dia`` are
converted by SciPy. Unsorted indices within a CSR row or CSC column, and duplicates, are
canonicalized with a :class:`MatrixWarning` (or refused with ``strict=True``); COO entry order
is free, as in Matrix Market files. A ``shape`` whose CSR arrays cannot fit in memory is
refused before they are built.

**Reading** (:class:`_Members`): each member's ``.npy`` header is parsed first and its payload
read only when the reader asks for it, straight into the array it becomes: a stored
(uncompressed, as :func:`~sparsescope.matrices.write_matrix` writes) member by ``readinto``
from its offset in the file, :data:`READ_CHUNK_BYTES` at a time, the zip's CRC-32 of each
chunk computed on a second thread while the next is read; a deflated member through
:mod:`zipfile`, whose zlib inflation (one stream, one core) bounds it. The checks then take
the arrays in their stored types (an int32 file's indices stay int32: no int64 copies) in
single vectorised passes (:mod:`sparsescope.matrices._csr`).
"""

from __future__ import annotations

import math
import struct
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sparsescope.errors import MatrixFormatError
from sparsescope.matrices._csr import (
    check_finite,
    check_memory,
    coo_to_csr_unsummed,
    csr_memory_parts,
    finish_csr,
    first_repeat,
    first_row_defects,
    make_csr,
    report_defect,
)

_REQUIRED = {
    "csr": ("data", "indices", "indptr"),
    "csc": ("data", "indices", "indptr"),
    "coo": ("data", "row", "col"),
}


#: Bytes of a stored member read, and checked against its CRC-32, at a time.
READ_CHUNK_BYTES = 64 << 20
#: Bytes of an ``.npy`` header numpy itself accepts without ``allow_pickle``.
MAX_HEADER_BYTES = 10_000
#: Errors of a damaged or foreign container (zipfile, the .npy header, zlib), each reported as
#: "not a scipy.sparse .npz file" naming the file; RuntimeError: an encrypted member.
_CONTAINER_ERRORS = (zipfile.BadZipFile, ValueError, OSError, EOFError, RuntimeError,
                     NotImplementedError, zlib.error, struct.error)


class _Members(Mapping):
    """The ``.npy`` members of an open ``.npz``, by name without ``.npy``: each header parsed
    on opening, each payload read on first use (module docstring); a damaged payload is a
    :class:`MatrixFormatError` naming the file."""

    def __init__(self, p: str, archive: zipfile.ZipFile, raw) -> None:
        self._p, self._archive, self._raw = p, archive, raw
        self._headers: dict[str, tuple] = {}
        self._arrays: dict[str, np.ndarray] = {}
        for name in dict.fromkeys(archive.namelist()):
            header = _npy_header(archive, archive.getinfo(name))
            if header is not None:  # np.load would hand back the bytes: nothing reads them
                self._headers[name[:-4] if name.endswith(".npy") else name] = header

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._arrays:
            try:
                self._arrays[key] = _read_member(self._archive, self._raw, *self._headers[key])
            except _CONTAINER_ERRORS as exc:
                raise MatrixFormatError(self._p, f"not a scipy.sparse .npz file: {exc}") \
                    from None
        return self._arrays[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers)

    def __len__(self) -> int:
        return len(self._headers)

    def size(self, key: str) -> int:
        """Elements the header of ``key`` declares (its payload not read)."""
        return math.prod(self._headers[key][1])


@contextmanager
def _open_members(p: str, path: str | Path) -> Iterator[_Members]:
    """The file's :class:`_Members`, open for the block; a damaged container or header is a
    :class:`MatrixFormatError` naming the file."""
    with ExitStack() as stack:
        try:
            archive = stack.enter_context(zipfile.ZipFile(path))
            raw = stack.enter_context(open(path, "rb", buffering=0))
            members = _Members(p, archive, raw)
        except _CONTAINER_ERRORS as exc:
            raise MatrixFormatError(p, f"not a scipy.sparse .npz file: {exc}") from None
        yield members


def _npy_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo):
    """(info, shape, fortran order, dtype, header bytes) of an ``.npy`` member; None for a
    member that is not one (no NPY magic). Refuses object arrays, as ``np.load`` does without
    pickles, and a payload size other than the header's shape x item size."""
    from numpy.lib import format as npy

    with archive.open(info) as member:
        if member.read(len(npy.MAGIC_PREFIX)) != npy.MAGIC_PREFIX:
            return None
    with archive.open(info) as member:
        version = npy.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(member, MAX_HEADER_BYTES)
        elif version == (2, 0):
            shape, fortran, dtype = npy.read_array_header_2_0(member, MAX_HEADER_BYTES)
        else:
            raise ValueError(f"member {info.filename!r}: .npy format version {version} is not "
                             "read here (1.0 and 2.0 are)")
        header_bytes = member.tell()
    if dtype.hasobject:
        raise ValueError(f"member {info.filename!r} holds Python objects (refused: no pickles)")
    payload = math.prod(shape) * dtype.itemsize
    if info.file_size != header_bytes + payload:
        raise ValueError(f"member {info.filename!r}: its header declares {payload:,} bytes of "
                         f"{dtype} {tuple(shape)}, the member holds "
                         f"{info.file_size - header_bytes:,}")
    return info, tuple(shape), fortran, dtype, header_bytes


def _read_member(archive: zipfile.ZipFile, raw, info: zipfile.ZipInfo, shape: tuple,
                 fortran: bool, dtype: np.dtype, header_bytes: int) -> np.ndarray:
    """The member's array, its payload read into it in place (module docstring)."""
    flat = np.empty(math.prod(shape), dtype=dtype)
    view = memoryview(flat.view(np.uint8)) if flat.nbytes else memoryview(b"")
    if info.compress_type == zipfile.ZIP_STORED and not info.flag_bits & 0x1:
        _read_stored(raw, info, header_bytes, view)
    else:  # inflated by zipfile, which checks the CRC once the member is read to its end
        with archive.open(info) as member:
            member.read(header_bytes)
            _read_chunks(member.readinto, view, info.filename)
            member.read(1)  # reach the end: zipfile compares the CRC there
    if fortran:
        return flat.reshape(shape[::-1]).transpose()
    return flat.reshape(shape)


def _read_chunks(readinto, view: memoryview, name: str, each=None) -> None:
    """Fill ``view`` by ``readinto`` in chunks of :data:`READ_CHUNK_BYTES`, handing each chunk
    read to ``each``; a member that ends early is an EOFError naming it."""
    done = 0
    while done < len(view):
        got = readinto(view[done:done + READ_CHUNK_BYTES])
        if not got:
            raise EOFError(f"member {name!r} ends after {done:,} of {len(view):,} payload "
                           f"bytes")
        if each is not None:
            each(view[done:done + got])
        done += got


def _read_stored(raw, info: zipfile.ZipInfo, header_bytes: int, view: memoryview) -> None:
    """Read a stored member's payload into ``view`` from its offset in the file, and check the
    member's CRC-32 (its header and payload), each chunk's on a second thread."""
    raw.seek(info.header_offset)
    local = raw.read(30)
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header of member {info.filename!r}")
    name_bytes, extra_bytes = struct.unpack("<HH", local[26:30])
    raw.seek(info.header_offset + 30 + name_bytes + extra_bytes)
    crc = [zlib.crc32(raw.read(header_bytes))]

    def chain(chunk: memoryview) -> None:  # one worker: the chunks in their order
        crc[0] = zlib.crc32(chunk, crc[0])

    with ThreadPoolExecutor(1) as pool:
        _read_chunks(raw.readinto, view, info.filename, lambda chunk: pool.submit(chain, chunk))
    if crc[0] != info.CRC:
        raise zipfile.BadZipFile(f"Bad CRC-32 for file {info.filename!r}")


def _layout(p: str, value: np.ndarray) -> str:
    if value.shape != () or value.dtype.kind not in "SU":
        raise MatrixFormatError(p, f"array 'format' must be a string such as 'csr', found "
                                   f"{value.dtype} with shape {value.shape}")
    layout = value.item()
    return layout.decode("latin-1") if isinstance(layout, bytes) else str(layout)


def _shape(p: str, value: np.ndarray) -> tuple[int, int]:
    """(rows, cols), exactly: integers (or integral floats), finite, non-negative."""
    raw = np.asarray(value).ravel()
    if raw.ndim != 1 or len(raw) != 2 or raw.dtype.kind not in "iuf":
        raise MatrixFormatError(p, f"bad shape {raw.tolist()}: expected (rows, cols) as 2 "
                                   "integers")
    if raw.dtype.kind == "f":
        for v in raw.tolist():
            if not math.isfinite(v) or v != int(v):
                raise MatrixFormatError(p, f"bad shape {raw.tolist()}: {v} is not an integer")
    shape = tuple(int(v) for v in raw.tolist())  # Python ints: exact for uint64 too
    if min(shape) < 0:
        raise MatrixFormatError(p, f"bad shape {shape}: sizes must be non-negative")
    return shape


def _int_array(p: str, arrays: Mapping, key: str) -> np.ndarray:
    """The integer array ``key``, 1-D: native int32 and int64 as stored (no copy), any other
    integer type as int64 (an unsigned 64-bit value past 2**63-1 refused)."""
    array = arrays[key]
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise MatrixFormatError(
            p, f"array '{key}' must be a 1-D integer array, found {array.dtype} with shape "
               f"{array.shape}")
    if array.dtype.kind == "u" and array.dtype.itemsize == 8 and len(array):
        too_big = np.flatnonzero(array > np.iinfo(np.int64).max)
        if len(too_big):
            k = int(too_big[0])
            raise MatrixFormatError(p, f"array '{key}' holds {int(array[k])}, past the largest "
                                       "index 2**63-1", index=k)
    if array.dtype in (np.dtype(np.int32), np.dtype(np.int64)):
        return array
    return array.astype(np.int64)


def _read_bsr(p: str, arrays: dict, shape: tuple[int, int]) -> sp.csr_matrix:
    """Block sparse rows: data (blocks, R, C), indices (block columns), indptr (block rows + 1);
    every array checked before SciPy sees it, then expanded to canonical CSR."""
    missing = [key for key in ("data", "indices", "indptr") if key not in arrays]
    if missing:
        raise MatrixFormatError(p, f"bsr file lacks array(s) {', '.join(missing)}")
    data = arrays["data"]
    if data.ndim != 3:
        raise MatrixFormatError(p, f"array 'data' of a bsr file must be 3-D (blocks, R, C), "
                                   f"found shape {data.shape}")
    blocks, r, c = data.shape
    if r < 1 or c < 1 or shape[0] % r or shape[1] % c:
        raise MatrixFormatError(p, f"block size {r} x {c} does not divide the shape "
                                   f"{shape[0]} x {shape[1]}")
    values = _values(p, {"data": data.reshape(-1)})
    indptr = _int_array(p, arrays, "indptr")
    indices = _int_array(p, arrays, "indices")
    block_rows, block_cols = shape[0] // r, shape[1] // c
    _check_pointers(p, indptr, indices, block_rows, "block row", blocks, f"{blocks} blocks")
    _check_range(p, indices, block_cols, "block column")
    matrix = sp.bsr_matrix((values.reshape(blocks, r, c), indices, indptr), shape=shape)
    return _finish_other(p, matrix.tocsr())


def _read_dia(p: str, arrays: dict, shape: tuple[int, int]) -> sp.csr_matrix:
    missing = [key for key in ("data", "offsets") if key not in arrays]
    if missing:
        raise MatrixFormatError(p, f"dia file lacks array(s) {', '.join(missing)}")
    data = arrays["data"]
    offsets = _int_array(p, arrays, "offsets")
    if data.ndim != 2 or data.shape[0] != len(offsets):
        raise MatrixFormatError(p, f"array 'data' of a dia file must be 2-D with one row per "
                                   f"offset ({len(offsets)}), found shape {data.shape}")
    values = _values(p, {"data": data.reshape(-1)}).reshape(data.shape)
    repeated = np.flatnonzero(np.diff(np.sort(offsets)) == 0)
    if len(repeated):
        raise MatrixFormatError(p, f"offset {int(np.sort(offsets)[repeated[0]])} appears twice")
    matrix = sp.dia_matrix((values, offsets), shape=shape)
    return _finish_other(p, matrix.tocsr())


def _values(p: str, arrays: dict) -> np.ndarray:
    data = arrays["data"]
    if data.ndim != 1:
        raise MatrixFormatError(p, f"array 'data' must be 1-D, found shape {data.shape}")
    if np.iscomplexobj(data):
        raise MatrixFormatError(p, "complex values are not supported")
    if not (np.issubdtype(data.dtype, np.number) or data.dtype == bool):
        raise MatrixFormatError(p, f"array 'data' has non-numeric dtype {data.dtype}")
    values = data.astype(np.float64, copy=False)  # float64 as stored: no copy
    bad = check_finite(values)
    if bad >= 0:
        raise MatrixFormatError(p, f"value {values[bad]} is not finite (NaN or infinity)",
                                index=bad)
    return values


def read_npz(path: str | Path, *, strict: bool = False) -> sp.csr_matrix:
    """Read a ``scipy.sparse.save_npz`` file into canonical CSR."""
    p = str(path)
    with _open_members(p, path) as arrays:
        return _read_arrays(p, arrays, strict)


def _read_arrays(p: str, arrays: _Members, strict: bool) -> sp.csr_matrix:
    if "format" not in arrays or "shape" not in arrays:
        raise MatrixFormatError(
            p, "not a scipy.sparse .npz file: arrays 'format' and 'shape' are missing "
               f"(found: {', '.join(sorted(arrays)) or 'none'})")
    layout = _layout(p, arrays["format"])
    shape = _shape(p, arrays["shape"])
    if shape[0] == 0 or shape[1] == 0:
        raise MatrixFormatError(p, f"empty matrix: shape {shape[0]} x {shape[1]}")
    stored = arrays.size("data") if "data" in arrays else 0
    check_memory(p, f"array 'shape' declares {shape[0]:,} x {shape[1]:,} ({layout}, "
                    f"{stored:,} stored entries)", csr_memory_parts(shape[0], shape[1], stored))
    if layout == "bsr":
        return _read_bsr(p, arrays, shape)
    if layout == "dia":
        return _read_dia(p, arrays, shape)
    if layout not in _REQUIRED:
        raise MatrixFormatError(
            p, f"unknown sparse format '{layout}' (expected csr, csc, coo, bsr or dia)")
    missing = [key for key in _REQUIRED[layout] if key not in arrays]
    if missing:
        raise MatrixFormatError(p, f"{layout} file lacks array(s) {', '.join(missing)}")
    values = _values(p, arrays)
    if len(values) == 0:
        raise MatrixFormatError(p, "empty matrix: no stored entries")
    if layout == "coo":
        return _read_coo(p, arrays, values, shape, strict)
    return _read_compressed(p, arrays, values, shape, layout, strict)


def _finish_other(p: str, matrix: sp.csr_matrix) -> sp.csr_matrix:
    if matrix.nnz == 0:
        raise MatrixFormatError(p, "empty matrix: no stored entries")
    values = matrix.data.astype(np.float64)
    bad = check_finite(values)
    if bad >= 0:
        raise MatrixFormatError(p, f"value {values[bad]} is not finite (NaN or infinity)",
                                index=bad)
    matrix.sum_duplicates()
    return make_csr(matrix.data, matrix.indices, matrix.indptr, matrix.shape)



def _check_pointers(p, indptr, indices, count: int, unit: str, stored: int, data_text: str):
    """A compressed layout's pointer array: ``count + 1`` entries from 0 to ``len(indices)``,
    never decreasing, with one stored value (or block) per index."""
    if len(indptr) != count + 1:
        raise MatrixFormatError(
            p, f"indptr has {len(indptr)} entries, expected {count + 1} ({unit}s + 1)")
    if indptr[0] != 0 or indptr[-1] != len(indices) or len(indices) != stored:
        raise MatrixFormatError(
            p, f"inconsistent arrays: indptr runs {int(indptr[0])}..{int(indptr[-1])}, "
               f"indices has {len(indices)} entries, data {data_text}")
    drops = indptr[1:] < indptr[:-1]  # compared, not subtracted: no overflow, no int64 copy
    if drops.any():
        k = int(np.argmax(drops))
        raise MatrixFormatError(
            p, f"indptr decreases at {unit} {k} ({int(indptr[k])} -> {int(indptr[k + 1])})")


def _check_range(p: str, index: np.ndarray, limit: int, what: str) -> None:
    """Every ``index`` in 0..limit-1: two reductions (min, max) over the array, and the first
    offender's position only when one is out of range."""
    if not len(index) or (index.min() >= 0 and index.max() < limit):
        return
    k = int(np.argmax((index < 0) | (index >= limit)))
    raise MatrixFormatError(p, f"{what} index {int(index[k])} out of range 0..{limit - 1}",
                            index=k)


def _read_coo(p, arrays, values, shape, strict) -> sp.csr_matrix:
    rows = _int_array(p, arrays, "row")
    cols = _int_array(p, arrays, "col")
    if not len(rows) == len(cols) == len(values):
        raise MatrixFormatError(
            p, f"arrays row, col and data differ in length ({len(rows)}, {len(cols)}, "
               f"{len(values)})")
    _check_range(p, rows, shape[0], "row")
    _check_range(p, cols, shape[1], "column")
    matrix = coo_to_csr_unsummed(rows, cols, values, shape)
    unsorted, dup = first_row_defects(matrix.indptr, matrix.indices)
    if unsorted >= 0:
        matrix.sort_indices()
        dup = first_row_defects(matrix.indptr, matrix.indices)[1]
    matrix.has_sorted_indices = True
    if dup < 0:
        return make_csr(matrix.data, matrix.indices, matrix.indptr, matrix.shape)
    later, earlier = first_repeat(rows.astype(np.int64) * shape[1] + cols)
    report_defect(
        p, f"duplicate entry (row {int(rows[later])}, column {int(cols[later])}): it repeats "
           f"entry {earlier}; duplicates are summed", strict=strict, index=later)
    return finish_csr(matrix)


def _read_compressed(p, arrays, values, shape, layout, strict) -> sp.csr_matrix:
    major, minor = (shape[0], shape[1]) if layout == "csr" else (shape[1], shape[0])
    major_name, minor_name = ("row", "column") if layout == "csr" else ("column", "row")
    indptr = _int_array(p, arrays, "indptr")
    indices = _int_array(p, arrays, "indices")
    _check_pointers(p, indptr, indices, major, major_name, len(values), f"{len(values)}")
    _check_range(p, indices, minor, minor_name)
    unsorted, dup = first_row_defects(indptr, indices)
    if unsorted < 0 and dup < 0 and layout == "csr":
        return make_csr(values, indices, indptr, shape)
    container = sp.csr_matrix if layout == "csr" else sp.csc_matrix
    # SciPy sorts its arrays in place: the messages below name the stored positions
    stored = (indices.copy(), indptr.copy()) if unsorted >= 0 else (indices, indptr)
    matrix = container((values, *stored), shape=shape)
    if unsorted >= 0:
        owner = int(np.searchsorted(indptr, unsorted, side="right")) - 1
        report_defect(
            p, f"{minor_name} indices of {major_name} {owner} are not sorted ({minor_name} "
               f"{int(indices[unsorted])} after {int(indices[unsorted - 1])}); sorted",
            strict=strict, index=unsorted)
        matrix.sort_indices()
        dup = first_row_defects(matrix.indptr, matrix.indices)[1]
    if dup >= 0:
        owner = int(np.searchsorted(indptr, dup, side="right")) - 1
        target = int(matrix.indices[dup])
        start, end = int(indptr[owner]), int(indptr[owner + 1])
        second = int(np.flatnonzero(indices[start:end] == target)[1]) + start
        report_defect(
            p, f"duplicate {minor_name} {target} in {major_name} {owner}; duplicates are summed",
            strict=strict, index=second)
    return finish_csr(matrix.tocsr())
