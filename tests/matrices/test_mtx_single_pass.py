"""The strict check and the parser share one read of a Matrix Market file (issue 35): a
``.mtx.gz`` is decompressed once, and the parser only ever sees text already checked."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from sparsescope.errors import MatrixFormatError
from sparsescope.matrices import generate, read_matrix, write_matrix


def _count_decompressed(monkeypatch) -> list[int]:
    """Bytes handed out by every ``gzip.GzipFile`` read from now on."""
    total = [0]
    for name in ("read", "readline"):
        real = getattr(gzip.GzipFile, name)

        def counted(self, *args, _real=real):
            out = _real(self, *args)
            total[0] += len(out)
            return out

        monkeypatch.setattr(gzip.GzipFile, name, counted)
    return total


def test_a_gz_file_is_decompressed_once(tmp_path, monkeypatch):
    csr = generate("uniform", 3000, 40000, seed=1)
    path = write_matrix(csr, tmp_path / "m.mtx.gz")
    text = len(gzip.decompress(path.read_bytes()))
    total = _count_decompressed(monkeypatch)
    matrix = read_matrix(path)
    assert (matrix.csr != csr).nnz == 0
    # the header is read once more (a few lines); the body once, not twice as before
    assert text <= total[0] < 1.05 * text


def test_every_block_is_checked_before_the_parser_gets_it(tmp_path, monkeypatch):
    """Blocks of 64 bytes, checked 4 at a time: a token the parser would misread in the last
    block (``2.5`` as a column index) is refused with its line, never parsed as (i, 2) = .5."""
    from sparsescope.matrices import _mtx_check

    monkeypatch.setattr(_mtx_check, "BLOCK_BYTES", 64)
    monkeypatch.setattr(_mtx_check, "CHECK_THREADS", 4)
    n = 300
    body = "".join(f"{i} {i} {i}.25\n" for i in range(1, n + 1))
    path = tmp_path / "m.mtx"
    path.write_text(f"%%MatrixMarket matrix coordinate real general\n{n} {n} {n}\n{body}")
    assert np.array_equal(read_matrix(path).csr.diagonal(), [i + 0.25 for i in range(1, n + 1)])
    path.write_text(path.read_text().replace(f"\n{n} {n} {n}.25", f"\n{n} 2.5 {n}.25"))
    with pytest.raises(MatrixFormatError, match=rf"line {n + 2}: column index '2.5'"):
        read_matrix(path)
    gz = tmp_path / "m.mtx.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(MatrixFormatError, match=rf"line {n + 2}: column index '2.5'"):
        read_matrix(gz)
