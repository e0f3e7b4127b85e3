"""``sparsescope specs`` in-process: the table, one GPU with sources, --json, unknown names."""

from __future__ import annotations

import json

from sparsescope.cli import main

MODULES = ["sparsescope.cli.specs_cmd"]


def test_table_lists_every_gpu_with_its_figures(capsys):
    assert main(["specs"], modules=MODULES) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["GPU", "SMs", "warps/SM", "BW", "GB/s", "FP32", "GFLOP/s", "L2",
                                "MB", "latency", "ns"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert len(rows) == 8
    assert rows["H200"] == ["132", "64", "4,800", "66,900", "50", "300"]
    assert rows["B200"] == ["148", "64", "8,000", "75,000", "126", "200"]
    assert rows["RTX-4070-Ti-SUPER"] == ["66", "48", "672", "44,100", "48", "400"]


def test_table_json(capsys):
    assert main(["specs", "--json"], modules=MODULES) == 0
    gpus = json.loads(capsys.readouterr().out)["gpus"]
    assert [g["name"] for g in gpus][:2] == ["H200", "H100-SXM"]
    h200 = gpus[0]
    assert (h200["sm_count"], h200["peak_bw_gb_s"], h200["l2_bytes"]) == (132, 4800.0, 52_428_800)


def test_one_gpu_shows_every_field_with_its_source(capsys):
    assert main(["specs", "NVIDIA H200 SXM 141GB"], modules=MODULES) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "H200 (NVIDIA H200 SXM 141GB)"
    latency = next(line for line in out.splitlines() if line.split()[0] == "dram_latency_ns")
    assert latency.split()[1] == "300.0"
    assert "[estimate: seed 000 sec. 2.1" in latency
    for field in ("sm_count", "max_warps_per_sm", "registers_per_sm", "fp32_peak_gflops",
                  "shared_mem_per_sm_bytes", "memory"):
        assert any(line.split()[0] == field for line in out.splitlines()[1:])


def test_one_gpu_json(capsys):
    assert main(["specs", "NVIDIA A100-SXM4-80GB", "--json"], modules=MODULES) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "A100-80GB"
    assert out["fields"]["peak_bw_gb_s"] == {
        "value": 2039.0,
        "source": "NVIDIA A100 datasheet: 2,039 GB/s (SXM4 80GB; PCIe 80GB: 1,935)"}
    assert out["fields"]["max_warps_per_sm"]["value"] == 64


def test_unknown_name_exits_2_listing_known_names(capsys):
    assert main(["specs", "V100"], modules=MODULES) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("sparsescope: error: unknown GPU 'V100'; known: ")
    assert "H200" in captured.err and "RTX-4070-Ti-SUPER" in captured.err


def test_unknown_name_json_error(capsys):
    assert main(["specs", "V100", "--json"], modules=MODULES) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["type"] == "UnknownNameError"
