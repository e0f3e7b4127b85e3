"""The worked plug-in example of docs/PLUGINS.md (``examples/plugin_cuda_spmv``: spmv.cu in
about 40 lines of CuPy): planned and predicted on any host, skipped without a GPU, and on a GPU
checked against float64, poison-tested, timed and predicted through ``sparsescope run``."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope.backends import plugins
from sparsescope.backends.registry import get_backend
from sparsescope.backends.runner import run_case
from sparsescope.hardware.detect import gpu_available
from sparsescope.matrices.types import Matrix
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.timing.types import TimingConfig

CUDA_PLUGIN = Path(__file__).resolve().parents[2] / "examples" / "plugin_cuda_spmv" / "cuda_spmv.py"
FAST = TimingConfig(warmups=1, repeats=3)


@pytest.fixture(autouse=True)
def cuda_example(plugin_registry):
    """The example loaded from its file, and unloaded after."""
    plugins.load_plugin(str(CUDA_PLUGIN))


def _matrix(rows: int = 600, cols: int = 500, seed: int = 3) -> Matrix:
    """Random rows with every tenth row empty: 600 rows are three 256-thread blocks."""
    coo = sp.random(rows, cols, density=0.02, format="coo", random_state=seed, dtype=np.float64)
    keep = coo.row % 10 != 0
    csr = sp.csr_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=(rows, cols))
    csr.sort_indices()
    assert np.diff(csr.indptr)[::10].sum() == 0 and csr.nnz > rows
    return Matrix(name=f"rand{rows}", csr=csr, source="generated:test", kind="uniform", seed=seed)


def test_the_example_declares_a_gpu_spmv_and_plans_on_the_host():
    matrix = _matrix()
    backend = get_backend("plugin-cuda-csr")
    cap = backend.capability
    assert (cap.ops, cap.device, cap.value_dtypes, cap.index_bytes) == (
        ("spmv",), "gpu", ("float32",), (4,))
    traffic, shape = backend.host_plan(matrix.csr, "float32", 4, sms=132)
    assert traffic == csr_spmv_traffic(600, 500, matrix.csr.nnz)  # plain CSR INT32, y written
    assert (shape.block_threads, shape.grid_blocks, shape.threads_per_row) == (256, 3, 1)
    assert shape.decomposition == "rows" and shape.cuda_source == ""  # no SASS of ours to read


@pytest.mark.skipif(gpu_available(), reason="on a GPU the example runs (the GPU tests below)")
def test_without_a_gpu_the_example_is_skipped_with_its_reason():
    case = run_case(_matrix(), "plugin-cuda-csr", config=FAST)
    assert case.outcome == "skipped"
    assert case.reason.startswith("backend unavailable: ")


@pytest.mark.gpu
def test_on_a_gpu_the_example_matches_float64_and_our_scalar_kernel():
    matrix = _matrix()
    ours = run_case(matrix, "cuda-csr-scalar", config=FAST)
    case = run_case(matrix, "plugin-cuda-csr", config=FAST)
    assert case.outcome == "ok", case.reason
    assert case.correctness.rel_err < 1e-5
    assert case.traffic == ours.traffic  # the same CSR INT32 bytes, declared by default
    assert len(case.measurement.samples_ms) >= 3 and case.measurement.clock == "cuda-events"


@pytest.mark.gpu
def test_on_a_gpu_a_skipped_block_leaves_nan_and_fails_the_check(monkeypatch):
    """The poisoned output at work: a launch one block short leaves rows 512.. at NaN."""
    (example,) = plugins.loaded_plugins()
    block = sys.modules[example.cls.__module__].BLOCK

    def short_launch(self, p):
        grid = math.ceil(p["rows"] / block) - 1
        p["kernel"]((grid,), (block,), (np.int32(p["rows"]), p["indptr"], p["col"], p["val"],
                                        p["x"], p["y"]))

    monkeypatch.setattr(example.cls, "launch", short_launch)
    case = run_case(_matrix(), "plugin-cuda-csr", config=FAST)
    assert case.outcome == "failed" and case.measurement is None


@pytest.mark.gpu
def test_on_a_gpu_sparsescope_run_checks_times_and_predicts_it(tmp_path, capsys):
    from sparsescope.cli import main

    out = tmp_path / "out"
    rc = main(["run", "--suite", "awkward", "--plugin", str(CUDA_PLUGIN), "--backend",
               "plugin-cuda-csr", "--backend", "cuda-csr-scalar", "--out", str(out),
               "--no-store", "--json", "--warmups", "1", "--repeats", "3"])
    result = json.loads(capsys.readouterr().out)
    assert rc == 0, result.get("exit_reason")
    outcomes = {(c["matrix"], c["backend"]): c["outcome"] for c in result["cases"]}
    mine = {m: o for (m, b), o in outcomes.items() if b == "plugin-cuda-csr"}
    assert len(mine) == 10 and set(mine.values()) == {"ok"}
    assert mine == {m: o for (m, b), o in outcomes.items() if b == "cuda-csr-scalar"}
    from sparsescope.results.io import read_runset

    stored = [c for c in read_runset(out / "results.json").cases
              if c.backend == "plugin-cuda-csr"]
    assert all(c.prediction is not None and c.prediction.predicted_ms > 0 for c in stored)
    assert "plugin-cuda-csr" in (out / "report.md").read_text()
