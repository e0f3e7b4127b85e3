"""The rowgroup, colmajor and auto SpMM kernels on the GPU, against float64 through the op
runner's gate (relative Frobenius error within the op's tolerance, scaled by the case's
cancellation factor): empty rows, one row holding most nonzeros (cut into slices, atomics),
k = 1, 3, 6, 33, 64, 256, 600 (two slabs), a single row, row counts that are not multiples
of 32 (partial warps), float32 / float64, INT32 / INT64 indices, X and Y row- and
column-major, and spmm-cuda-auto on each."""

from __future__ import annotations

import pytest

from sparsescope.backends.runner import run_case
from sparsescope.timing.types import TimingConfig

pytestmark = pytest.mark.gpu
QUICK = TimingConfig(warmups=1, repeats=3)
KS = (1, 3, 6, 33, 64, 256, 600)
#: The backend each layout is run on (the other layout is skipped by it, with a reason).
BY_LAYOUT = {"row": "spmm-cuda-rowgroup", "col": "spmm-cuda-colmajor"}


def _run(matrix, backend, k, layout, dtype, index_bytes, timed=False):
    return run_case(matrix, backend, "spmm", {"k": k, "layout": layout}, config=QUICK,
                    value_dtype=dtype, index_bytes=index_bytes, seed=k, timed=timed)


def _small(matrices):
    """The matrices every (k, dtype, index) combination runs on: the awkward suite (empty
    rows, a heavy row, 1 x 1, one row, one column, 33 / 257 / 513 / 999 / 1001 rows) and the
    fresh random ones (1 row, 777 rows, 4,099 rows, a 3,001-row matrix whose one row holds
    3/4 of the nonzeros, 65 dense-ish rows)."""
    return list(matrices)


@pytest.mark.parametrize("layout", ["row", "col"])
@pytest.mark.parametrize("backend", ["own", "spmm-cuda-auto", "spmm-cuda-transposed"])
def test_matches_float64_on_awkward_matrices(awkward_matrices, layout, backend):
    if backend == "spmm-cuda-transposed" and layout == "row":
        pytest.skip("spmm-cuda-transposed is for column-major X")
    name = BY_LAYOUT[layout] if backend == "own" else backend
    failures = []
    for matrix in _small(awkward_matrices):
        for k in KS:
            for dtype in ("float32", "float64"):
                for index_bytes in (4, 8):
                    case = _run(matrix, name, k, layout, dtype, index_bytes)
                    if case.outcome != "ok":
                        failures.append((matrix.name, k, layout, dtype, index_bytes,
                                         case.outcome, case.reason))
                    elif backend == "spmm-cuda-auto":
                        assert case.notes["selected"] in (
                            "spmm-cuda-rowwarp", "spmm-cuda-rowgroup",
                            "spmm-cuda-transposed", "spmm-cuda-blocktc", "spmm-cuda-paneltc",
                            "spmm-cuda-rowtile",   # where it stages less X than the gathers
                            "spmm-cuda-ell",       # where its padding allows, X as it is
                            *(("spmm-cuda-colmajor",) if layout == "col" else ()))
                        assert case.notes["selection_reason"]
    assert not failures, failures


@pytest.mark.parametrize("layout", ["row", "col"])
def test_each_backend_skips_the_other_layout_with_a_reason(awkward_matrices, layout):
    other = BY_LAYOUT["col" if layout == "row" else "row"]
    case = _run(awkward_matrices[0], other, 8, layout, "float32", 4)
    assert case.outcome == "skipped" and "layout" in case.reason


@pytest.mark.parametrize("layout", ["row", "col"])
@pytest.mark.parametrize("k", [1, 6, 64, 600])
def test_cut_rows_use_atomics_and_match(awkward_matrices, layout, k):
    """Long rows cut into slices. rowgroup with a small slice floor (the dense 65-row
    matrix's ~1,000-entry rows and the heavy rows are cut): zero fill plus atomics; colmajor
    by its own rule (slices of <= 2 x the mean row: the heavy rows): a row of more than 32
    slices across warps (zero fill, an atomic a warp), the others summed inside their warp."""
    from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    names = ("heavy", "dense-rows") if layout == "row" else ("heavy",)
    heavy = [m for m in awkward_matrices if any(n in m.name for n in names)]
    assert heavy
    for matrix in heavy:
        for dtype in ("float32", "float64"):
            backend = (SpmmCudaRowGroup(min_slice=8) if layout == "row"
                       else SpmmCudaColMajor())
            case = _run(matrix, backend, k, layout, dtype, 8)
            assert case.outcome == "ok", (matrix.name, dtype, case.reason)
            assert int(case.notes["split_rows"]) > 0
            across = case.notes.get("rows_across_warps", case.notes["split_rows"])
            assert case.notes["zero_fill"] == ("yes" if across != "0" else "no")


#: colmajor's narrower column tiles per k (auto's narrow candidate): C = 1, 2 and 4 instances,
#: k = 3 at C = 2 masking its last tile to one column.
NARROW_TILES = {3: 2, 8: 1, 64: 2, 600: 4}


@pytest.mark.parametrize(("k", "variant"), [
    *((k, "short") for k in (1, 3, 8, 64, 600)), *((k, "narrow") for k in NARROW_TILES),
    *((k, "fit") for k in (1, 8, 64))])
def test_colmajor_short_slices_and_deep_batches_match(awkward_matrices, k, variant):
    """colmajor with auto's short-slice plan (``short_slices``: slices of about the mean row,
    twice the pairs a batch): most rows cut, so zero fill plus atomics, on every awkward
    matrix, both dtypes and index widths; with its narrower column tiles (``tile_cols``,
    :data:`NARROW_TILES`), and with short slices whose rows of more than a warp of them are
    fitted to one warp (``fit_long``: every row inside its warp, no zero fill), float32 with
    INT32 and float64 with INT64 indices (CI time)."""
    from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor, short_slices

    types = ((("float32", 4), ("float32", 8), ("float64", 4), ("float64", 8))
             if variant == "short" else (("float32", 4), ("float64", 8)))
    failures = []
    for matrix in _small(awkward_matrices):
        rows, nnz = matrix.csr.shape[0], matrix.csr.nnz
        options = ({"tile_cols": NARROW_TILES[k]} if variant == "narrow"
                   else short_slices(rows, nnz, k) | ({"fit_long": 1} if variant == "fit"
                                                     else {}))
        for dtype, index_bytes in types:
            case = _run(matrix, SpmmCudaColMajor(**options), k, "col", dtype, index_bytes)
            if case.outcome != "ok":
                failures.append((matrix.name, dtype, index_bytes, case.reason))
            elif case.notes["rows_across_warps"] == "0":   # one launch: no zero fill
                assert case.notes["zero_fill"] == "no"
            if case.outcome == "ok" and variant == "fit":
                assert case.notes["rows_across_warps"] == "0", (matrix.name, case.notes)
            if case.outcome == "ok" and variant == "narrow":
                assert case.notes["column_tiles"] == str(-(-k // NARROW_TILES[k]))
    assert not failures, failures


@pytest.mark.parametrize("k", [1, 8, 64, 600])
@pytest.mark.parametrize("slices", [{"min_slice": 32}, {"slice_nnz": 8}])
def test_rowgroup_block_sum_matches(awkward_matrices, k, slices):
    """block_sum (each cut row's slices inside one block, summed there in shared memory: one
    launch, no zero fill, no atomics) on every awkward matrix in slices of 32 pairs (the
    heavy row and the dense-ish rows cut) and of 8 (auto's short slices: most rows cut, the
    heavy row fitted to a block), float32 with INT32 and float64 with INT64 indices; k = 600
    in five slabs."""
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    failures = []
    for matrix in _small(awkward_matrices):
        for dtype, index_bytes in (("float32", 4), ("float64", 8)):
            case = _run(matrix, SpmmCudaRowGroup(block_sum=1, **slices), k, "row", dtype,
                        index_bytes)
            if case.outcome != "ok":
                failures.append((matrix.name, dtype, case.reason))
            elif int(case.notes["split_rows"]) > 0:
                assert case.notes["zero_fill"] == "no", (matrix.name, case.notes)
                assert case.notes["kernel"].endswith(", true>"), case.notes
    assert not failures, failures


def _ell_rows_match(matrices, make_backend, k: int, layout: str) -> None:
    """A backend on ELL rows (``make_backend()``, a fresh one a case) against float64 on every
    matrix, float32 with INT32 and float64 with INT64 indices: each case ok, run by the ELL
    instance, with no zero fill and no pointer round, and the ELL bytes (padding counted) in
    its traffic."""
    failures = []
    for matrix in _small(matrices):
        for dtype, index_bytes in (("float32", 4), ("float64", 8)):
            case = _run(matrix, make_backend(), k, layout, dtype, index_bytes)
            if case.outcome != "ok":
                failures.append((matrix.name, dtype, case.outcome, case.reason))
                continue
            assert case.notes["kernel"].endswith(", false, true>"), case.notes
            assert case.notes["zero_fill"] == "no" and case.notes["pointer_rounds"] == "0"
            assert case.traffic.format.startswith("ELL"), case.traffic
    assert not failures, failures


@pytest.mark.parametrize("k", [1, 3, 8, 64, 256, 600])
def test_rowgroup_ell_matches(awkward_matrices, k):
    """ell (A as row-major ELL, a group a row, no slice pointers) on every awkward matrix with
    the padding limit lifted (the heavy row pads every other row to its length: many stages
    of pads, each group stopping at its own row's end), float32 with INT32 and float64 with
    INT64 indices, k = 600 in five slabs; the ELL instance, no zero fill, and the ELL bytes
    (padding counted) in the case's traffic."""
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    _ell_rows_match(awkward_matrices, lambda: SpmmCudaRowGroup(ell=1, max_padding=1e9), k,
                    "row")


@pytest.mark.parametrize("k", [1, 3, 8, 64])
@pytest.mark.parametrize("tile_cols", [None, 1])
def test_colmajor_ell_matches(awkward_matrices, k, tile_cols):
    """colmajor on ELL rows (a lane a row, no slice pointers), column-major X and Y, on every
    awkward matrix with the padding limit lifted, at the rule's tile and the narrow C = 1,
    float32 with INT32 and float64 with INT64 indices: the ELL instance, no zero fill, the
    ELL bytes in the case's traffic."""
    from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor

    _ell_rows_match(awkward_matrices,
                    lambda: SpmmCudaColMajor(ell=1, max_padding=1e9, tile_cols=tile_cols), k,
                    "col")


def test_rowgroup_ell_declines_a_padding_over_the_limit(awkward_matrices):
    """At the ELL kernel's limit (``spmm_ell_format.MAX_PADDING``) the heavy row's matrix is
    skipped with the padding named."""
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    matrix = next(m for m in awkward_matrices if m.name.startswith("heavy-row-3001"))
    case = _run(matrix, SpmmCudaRowGroup(ell=1), 8, "row", "float32", 4)
    assert case.outcome == "skipped" and "ELL padding" in case.reason


def test_rowgroup_default_rule_cuts_the_heavy_row(awkward_matrices):
    """heavy-row-3001: one row of ~2,250 nonzeros, over the 1,024 floor -> cut."""
    matrix = next(m for m in awkward_matrices if m.name.startswith("heavy-row-3001"))
    for k in (1, 64, 600):
        case = _run(matrix, "spmm-cuda-rowgroup", k, "row", "float32", 4)
        assert case.outcome == "ok", case.reason
        assert int(case.notes["split_rows"]) == 1


def test_rowgroup_slabs_and_overrides_match(awkward_matrices):
    """k = 600 runs as five 120-column slabs (one float4 a lane); wider and narrower slab
    overrides (300: three loads a lane), depth / warp overrides and narrower VEC (float2,
    float: more lanes a row slice) match too."""
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup

    matrix = next(m for m in awkward_matrices if m.name.startswith("rand-4099x3001"))
    case = _run(matrix, "spmm-cuda-rowgroup", 600, "row", "float32", 4)
    assert case.outcome == "ok" and case.notes["slabs"] == "5", case.notes
    for options in ({"slab": 64}, {"slab": 100}, {"slab": 300}, {"depth": 1}, {"warps": 1},
                    {"vec": 2}, {"vec": 1}, {"vec": 1, "slab": 100}):
        for dtype in ("float32", "float64"):
            case = _run(matrix, SpmmCudaRowGroup(**options), 600, "row", dtype, 4)
            assert case.outcome == "ok", (options, dtype, case.reason)


def test_poison_catches_a_dropped_slice():
    """A launch one slice short leaves the last row NaN: the gate fails it."""
    from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup
    from sparsescope.matrices import generate
    from sparsescope.matrices.types import Matrix

    def short(plan):
        return plan.__class__(plan.slice_nnz, plan.slice_ptr[:-1], plan.slice_row,
                              plan.split_rows)

    # the launch's arguments are built once by prepare: the plan is cut before it
    class DropsRowGroup(SpmmCudaRowGroup):
        def plan(self, *args, **kwargs):
            from dataclasses import replace

            host = super().plan(*args, **kwargs)
            return replace(host, plan=short(host.plan))

    class DropsColMajor(SpmmCudaColMajor):
        def plan(self, *args, **kwargs):
            from dataclasses import replace

            host = super().plan(*args, **kwargs)
            return replace(host, plan=short(host.plan))

    matrix = Matrix(name="u5000", csr=generate("uniform", 5000, 50_000, seed=2), source="t")
    for backend, layout in ((DropsRowGroup(), "row"), (DropsColMajor(), "col")):
        case = _run(matrix, backend, 8, layout, "float32", 4)
        assert case.outcome == "failed" and "rel_err inf" in case.reason, case.reason


def test_auto_choices_on_known_shapes():
    """The rules' picks land where the docstring says (spmm-cuda-auto-rules); spmm-cuda-auto
    keeps every candidate's prediction, and when it timed candidates it runs the fastest."""
    import json

    from sparsescope.matrices import generate
    from sparsescope.matrices.types import Matrix

    short_rows = Matrix(name="u20000", csr=generate("uniform", 20_000, 100_000, seed=4),
                        source="t")
    for k, layout, expected in ((8, "row", "spmm-cuda-rowgroup"),
                                (256, "row", "spmm-cuda-rowgroup"),
                                (8, "col", "spmm-cuda-transposed")):
        case = _run(short_rows, "spmm-cuda-auto-rules", k, layout, "float32", 4, timed=True)
        assert case.outcome == "ok", case.reason
        assert case.notes["selected"] == expected, case.notes
        assert case.notes["selection_rule"] and case.notes["selection_reason"]
        case = _run(short_rows, "spmm-cuda-auto", k, layout, "float32", 4, timed=True)
        assert case.outcome == "ok", case.reason
        table = json.loads(case.notes["selection_table"])
        # column-major X: the row-major kernels between the transposes, and colmajor; ELL
        # in either layout (uniform rows: its padding is within the limit)
        assert {row["backend"] for row in table} == {  # colmajor: its short slices too
            "spmm-cuda-rowgroup", "spmm-cuda-rowwarp", "spmm-cuda-blocktc", "spmm-cuda-paneltc",
            "spmm-cuda-ell", *(("spmm-cuda-colmajor",) if layout == "col" else ())}
        # 5 nonzeros a row over 20,000 columns: the block kernels decline (fill ~ 26)
        declined = [row for row in table
                    if row["backend"] in ("spmm-cuda-blocktc", "spmm-cuda-paneltc")]
        assert len(declined) == 2
        assert all(row["predicted_ms"] is None and "fill" in row["not_modelled"]
                   for row in declined)
        table = [row for row in table if row["predicted_ms"] is not None]
        assert all(row["predicted_ms"] > 0 for row in table)
        row_major = case.notes.get("row_major_kernel", case.notes["selected"])
        timed = [row for row in table if row["trial_ms"]]  # colmajor may be two launches
        if timed:
            assert row_major == min(timed, key=lambda row: row["trial_ms"])["backend"]
        else:
            assert row_major == min(table, key=lambda row: row["predicted_ms"])["backend"]


def test_timing_path_and_kernel_breakdown():
    from sparsescope.matrices import generate
    from sparsescope.matrices.types import Matrix

    matrix = Matrix(name="u20000", csr=generate("uniform", 20_000, 100_000, seed=4), source="t")
    for backend, layout, kernel in (("spmm-cuda-rowgroup", "row", "spmm_rowgroup"),
                                    ("spmm-cuda-colmajor", "col", "spmm_colmajor")):
        case = run_case(matrix, backend, "spmm", {"k": 64, "layout": layout},
                        config=TimingConfig(warmups=2, repeats=10), seed=1)
        assert case.outcome == "ok" and case.measurement.clock == "cuda-events"
        names = [k["name"] for k in case.measurement.kernel_breakdown]
        assert any(kernel in n for n in names), names


def test_transposes_of_more_than_two_million_rows():
    """Y of 2,200,000 rows transposed back: more row tiles (68,750) than grid.y allows (65,535);
    the flat grid takes them (it failed with CUDA_ERROR_INVALID_VALUE on a 5 M-row graph)."""
    import numpy as np
    import scipy.sparse as sp

    from sparsescope.matrices.types import Matrix

    rows = 2_200_000
    rng = np.random.default_rng(1)
    csr = sp.csr_matrix((rng.random(rows) + 0.5, (np.arange(rows), rng.integers(0, 1000, rows))),
                        shape=(rows, 1000))
    case = _run(Matrix(name="tall", csr=csr, source="test"), "spmm-cuda-transposed", 2, "col",
                "float32", 4)
    assert case.outcome == "ok", case.reason
