"""``sparsescope analyze`` in-process: recorded evidence (--from-profile, --sass), the written
report, errors; and the CPU-side helpers of the live measurement."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _analyze_helpers import SCALAR_IDEAL_BYTES

from sparsescope.analyze.api import read_analysis
from sparsescope.analyze.measure import relative_error, to_numpy
from sparsescope.cli import main
from sparsescope.errors import UsageError
from sparsescope.profile.errors import ProfileError

MODULES = ["sparsescope.cli.analyze_cmd"]


def run(args, capsys):
    rc = main(["analyze", *args], modules=MODULES)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_from_profile_writes_report(h200_fixtures, tmp_path, capsys):
    F = h200_fixtures
    out = tmp_path / "rep"
    rc, stdout, _ = run(["--from-profile", str(F / "scalar_raw.csv"), "--source-csv",
                         str(F / "scalar_source_sass.csv"), "--sass",
                         str(F / "scalar_device_cuobjdump.sass"), "--bytes",
                         str(SCALAR_IDEAL_BYTES), "--label", "scalar", "--out", str(out),
                         "--json"], capsys)
    assert rc == 0
    data = json.loads(stdout)
    rules = {f["rule"] for f in data["analysis"]["findings"]}
    assert {"dependent_load_chain", "dominant_stall", "uncoalesced_access", "overfetch",
            "too_few_blocks"} <= rules
    assert sorted(p.rsplit("/", 1)[-1] for p in data["written"]["files"]) == [
        "analysis.json", "report.html", "report.md"]
    back = read_analysis(out / "analysis.json")
    assert back.version == "scalar" and back.evidence.ideal_bytes == SCALAR_IDEAL_BYTES
    assert back.evidence.kernels[0].profile.instructions[0].sass.startswith("LDC")
    assert [it.rule for it in back.roadmap] == [it["rule"] for it in data["analysis"]["roadmap"]]
    md = (out / "report.md").read_text()
    for heading in ("## Summary", "## Bottleneck", "## Roadmap", "## Findings"):
        assert heading in md
    assert "Gap to the floor" in md and "bytes-removed" in md
    html = (out / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<table>" in html and "http" not in \
        html.split("<style>")[0]


def test_from_profile_pick_launch_and_text(cant_csv, capsys):
    rc, stdout, _ = run(["--from-profile", str(cant_csv), "--launch", "1"], capsys)
    assert rc == 0
    assert "limited by registers (2 blocks/SM)" in stdout
    assert "`csrmv_v3_kernel`: latency-bound" in stdout
    assert "85.2 needed to cover 300 ns" in stdout


def test_measured_latency_and_bandwidth_override_the_spec(cant_csv, capsys):
    rc, stdout, _ = run(["--from-profile", str(cant_csv), "--launch", "1", "--latency-ns",
                         "600", "--bw-gb-s", "4257", "--json"], capsys)
    assert rc == 0
    data = json.loads(stdout)
    dev = data["evidence"]["device"]
    assert (dev["dram_latency_ns"], dev["peak_bw_gb_s"]) == (600.0, 4257.0)
    # required warps/SM = 4257 GB/s x 600 ns / 132 SMs / 128 B
    assert data["bottlenecks"][0]["numbers"]["required_warps_per_sm"] == \
        round(4257e9 * 600e-9 / 132 / 128, 1)


def test_static_mode_on_planted_kernels(planted, planted_dir, capsys):
    cubin = planted_dir / "planted_sm_90.cubin"  # compiled once by the planted fixture
    assert cubin.is_file()
    rc, stdout, _ = run(["--sass", str(cubin), "--kernel", "^strided_load$", "--block", "256",
                         "--json"], capsys)
    assert rc == 0
    data = json.loads(stdout)
    assert [f["rule"] for f in data["findings"]] == ["uncoalesced_access"]
    assert data["evidence"]["kernels"][0]["occupancy"]["limiter"] == "warps"


@pytest.mark.parametrize("args,code,message", [
    ([], 2, "give a WORKLOAD"),
    (["--cuda", "k.cu"], 2, "--cuda needs --kernel, --grid, --block, --args"),
    (["--compare", "one.json"], 2, "needs BEFORE.json AFTER.json"),
    (["--from-profile", "/nonexistent.csv"], ProfileError.exit_code, "no such file"),
])
def test_usage_errors(args, code, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(args, capsys)
    assert rc == code and message in err


def test_from_profile_unknown_kernel(cant_csv, capsys):
    rc, _, err = run(["--from-profile", str(cant_csv), "--kernel", "nope"], capsys)
    assert rc == 2 and "csr_partition_kernel" in err


def test_relative_error_and_to_numpy():
    rel, mx = relative_error([np.array([1.0, 2.0, 2.0])], [np.array([1.0, 2.0, 3.0])])
    assert rel == pytest.approx(1 / np.sqrt(14)) and mx == 1.0
    assert relative_error([np.zeros(2)], [np.zeros(2)]) == (0.0, 0.0)
    assert [a.tolist() for a in to_numpy((np.ones(2), np.array([3])))] == [[1.0, 1.0], [3]]
    with pytest.raises(UsageError, match="returned 1 output"):
        relative_error([np.ones(1)], [np.ones(1), np.ones(1)])
