"""``sparsescope ceilings`` in-process on the CPU path, and the per-device ceilings table."""

from __future__ import annotations

import json
import sqlite3

import pytest

from sparsescope.cli import main
from sparsescope.cli.ceilings_cmd import latest_ceilings, store_ceilings
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.results.store import ResultsStore

MODULES = ["sparsescope.cli.ceilings_cmd"]


@pytest.fixture
def no_gpu(monkeypatch):
    """The CPU path, also on a machine that has a GPU."""
    from sparsescope.hardware import detect

    monkeypatch.setattr(detect, "detect_gpu", lambda: None)


def test_cpu_ceilings_are_measured_and_stored(no_gpu, capsys):
    assert main(["ceilings", "--json"], modules=MODULES) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "cpu" and out["driver"] == ""
    figures = out["ceilings"]
    assert figures["copy_bw_gb_s"] > 0.1 and figures["read_bw_gb_s"] > 0.1
    assert figures["fp32_gflops"] > 0.1
    # the CPU path measures no L2 or latency
    assert figures["l2_bw_gb_s"] is None and figures["dram_latency_ns"] is None
    assert out["units"]["dram_latency_ns"] == "ns"
    assert "np.copyto" in out["method"]["copy_bw_gb_s"]
    store = ResultsStore().path
    assert out["store"] == str(store)
    stored = latest_ceilings(store, out["device"])
    assert stored is not None
    assert stored.copy_bw_gb_s == figures["copy_bw_gb_s"]
    assert stored.method["fp32_gflops"] == out["method"]["fp32_gflops"]
    with sqlite3.connect(store) as con:
        assert con.execute("SELECT kind FROM ceilings").fetchall() == [("cpu",)]


def test_no_store_leaves_the_store_alone(no_gpu, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPARSESCOPE_STORE", str(tmp_path / "fresh.sqlite"))
    assert main(["ceilings", "--no-store"], modules=MODULES) == 0
    text = capsys.readouterr().out
    assert text.startswith("ceilings of ") and "(cpu)" in text.splitlines()[0]
    assert "copy bandwidth" in text and "not stored (--no-store)" in text
    assert not (tmp_path / "fresh.sqlite").exists()


def test_latest_ceilings_per_device(tmp_path):
    path = tmp_path / "store.sqlite"
    assert latest_ceilings(path, "NVIDIA H200") is None
    old = MeasuredCeilings(device="NVIDIA H200", copy_bw_gb_s=4100.0, dram_latency_ns=700.0,
                           method={"copy_bw_gb_s": "memcpy"})
    new = MeasuredCeilings(device="NVIDIA H200", copy_bw_gb_s=4250.0, l2_latency_ns=210.0)
    other = MeasuredCeilings(device="NVIDIA H100 80GB HBM3", copy_bw_gb_s=3000.0)
    store_ceilings(path, old, "gpu", measured_utc="2026-11-20T10:00:00+00:00")
    store_ceilings(path, other, "gpu", measured_utc="2026-11-22T10:00:00+00:00")
    store_ceilings(path, new, "gpu", measured_utc="2026-11-21T10:00:00+00:00")
    assert latest_ceilings(path, "NVIDIA H200") == new
    assert latest_ceilings(path, "NVIDIA H100 80GB HBM3") == other
    assert latest_ceilings(path, "NVIDIA B200") is None
    # the results store's own tables live in the same file, untouched
    ResultsStore(path).runs()
    with sqlite3.connect(path) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"ceilings", "runs", "cases"} <= tables
