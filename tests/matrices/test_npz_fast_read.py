"""The .npz reader made fast without a weaker check (issue 35): stored members read straight
into their arrays with the zip CRC checked, deflated ones through zipfile, the arrays kept in
their stored types (no int64 or float64 copies), the row checks in one pass. Checked by what
the reader holds (its peak memory against the arrays' bytes), not by its time."""

from __future__ import annotations

import io
import tracemalloc
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.errors import MatrixFormatError
from sparsescope.matrices import _csr, read_matrix
from sparsescope.matrices.npz import read_npz


def _matrix(rows=20_000, per_row=25, seed=0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    a = sp.random(rows, rows, density=per_row / rows, format="csr", random_state=rng,
                  dtype=np.float64)
    a.sum_duplicates()
    a.sort_indices()
    return a


def test_reads_stored_and_deflated_files_alike(tmp_path):
    a = _matrix()
    stored, deflated = tmp_path / "s.npz", tmp_path / "d.npz"
    sp.save_npz(stored, a, compressed=False)
    sp.save_npz(deflated, a, compressed=True)
    with zipfile.ZipFile(stored) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
    for path in (stored, deflated):
        m = read_matrix(path).csr
        assert m.indices.dtype == np.int32 and m.indptr.dtype == np.int32
        assert np.array_equal(m.indptr, a.indptr) and np.array_equal(m.indices, a.indices)
        assert np.array_equal(m.data, a.data)


def test_the_reader_holds_the_arrays_once(tmp_path):
    """A 500,000-nonzero int32 file is 6 MB of arrays (8 B values, 4 B columns). The reader
    held 3.5 times that (int64 copies of the indices, a float64 copy of the values, the int64
    differences and masks of the checks); now the arrays and chunk-sized temporaries."""
    a = _matrix()
    path = tmp_path / "m.npz"
    sp.save_npz(path, a, compressed=False)
    arrays = a.data.nbytes + a.indices.nbytes + a.indptr.nbytes
    tracemalloc.start()
    try:
        m = read_npz(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert m.nnz == a.nnz
    assert peak < 1.3 * arrays


def _corrupt_payload(path, member: str) -> None:
    """Flip one byte in the middle of a stored member's payload (not its header)."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    blob = bytearray(path.read_bytes())
    local = info.header_offset
    start = local + 30 + int.from_bytes(blob[local + 26:local + 28], "little") \
        + int.from_bytes(blob[local + 28:local + 30], "little")
    blob[start + info.file_size - 8] ^= 0xFF
    path.write_bytes(bytes(blob))


@pytest.mark.parametrize("member", ["data.npy", "indices.npy", "indptr.npy"])
def test_a_damaged_payload_fails_its_crc(tmp_path, member):
    path = tmp_path / "bad.npz"
    sp.save_npz(path, _matrix(rows=2000), compressed=False)
    _corrupt_payload(path, member)
    with pytest.raises(MatrixFormatError, match=rf"bad\.npz: not a scipy\.sparse \.npz file: "
                                                rf"Bad CRC-32 for file '{member}'"):
        read_matrix(path)


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def test_fortran_order_and_big_endian_arrays_read_as_numpy_does(tmp_path):
    path = tmp_path / "m.npz"
    path.write_bytes(_npz({
        "format": np.array(b"csr"), "shape": np.asfortranarray(np.array([[3], [3]])),
        "data": np.array([1.0, 2.0, 3.0], dtype=">f8"),
        "indices": np.array([0, 2, 1], dtype=">i4"), "indptr": np.array([0, 2, 2, 3])}))
    m = read_matrix(path).csr
    assert m.toarray().tolist() == [[1, 0, 2], [0, 0, 0], [0, 3, 0]]
    assert m.indices.dtype == np.int32 and m.data.dtype == np.float64


def test_a_member_shorter_than_its_header_says(tmp_path):
    """A header declaring more elements than the member holds is refused before anything is
    allocated for it (its zip entry rebuilt with a matching CRC, so only the size is wrong)."""
    good = _npz({"format": np.array(b"csr"), "shape": np.array([3, 3]),
                 "data": np.array([1.0, 2.0]), "indices": np.array([0, 2]),
                 "indptr": np.array([0, 1, 1, 2])})
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(good)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            blob = src.read(info)
            if info.filename == "data.npy":
                blob = blob.replace(b"(2,)", b"(9,)")
            dst.writestr(info.filename, blob)
    path = tmp_path / "short.npz"
    path.write_bytes(out.getvalue())
    with pytest.raises(MatrixFormatError, match=r"member 'data\.npy': its header declares 72 "
                                                r"bytes of float64 \(9,\), the member holds 16"):
        read_matrix(path)


def test_object_arrays_are_refused(tmp_path):
    path = tmp_path / "obj.npz"
    buffer = io.BytesIO()
    np.savez(buffer, format=np.array(b"csr"), shape=np.array([1, 1]),
             data=np.array([1.0, None], dtype=object))
    path.write_bytes(buffer.getvalue())
    with pytest.raises(MatrixFormatError, match="holds Python objects"):
        read_matrix(path)


def test_check_finite_by_the_sum_first():
    big = np.full(4, 1e308)                       # finite, but their sum overflows
    assert _csr.check_finite(big) == -1
    assert _csr.check_finite(np.array([1.0, 2.0, np.nan, np.inf])) == 2
    assert _csr.check_finite(np.array([np.inf, -np.inf])) == 0
    assert _csr.check_finite(np.zeros(0)) == -1


def _defects_by_definition(indptr, indices) -> tuple[int, int]:
    unsorted = dup = -1
    for row in range(len(indptr) - 1):
        for p in range(int(indptr[row]) + 1, int(indptr[row + 1])):
            if unsorted < 0 and indices[p] < indices[p - 1]:
                unsorted = p
            if dup < 0 and indices[p] == indices[p - 1]:
                dup = p
    return min(unsorted, 10**9) if unsorted >= 0 else -1, dup


@pytest.mark.parametrize("chunk", [1, 3, 7, 1 << 22])
def test_row_defects_in_one_chunked_pass(monkeypatch, chunk):
    monkeypatch.setattr(_csr, "CHECK_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    for _ in range(300):
        rows, nnz = int(rng.integers(1, 12)), int(rng.integers(0, 40))
        lengths = rng.multinomial(nnz, np.ones(rows) / rows)
        dtype = rng.choice([np.int32, np.int64])
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(dtype)
        indices = rng.integers(0, 9, nnz).astype(dtype)
        if rng.random() < 0.5:
            for r in range(rows):
                indices[indptr[r]:indptr[r + 1]].sort()
        assert _csr.first_row_defects(indptr, indices) == _defects_by_definition(indptr,
                                                                                 indices)
