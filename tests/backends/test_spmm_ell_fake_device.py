"""spmm-cuda-ell end to end without a GPU: CuPy replaced by NumPy and its launch by the
lane-exact emulator of ``test_spmm_ell_host.py`` (through the fake device of
``test_spmm_rowgroup_fake_device.py``), the op runner's float64 gate judging the output; and
auto keeping it on X as it is."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_spmm_rowgroup_fake_device import (  # noqa: E402, F401  (fake_device: a fixture)
    _auto,
    _matrix,
    _run,
    _timed,
    fake_device,
)


@pytest.mark.parametrize(("rows", "cols", "k", "dtype", "index_bytes"), [
    (1, 1, 1, "float32", 4), (37, 50, 3, "float64", 8), (37, 50, 8, "float32", 4),
    (70, 45, 33, "float32", 8), (130, 9, 600, "float64", 4)])
@pytest.mark.parametrize("layout", ["row", "col"])
def test_backend_passes_the_gate_in_one_launch(fake_device, rows, cols, k, dtype,  # noqa: F811
                                               index_bytes, layout):
    case = _run(_matrix(rows, cols, seed=k), "spmm-cuda-ell", k, layout, dtype, index_bytes)
    assert case.outcome == "ok", case.reason
    assert [launch[0] for launch in fake_device] == ["spmm_ell"]   # no zero fill, one kernel
    assert case.notes["zero_fill"] == "no" and case.notes["layout"] == layout
    assert case.traffic.format.startswith("ELL INT") and case.traffic.row_meta_bytes == 0


def test_backend_declines_a_hub_row(fake_device):  # noqa: F811
    case = _run(_matrix(40, 1600, seed=5, long_row=1500), "spmm-cuda-ell", 8, "col")
    assert case.outcome == "skipped" and "ELL padding" in case.reason


def test_auto_keeps_ell_on_x_as_it_is(fake_device, monkeypatch):  # noqa: F811
    """Timed fastest, the ELL kernel is kept in either layout, on X as it is (no transposes):
    the gate's run is one spmm_ell launch."""
    from sparsescope.backends import spmm_auto
    from sparsescope.backends.spmm_colmajor import SpmmCudaColMajor
    from sparsescope.backends.spmm_cuda import SpmmCudaRowWarp
    from sparsescope.backends.spmm_ell import SpmmCudaEll
    from sparsescope.backends.spmm_rowgroup import SpmmCudaRowGroup
    from sparsescope.backends.spmm_transposed import SpmmCudaTransposed

    for cls, ms in ((SpmmCudaRowGroup, 0.5), (SpmmCudaRowWarp, 0.4), (SpmmCudaColMajor, 0.3),
                    (SpmmCudaTransposed, 0.6), (SpmmCudaEll, 0.1)):
        monkeypatch.setattr(cls, "time", _timed(ms))
    monkeypatch.setattr(spmm_auto, "TRIAL_MARGIN", 1e6)
    for layout in ("row", "col"):
        fake_device.clear()
        case = _run(_matrix(300, 200, seed=3), _auto(trial=True), 8, layout)
        assert case.outcome == "ok", case.reason
        assert case.notes["selected"] == "spmm-cuda-ell"
        assert fake_device[-1][0] == "spmm_ell"
        assert "transpose_tile" not in [launch[0] for launch in fake_device[-1:]]
