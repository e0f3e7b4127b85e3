"""``sparsescope ceilings`` in-process on the CPU path, and the per-device ceilings table."""

from __future__ import annotations

import json
import sqlite3

import pytest

from sparsescope.cli import main
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.results.ceilings_history import latest_ceilings, store_ceilings
from sparsescope.results.store import ResultsStore

MODULES = ["sparsescope.cli.ceilings_cmd"]


@pytest.fixture
def no_gpu(monkeypatch):
    """The CPU path, also on a machine that has a GPU."""
    from sparsescope.hardware import detect

    monkeypatch.setattr(detect, "detect_gpu", lambda: None)


@pytest.fixture
def own_store(monkeypatch, tmp_path):
    """A store of this test alone: the session's shared store may hold cached ceilings."""
    path = tmp_path / "store.sqlite"
    monkeypatch.setenv("SPARSESCOPE_STORE", str(path))
    return path


@pytest.fixture
def fake_measure(monkeypatch):
    """Fake CPU measurements (no seconds of copying): each returns the next copy figure."""
    from sparsescope.hardware import cpu_ceilings

    calls = []

    def fake(**kwargs):
        calls.append(kwargs)
        return MeasuredCeilings(device="Test CPU", copy_bw_gb_s=18.0 + len(calls),
                                read_bw_gb_s=25.0, fp32_gflops=150.0,
                                method={"copy_bw_gb_s": "fake"}, copy_bw_spread_pct=6.0,
                                read_bw_spread_pct=3.0, fp32_spread_pct=12.5, trials=7,
                                measured_utc=f"2026-11-24T10:0{len(calls)}:00+00:00")

    monkeypatch.setattr(cpu_ceilings, "measure_cpu_ceilings", fake)
    return calls


def test_cpu_ceilings_are_measured_and_stored(no_gpu, own_store, capsys):
    assert main(["ceilings", "--json"], modules=MODULES) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "cpu" and out["driver"] == ""
    assert out["cached"] is False and 3 <= out["trials"] <= 7 and out["measured_utc"]
    assert 0 <= out["spread_pct"]["copy_bw_gb_s"] < 100
    assert out["spread_pct"]["l2_bw_gb_s"] is None
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


def test_cpu_ceilings_json_says_whether_they_came_from_the_cache(no_gpu, own_store,
                                                                 fake_measure, capsys):
    assert main(["ceilings", "--json"], modules=MODULES) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["cached"] is False and len(fake_measure) == 1
    assert first["ceilings"]["copy_bw_gb_s"] == 19.0
    assert first["spread_pct"] == {"copy_bw_gb_s": 6.0, "read_bw_gb_s": 3.0,
                                   "l2_bw_gb_s": None, "l2_write_bw_gb_s": None,
                                   "dram_latency_ns": None,
                                   "l2_latency_ns": None, "fp32_gflops": 12.5,
                                   "dram_gather_gsectors_s": None,
                                   "l2_gather_gsectors_s": None, "launch_us": None,
                                   "call_us": None, "next_launch_us": None,
                                   "pdl_launch_us": None, "flush_writeback_share": None}
    assert first["measured_utc"] == "2026-11-24T10:01:00+00:00"
    assert first["store"] == str(own_store) and first["store_error"] == ""

    assert main(["ceilings", "--json"], modules=MODULES) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["cached"] is True and len(fake_measure) == 1  # not measured again
    assert second["ceilings"] == first["ceilings"]
    assert second["measured_utc"] == first["measured_utc"]
    assert second["machine_key"] == first["machine_key"]
    # a cached figure adds no row to the history table
    with sqlite3.connect(own_store) as con:
        assert con.execute("SELECT COUNT(*) FROM ceilings").fetchone() == (1,)


def test_refresh_measures_again_and_updates_the_cache(no_gpu, own_store, fake_measure,
                                                     capsys):
    assert main(["ceilings"], modules=MODULES) == 0
    text = capsys.readouterr().out
    assert "measured now (best of 7 trials), cached for this machine" in text
    assert "spread 6.0 %" in text and "spread 12.5 %" in text
    assert main(["ceilings"], modules=MODULES) == 0
    text = capsys.readouterr().out
    assert "cached: measured 2026-11-24T10:01:00+00:00" in text and "--refresh" in text
    assert main(["ceilings", "--refresh", "--json"], modules=MODULES) == 0
    refreshed = json.loads(capsys.readouterr().out)
    assert refreshed["cached"] is False and len(fake_measure) == 2
    assert refreshed["ceilings"]["copy_bw_gb_s"] == 20.0
    assert main(["ceilings", "--json"], modules=MODULES) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["cached"] is True and after["ceilings"]["copy_bw_gb_s"] == 20.0
    assert after["measured_utc"] == "2026-11-24T10:02:00+00:00"
    assert latest_ceilings(own_store, "Test CPU").copy_bw_gb_s == 20.0
    with sqlite3.connect(own_store) as con:
        assert con.execute("SELECT COUNT(*) FROM ceilings").fetchone() == (2,)


def test_no_store_measures_now_even_with_a_cache(no_gpu, own_store, fake_measure, capsys):
    assert main(["ceilings", "--json"], modules=MODULES) == 0
    capsys.readouterr()
    assert main(["ceilings", "--no-store", "--json"], modules=MODULES) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cached"] is False and out["store"] is None and len(fake_measure) == 2


def test_an_unusable_store_still_gives_the_ceilings(no_gpu, tmp_path, monkeypatch,
                                                    fake_measure, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SPARSESCOPE_STORE", str(blocker / "store.sqlite"))
    assert main(["ceilings", "--json"], modules=MODULES) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cached"] is False and out["store"] is None
    assert "cannot open the results store" in out["store_error"]
    assert out["ceilings"]["copy_bw_gb_s"] == 19.0
