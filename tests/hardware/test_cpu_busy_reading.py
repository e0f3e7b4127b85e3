"""The report says the machine was busy while the CPU ceilings were measured only where the
load recorded then shows it (other processes' share of the CPUs), never from the trials'
spread alone: one slow trial on an idle VM widens the spread."""

from __future__ import annotations

from sparsescope.hardware.cpu_ceilings import machine_load_text
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.report.run_tables import busy_note

IDLE = machine_load_text(1.2, 0.0, 2, 0.8, 0.05)
BUSY = machine_load_text(48.0, 2.0, 2, 1.4, 2.10)


def ceilings(fp32_spread: float, load: str | None) -> MeasuredCeilings:
    method = {"machine_load": load} if load is not None else {}
    return MeasuredCeilings(device="cpu", copy_bw_gb_s=20.0, read_bw_gb_s=21.0,
                            fp32_gflops=60.0, copy_bw_spread_pct=3.0, read_bw_spread_pct=2.0,
                            fp32_spread_pct=fp32_spread, trials=3, method=method)


def test_an_idle_machine_with_a_wide_spread_is_not_called_busy():
    note = busy_note(ceilings(41.0, IDLE))
    assert note == (" The trials spread widely (FP32 41 %); the best trial is kept, and "
                    "`sparsescope ceilings --refresh` measures the ceilings again.")
    assert "busy" not in note


def test_a_busy_signal_is_named_with_its_share():
    note = busy_note(ceilings(41.0, BUSY))
    # others 48 % + steal 2 % = 50 %
    assert note.startswith(" The trials spread widely (FP32 41 %): other processes took 50 % "
                           "of the CPUs' time while measuring: the machine was busy; ")
    calm = busy_note(ceilings(4.0, BUSY))  # busy, yet the trials agreed
    assert calm.startswith(" Other processes took 50 % of the CPUs' time while measuring: the "
                           "machine was busy; the best trial is kept")


def test_no_signal_no_claim():
    assert busy_note(ceilings(4.0, IDLE)) == ""
    assert busy_note(ceilings(4.0, None)) == ""  # ceilings of an older protocol
    assert "busy" not in busy_note(ceilings(41.0, None))
