"""``analyze --from-profile`` on the recorded H200 profile: an achieved DRAM % above the
Little's-law ceiling it prints comes with its cause, in the text and in ``--json`` (issue 34;
the scan is ``tests/report/contradiction_scan.py``)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from sparsescope.cli import main

_SCAN = Path(__file__).resolve().parents[1] / "report" / "contradiction_scan.py"
_spec = importlib.util.spec_from_file_location("contradiction_scan", _SCAN)
scan = sys.modules.setdefault("contradiction_scan", importlib.util.module_from_spec(_spec))
if not hasattr(scan, "markdown_contradictions"):  # dataclasses look the module up by name
    _spec.loader.exec_module(scan)

MODULES = ["sparsescope.cli.analyze_cmd"]


def test_analyze_from_profile_names_why_dram_beats_its_ceiling(h200_fixtures, capsys):
    profile = str(h200_fixtures / "spmv_full_raw.csv")
    assert main(["analyze", "--from-profile", profile, "--json"], modules=MODULES) == 0
    out = json.loads(capsys.readouterr().out)
    assert scan.json_contradictions(out) == []
    scalar = next(b for b in out["bottlenecks"] if b["kernel"] == "spmv_csr_scalar")
    assert (scalar["numbers"]["bw_pct_of_peak"], scalar["numbers"]["littles_law_ceiling_pct"]) \
        == (29.46, 17.02)
    assert scalar["numbers"]["lines_in_flight_per_warp_needed"] == 1.73  # 29.46 / 17.02
    assert "29.5 % is above the 17.0 % Little's-law ceiling because" in scalar["reason"]
    assert "19.5 sectors, 4.9 lines, per request" in scalar["reason"]
    assert "below the 300 ns estimate" in scalar["reason"]  # the spec table's latency
    csrmv = next(b for b in out["bottlenecks"] if b["kernel"] == "csrmv_v3_kernel")
    assert "38.4 % is above the 34.8 % Little's-law ceiling because" in csrmv["reason"]
    assert main(["analyze", "--from-profile", profile], modules=MODULES) == 0
    text = capsys.readouterr().out
    assert scan.markdown_contradictions(text) == []
    assert "Long Scoreboard takes 75.2 %" in text and "long_scoreboard takes" not in text


def test_static_analysis_shows_no_share_without_a_time(h200_fixtures, capsys):
    listing = str(h200_fixtures / "spmv_kernels_sm90.cuobjdump.sass")
    assert main(["analyze", "--sass", listing], modules=MODULES) == 0
    text = capsys.readouterr().out
    assert "| `spmv_csr_scalar` | - | - | 1 |" in text and "50.0 %" not in text
    assert "Share of GPU time: not known for a kernel without a time" in text
