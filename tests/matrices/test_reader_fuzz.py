"""Property-based fuzzing of the readers (issue 33): mutated .mtx, .smtx and .npz files (bytes,
tokens, truncation) are read in a reader subprocess (one per module, kept between examples and
started again after it dies; the ~0.4 s start of a fresh interpreter was most of the module's
time). Every outcome must be the exact
matrix or a SparsescopeError: never a crash (a signal), never another exception, never other
values. For text formats the expected outcome comes from a small independent strict reader
below (the grammar the readers document); for .npz every mutation must give the original matrix
or an error (the zip CRC guards the arrays)."""

from __future__ import annotations

import io
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BANNER = b"%%MatrixMarket matrix coordinate real general\n"
MTX = BANNER + b"% a comment\n3 4 5\n1 1 1.5\n2 3 -2.25e-1\n3 4 3\n1 4 .5\n3 1 4.\n"
SMTX = b"3, 4, 5\n0 2 3 5\n0 3 2 0 3\n"
FILES_PER_EXAMPLE = 60

#: The reader process: each stdin line is a JSON list of paths, read in order; each path's
#: record follows its "start" line, and a "done" line ends the batch.
_RUNNER = r"""
import json, sys, warnings
from sparsescope.errors import SparsescopeError
from sparsescope.matrices import read_matrix
warnings.simplefilter("ignore")
for batch in sys.stdin:
    for path in json.loads(batch):
        print(json.dumps({"start": path}), flush=True)
        try:
            out = {"dense": read_matrix(path).csr.toarray().tolist()}
        except SparsescopeError as exc:
            out = {"error": str(exc)}
        except BaseException as exc:  # noqa: BLE001 - reported as a defect
            out = {"bug": repr(exc)}
        out["path"] = path
        print(json.dumps(out), flush=True)
    print(json.dumps({"done": True}), flush=True)
"""

# --- the independent strict readers (the documented grammar) --------------------------------

_INT = re.compile(rb"[+-]?[0-9]+")
_NUM = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def expected_mtx(data: bytes):
    """Dense array, or None when the file must be refused (coordinate real general only)."""
    if not data.startswith(BANNER):
        return None
    lines = data[len(BANNER):].split(b"\n")
    while lines and (not lines[0].strip() or lines[0].strip().startswith(b"%")):
        lines.pop(0)
    if not lines:
        return None
    size = lines.pop(0).split()
    if len(size) != 3 or not all(t.isdigit() for t in size):
        return None
    rows, cols, entries = (int(t) for t in size)
    if rows == 0 or cols == 0 or entries == 0 or rows * cols > 10**4:
        return None
    dense = np.zeros((rows, cols))
    seen = 0
    for raw in lines:
        text = raw.strip()
        if not text or text.startswith(b"%"):
            continue
        tokens = text.split()
        if seen == entries or len(tokens) != 3 or b"\x00" in text:
            return None
        if not (_INT.fullmatch(tokens[0]) and _INT.fullmatch(tokens[1])
                and _NUM.fullmatch(tokens[2])):
            return None
        r, c, v = int(tokens[0]), int(tokens[1]), float(tokens[2])
        if not (1 <= r <= rows and 1 <= c <= cols) or not math.isfinite(v):
            return None
        dense[r - 1, c - 1] += v
        seen += 1
    if seen != entries:
        return None
    return dense


def expected_smtx(data: bytes):
    lines = []
    for raw in data.split(b"\n"):
        text = raw.strip()
        if not lines and (not text or text.startswith(b"%")):
            continue
        lines.append(text)
    while lines and not lines[-1]:
        lines.pop()
    if len(lines) != 3:
        return None
    size = [t for t in re.split(rb"[,\s]+", lines[0]) if t]
    if len(size) != 3 or not all(t.isdigit() for t in size):
        return None
    rows, cols, nnz = (int(t) for t in size)
    if rows == 0 or cols == 0 or nnz == 0 or rows * cols > 10**4:
        return None
    ints = []
    for line in lines[1:]:
        tokens = line.split()
        if not all(re.fullmatch(rb"-?[0-9]+", t) for t in tokens):
            return None
        ints.append([int(t) for t in tokens])
    indptr, indices = ints
    if len(indptr) != rows + 1 or indptr[0] != 0 or indptr[-1] != nnz or len(indices) != nnz:
        return None
    if any(b < a for a, b in zip(indptr, indptr[1:], strict=False)) or \
            any(not 0 <= c < cols for c in indices):
        return None
    dense = np.zeros((rows, cols))
    for row in range(rows):
        for c in indices[indptr[row]:indptr[row + 1]]:
            dense[row, c] += 1.0
    return dense


def _npz_bytes() -> bytes:
    buffer = io.BytesIO()
    sp.save_npz(buffer, sp.csr_matrix(expected_mtx(MTX)), compressed=False)
    return buffer.getvalue()


NPZ = _npz_bytes()

# --- mutations ---------------------------------------------------------------------------------

_TOKENS = [b"2.5", b"1e", b"0x10", b"1,5", b"1.0abc", b"\x00", b"-1", b"+1",
           b"99999999999999999999", b"1_0", b"nan", b"inf", b"1e999", b".", b"", b"7 8",
           b"\t", b"%", b"\n", b"1.0D+00"]


@st.composite
def mutated(draw, original: bytes, body_from: int):
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "token", "truncate", "insert", "delete", "nul"]))
        if len(data) <= body_from:
            break
        at = draw(st.integers(body_from, len(data) - 1))
        if kind == "flip":
            data[at] = draw(st.integers(0, 255))
        elif kind == "nul":  # a tail zero-filled by a crash, or one NUL byte
            if draw(st.booleans()):
                data[at:] = bytes(len(data) - at)
            else:
                data[at] = 0
        elif kind == "truncate":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.sampled_from(_TOKENS))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 4))]
        else:  # replace the token around `at`
            start = max(bytes(data).rfind(b" ", 0, at), bytes(data).rfind(b"\n", 0, at)) + 1
            ends = [e for e in (bytes(data).find(b" ", at), bytes(data).find(b"\n", at))
                    if e >= 0]
            end = min(ends) if ends else len(data)
            data[start:end] = draw(st.sampled_from(_TOKENS))
    return bytes(data)


class Reader:
    """The reader subprocess (:data:`_RUNNER`), started on first use and again after it dies."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def read(self, paths: list[str]) -> tuple[list[dict], int | None, str]:
        """Every line the reader printed for ``paths``, its exit code if it died on them
        (None if it lived), and its stderr then."""
        if self.proc is None:
            self.proc = subprocess.Popen([sys.executable, "-c", _RUNNER], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True)
        proc = self.proc
        records = []
        try:
            proc.stdin.write(json.dumps(paths) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        for line in proc.stdout:  # ends early when the process dies
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("done"):
                    return records, None, ""
                records.append(record)
        self.proc = None
        _, err = proc.communicate(timeout=120)
        return records, proc.returncode, err

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=120)
            self.proc.stdout.close()
            self.proc.stderr.close()
            self.proc = None


@pytest.fixture(scope="module")
def reader():
    started = Reader()
    yield started
    started.close()


def _run(reader: Reader, tmp_path, suffix: str, blobs: list[bytes]) -> list[dict]:
    paths = []
    for i, blob in enumerate(blobs):
        path = tmp_path / f"m{i}{suffix}"
        path.write_bytes(blob)
        paths.append(str(path))
    records, died, stderr = reader.read(paths)
    if died is not None:
        last = records[-1].get("start") if records else None
        crashed = blobs[paths.index(last)] if last in paths else None
        raise AssertionError(f"reader process died (exit {died}) on {last}: "
                             f"{crashed!r}\n{stderr[-2000:]}")
    return [r for r in records if "start" not in r]


def _check(reader, tmp_path, suffix, blobs, oracle, *, error_allowed=False):
    for blob, record in zip(blobs, _run(reader, tmp_path, suffix, blobs), strict=True):
        assert "bug" not in record, (blob, record)
        want = oracle(blob)
        if error_allowed and "error" in record:
            continue
        if want is None:
            assert "error" in record, (blob, record)
        else:
            assert "dense" in record, (blob, record)
            assert np.array_equal(np.asarray(record["dense"]), want), (blob, record, want)


_SETTINGS = settings(max_examples=5, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture,
                                            HealthCheck.too_slow, HealthCheck.data_too_large])


def test_oracles_read_the_originals():
    assert expected_mtx(MTX)[1, 2] == -0.225 and expected_mtx(MTX).sum() == 1.5 - .225 + 3 + .5 + 4
    assert expected_smtx(SMTX).sum() == 5


@_SETTINGS
@given(st.lists(mutated(MTX, len(BANNER)), min_size=FILES_PER_EXAMPLE,
                max_size=FILES_PER_EXAMPLE))
def test_fuzz_mtx(reader, tmp_path_factory, blobs):
    _check(reader, tmp_path_factory.mktemp("mtx"), ".mtx", [MTX, *blobs], expected_mtx)


@_SETTINGS
@given(st.lists(mutated(SMTX, 0), min_size=FILES_PER_EXAMPLE, max_size=FILES_PER_EXAMPLE))
def test_fuzz_smtx(reader, tmp_path_factory, blobs):
    _check(reader, tmp_path_factory.mktemp("smtx"), ".smtx", [SMTX, *blobs], expected_smtx)


@_SETTINGS
@given(st.lists(mutated(NPZ, 0), min_size=FILES_PER_EXAMPLE, max_size=FILES_PER_EXAMPLE))
def test_fuzz_npz(reader, tmp_path_factory, blobs):
    original = expected_mtx(MTX)
    # a mutation the zip container ignores (a timestamp) may still read: then exactly
    _check(reader, tmp_path_factory.mktemp("npz"), ".npz", [NPZ, *blobs], lambda blob: original,
           error_allowed=True)


_LINE_PIECES = [b"1", b"23", b" ", b"  ", b"-", b"+", b".", b"e", b"E", b"5", b"\t", b"x", b"\r"]


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(st.lists(st.sampled_from(_LINE_PIECES), min_size=1, max_size=9), min_size=1,
                max_size=6),
       st.sampled_from(["real", "integer", "pattern"]))
def test_vectorised_check_never_accepts_what_the_grammar_refuses(lines, field):
    """The fast vectorised check may pass a block to the regular expression, but whatever it
    accepts the strict grammar accepts too, with the same line count."""
    from sparsescope.matrices import _mtx_check

    text = b"".join(b"".join(line) + b"\n" for line in lines)
    found = _mtx_check.fast_lines(text, len(text), field)
    if found is not None:
        grammar = _mtx_check._GRAMMARS[("coordinate", field)]
        assert grammar.match(text).end() == len(text), text
        assert found == len(lines)
