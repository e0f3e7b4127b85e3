"""Suite analogs generated once per machine: the cached matrix is the generated one, a changed
argument or code names another file, a torn file is generated again, the folder is bounded."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.matrices import generated_cache as gc
from sparsescope.matrices import suites
from sparsescope.matrices.generators import generate


class Counting:
    """``generate``, counting its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return generate(*args, **kwargs)


BIG = dict(kind="banded", rows=20_000, nnz=100_000, cols=20_000, seed=3, params={"block": 3})


def same(a, b) -> bool:
    return (a.shape == b.shape and a.indices.dtype == b.indices.dtype
            and a.indptr.dtype == b.indptr.dtype and np.array_equal(a.indptr, b.indptr)
            and np.array_equal(a.indices, b.indices) and np.array_equal(a.data, b.data))


def test_a_matrix_is_generated_once_and_read_back_identical():
    gen = Counting()
    first = gc.generate_cached(gen, **{k: BIG[k] for k in ("kind", "rows", "nnz")},
                               cols=BIG["cols"], seed=BIG["seed"], params=BIG["params"])
    again = gc.generate_cached(gen, "banded", 20_000, 100_000, cols=20_000, seed=3,
                               params={"block": 3})
    assert gen.calls == 1
    assert same(first, again) and again.has_canonical_format and again.has_sorted_indices
    files = list(gc.cache_dir().glob("banded-20000x20000-100000-*.npz"))
    assert len(files) == 1


@pytest.mark.parametrize("change", [{"seed": 4}, {"params": {"block": 2}},
                                    {"nnz": 100_001}])
def test_another_argument_is_another_matrix(change):
    args = {**BIG, **change}
    gen = Counting()
    gc.generate_cached(gen, args["kind"], args["rows"], args["nnz"], cols=args["cols"],
                       seed=args["seed"], params=args["params"])
    key = gc.cache_key(args["kind"], args["rows"], args["cols"], args["nnz"], args["seed"],
                       args["params"])
    assert key != gc.cache_key("banded", 20_000, 20_000, 100_000, 3, {"block": 3})
    assert (gc.cache_dir() / f"{key}.npz").is_file()


def test_the_code_version_is_part_of_the_key(monkeypatch):
    before = gc.cache_key("banded", 20_000, 20_000, 100_000, 3, {})
    version = gc.code_version("banded")
    assert len(version) == 16 and version == gc.code_version("powerlaw")  # same modules
    monkeypatch.setattr(gc, "code_version", lambda kind: "another version")
    assert gc.cache_key("banded", 20_000, 20_000, 100_000, 3, {}) != before


def test_a_torn_file_is_generated_again_and_replaced():
    gen = Counting()
    args = ("powerlaw", 30_000, 90_000)
    kw = dict(cols=30_000, seed=0, params={})
    gc.generate_cached(gen, *args, **kw)
    (path,) = gc.cache_dir().glob("powerlaw-30000x30000-90000-*.npz")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert gc.read_cached(path, 30_000, 30_000, 90_000) is None
    again = gc.generate_cached(gen, *args, **kw)
    assert gen.calls == 2 and same(again, generate(*args, cols=30_000, seed=0))
    assert gc.read_cached(path, 30_000, 30_000, 90_000) is not None   # replaced, whole
    assert gc.read_cached(path, 30_000, 30_000, 90_001) is None       # not this matrix


def test_small_matrices_and_a_disabled_cache_always_generate(monkeypatch):
    gen = Counting()
    for _ in range(2):
        gc.generate_cached(gen, "uniform", 100, 1_000, cols=100, seed=0, params={})
    assert gen.calls == 2
    monkeypatch.setenv(gc.CACHE_ENV, "0")
    for _ in range(2):
        gc.generate_cached(gen, **{k: BIG[k] for k in ("kind", "rows", "nnz")},
                           cols=BIG["cols"], seed=9, params={})
    key = gc.cache_key("banded", 20_000, 20_000, 100_000, 9, {})
    assert gen.calls == 4 and not (gc.cache_dir() / f"{key}.npz").exists()


def test_the_folder_is_trimmed_least_recently_used_first(tmp_path):
    import os

    for i, size in enumerate((300, 200, 100)):
        path = tmp_path / f"m{i}.npz"
        path.write_bytes(b"x" * size)
        os.utime(path, (1000 + i, 1000 + i))
    (tmp_path / "other.txt").write_bytes(b"y" * 5000)   # not ours: never counted or removed
    removed = gc.trim(tmp_path, 350)
    # 600 bytes > 350: the oldest (300 B) goes; 300 <= 350 stops
    assert removed == [tmp_path / "m0.npz"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m1.npz", "m2.npz", "other.txt"]


def test_build_entry_reads_a_suite_analog_back(monkeypatch):
    (entry,) = suites.suite_entries("seed6#cant", scale=0.02)
    assert entry.nnz >= gc.MIN_NNZ
    first = suites.build_entry(entry)
    gen = Counting()
    monkeypatch.setattr(suites, "generate", gen)
    second = suites.build_entry(entry)
    assert gen.calls == 0 and same(first.csr, second.csr)
    assert (second.name, second.source, second.kind) == (first.name, first.source, first.kind)
