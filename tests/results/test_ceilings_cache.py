"""The per-machine cache of the CPU ceilings in the results store (fake measurements), and the
report's device table showing their spread."""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest

from sparsescope.errors import ResultsFormatError
from sparsescope.hardware import cpu_ceilings
from sparsescope.hardware.types import DeviceSpec, MeasuredCeilings
from sparsescope.results import ceilings_cache
from sparsescope.results.ceilings_cache import cached_cpu_ceilings, lookup_cpu_ceilings
from sparsescope.results.store import ResultsStore

KEY = "cpu-ceilings/2|host=test|cpu=Test CPU|cores=2|ram=24GiB"


def fake_ceilings(copy: float = 18.2, when: str = "2026-11-24T10:00:00+00:00"
                  ) -> MeasuredCeilings:
    return MeasuredCeilings(device="Test CPU", copy_bw_gb_s=copy, read_bw_gb_s=25.0,
                            fp32_gflops=197.0, method={"copy_bw_gb_s": "np.copyto, fake"},
                            copy_bw_spread_pct=6.0, read_bw_spread_pct=2.5,
                            fp32_spread_pct=41.0, trials=7, measured_utc=when)


@pytest.fixture
def store_path(tmp_path, monkeypatch):
    path = tmp_path / "store" / "results.sqlite"
    monkeypatch.setenv("SPARSESCOPE_STORE", str(path))
    return path


@pytest.fixture
def measure(monkeypatch):
    """Fake measurements: each call returns the next copy bandwidth (18.2, 19.0, ...)."""
    calls = []

    def fake(**kwargs):
        calls.append(kwargs)
        return fake_ceilings(copy=18.2 + 0.8 * (len(calls) - 1),
                             when=f"2026-11-24T10:0{len(calls)}:00+00:00")

    monkeypatch.setattr(cpu_ceilings, "measure_cpu_ceilings", fake)
    monkeypatch.setattr(cpu_ceilings, "machine_key", lambda: KEY)
    return calls


def test_store_round_trips_the_cached_ceilings(store_path):
    store = ResultsStore()
    assert store.path == store_path
    assert store.load_ceilings(KEY) is None
    saved = fake_ceilings()
    store.save_ceilings(KEY, saved)
    loaded = store.load_ceilings(KEY)
    assert loaded == saved and loaded.method == saved.method
    assert (loaded.copy_bw_spread_pct, loaded.fp32_spread_pct, loaded.trials) == (6.0, 41.0, 7)
    assert store.load_ceilings(KEY + "-other") is None
    # one row per machine: saving again replaces it
    store.save_ceilings(KEY, fake_ceilings(copy=20.0, when="2026-11-25T10:00:00+00:00"))
    assert store.load_ceilings(KEY).copy_bw_gb_s == 20.0
    with sqlite3.connect(store_path) as con:
        rows = con.execute("SELECT machine_key, device, measured_utc FROM ceilings_cache")
        assert rows.fetchall() == [(KEY, "Test CPU", "2026-11-25T10:00:00+00:00")]


def test_a_cached_row_that_no_longer_reads_is_a_format_error(store_path):
    store = ResultsStore()
    store.save_ceilings(KEY, fake_ceilings())
    with sqlite3.connect(store_path) as con:
        con.execute("UPDATE ceilings_cache SET json = '{\"device\": 3}'")
    with pytest.raises(ResultsFormatError, match="cached ceilings of"):
        store.load_ceilings(KEY)


def test_first_call_measures_and_caches_the_second_reads_the_cache(store_path, measure):
    first = lookup_cpu_ceilings()
    assert not first.cached and first.saved and first.store == str(store_path)
    assert first.ceilings.copy_bw_gb_s == 18.2 and len(measure) == 1
    second = lookup_cpu_ceilings()
    assert second.cached and not second.saved
    assert len(measure) == 1  # not measured again
    assert second.ceilings == first.ceilings
    assert second.measured_utc == first.measured_utc == "2026-11-24T10:01:00+00:00"
    assert cached_cpu_ceilings() == first.ceilings and len(measure) == 1


def test_two_runs_get_the_same_peak(store_path, measure):
    """What issue 16 asks: identical runs judge % of peak against the same ceiling."""
    peaks = [cached_cpu_ceilings().copy_bw_gb_s for _ in range(2)]
    time_s, nbytes = 1e-3, 15e6
    pct = [100 * nbytes / time_s / 1e9 / peak for peak in peaks]
    assert abs(pct[0] - pct[1]) / pct[0] < 0.05
    assert len(measure) == 1


def test_refresh_measures_again_and_replaces_the_cache(store_path, measure):
    cached_cpu_ceilings()
    refreshed = lookup_cpu_ceilings(refresh=True)
    assert not refreshed.cached and refreshed.saved and len(measure) == 2
    assert refreshed.ceilings.copy_bw_gb_s == pytest.approx(19.0)
    again = cached_cpu_ceilings()
    assert again.copy_bw_gb_s == pytest.approx(19.0) and len(measure) == 2
    assert ResultsStore().load_ceilings(KEY) == refreshed.ceilings


def test_a_store_given_by_path_or_object(tmp_path, measure):
    path = tmp_path / "elsewhere.sqlite"
    cached_cpu_ceilings(path)
    assert cached_cpu_ceilings(ResultsStore(path)).copy_bw_gb_s == 18.2
    assert len(measure) == 1


def test_use_store_false_measures_and_touches_no_store(store_path, measure):
    found = lookup_cpu_ceilings(use_store=False)
    assert not found.cached and found.store is None and len(measure) == 1
    assert not store_path.exists()


def test_a_store_that_cannot_be_opened_measures_and_goes_on(tmp_path, monkeypatch, measure):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SPARSESCOPE_STORE", str(blocker / "store.sqlite"))
    found = lookup_cpu_ceilings()
    assert found.ceilings.copy_bw_gb_s == 18.2 and not found.cached and not found.saved
    assert "reading the cached ceilings failed" in found.store_error
    assert "caching the measured ceilings failed" in found.store_error
    assert cached_cpu_ceilings().copy_bw_gb_s == pytest.approx(19.0)  # measured again


def test_a_store_that_is_not_sqlite_measures_and_goes_on(tmp_path, measure):
    path = tmp_path / "garbage.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    found = lookup_cpu_ceilings(path)
    assert not found.cached and found.store_error and len(measure) == 1


def test_an_unreadable_cached_row_is_measured_again_and_replaced(store_path, measure):
    ResultsStore().save_ceilings(KEY, fake_ceilings(copy=99.0))
    with sqlite3.connect(store_path) as con:
        con.execute("UPDATE ceilings_cache SET json = 'not json'")
    found = lookup_cpu_ceilings()
    assert not found.cached and found.saved and found.ceilings.copy_bw_gb_s == 18.2
    assert "reading the cached ceilings failed" in found.store_error
    assert cached_cpu_ceilings().copy_bw_gb_s == 18.2 and len(measure) == 1


def test_the_cache_layer_calls_the_measuring_module_by_attribute():
    """Tests that patch ``cpu_ceilings.measure_cpu_ceilings`` also reach the cached path."""
    assert ceilings_cache.cpu_ceilings is cpu_ceilings


# ----------------------------------------------------------------------------- the report

def cpu_runset(make_runset, ceilings: MeasuredCeilings):
    runset = make_runset()
    spec = DeviceSpec(
        name="cpu", vendor_name="Test CPU", kind="cpu", compute_capability="", sm_count=2,
        max_warps_per_sm=1, max_threads_per_sm=1, max_blocks_per_sm=1, registers_per_sm=0,
        shared_mem_per_sm_bytes=0, warp_schedulers_per_sm=1, l2_bytes=32 * 2**20,
        peak_bw_gb_s=ceilings.copy_bw_gb_s, fp32_peak_gflops=ceilings.fp32_gflops,
        sm_clock_mhz=0.0, dram_latency_ns=80.0)
    return dataclasses.replace(runset, device=spec, ceilings=ceilings)


def test_device_table_shows_the_spread_of_cpu_ceilings(make_runset):
    from sparsescope.report.context import build_context
    from sparsescope.report.run_tables import device_table

    table = device_table(build_context(cpu_runset(make_runset, fake_ceilings())))
    assert "spread" in [c.key for c in table.columns]
    rows = {r.quantity: r for r in table.rows}
    assert rows["Peak bandwidth"].measured == "18.2"
    assert rows["Peak bandwidth"].spread == "6.0 % (7 trials)"
    assert rows["Read bandwidth"].spread == "2.5 % (7 trials)"
    assert rows["Peak FP32"].spread == "41.0 % (7 trials)"
    assert rows["Device"].spread is None
    assert "Spread of trials" in table.headers()
    assert ("18.2 GB/s (best of 7 trials spread over 6.0 %, measured "
            "2026-11-24T10:00:00+00:00)") in table.reading
    # FP32 spread over 10 %: the reading says the machine was busy
    assert "spread widely (FP32 41 %)" in table.reading
    assert "sparsescope ceilings --refresh" in table.reading
    ops = device_table(build_context(cpu_runset(make_runset, fake_ceilings())), spmv=False)
    assert "best of 7 trials spread over 6.0 %" in ops.reading


def test_device_table_without_spreads_has_no_spread_column(make_runset):
    from sparsescope.report.context import build_context
    from sparsescope.report.run_tables import device_table

    old = MeasuredCeilings(device="Test CPU", copy_bw_gb_s=12.5, fp32_gflops=50.0)
    table = device_table(build_context(cpu_runset(make_runset, old)))
    assert "spread" not in [c.key for c in table.columns]
    assert "trials" not in table.reading and "12.5 GB/s, is the peak" in table.reading
    gpu = device_table(build_context(make_runset()))
    assert "spread" not in [c.key for c in gpu.columns]
