"""``sparsescope sass`` in-process: JSON fields, Markdown text, errors."""

from __future__ import annotations

import json

from sparsescope.cli import main

MODULES = ["sparsescope.cli.sass_cmd"]


def test_sass_json_on_fixture_listing(h200_fixtures, capsys):
    rc = main(["sass", str(h200_fixtures / "spmv_kernels_sm90.nvdisasm.txt"), "--kernel",
               "scalar", "--source", str(h200_fixtures / "spmv_kernels.cu"), "--json"],
              modules=MODULES)
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    (k,) = out["kernels"]
    assert (k["name"], k["instructions"], k["registers"]) == ("spmv_csr_scalar", 256, None)
    assert sum(k["classes"].values()) == 256
    assert [lp["header"] for lp in k["loops"]] == [0x280, 0x4B0]
    chains = [c for c in k["load_chains"] if c["in_loop"]]
    assert len(chains) == 17 and {c["label"] for c in chains} == {"col -> x"}
    assert all(len(c["loads"]) == 2 and c["via"] for c in chains)


def test_sass_text_with_param_names_and_occupancy(fatbin_80_90, capsys):
    rc = main(["sass", str(fatbin_80_90), "--arch", "sm_90", "--kernel", r"spmv_csr<int>",
               "--param-names", "n,row_ptr,col,val,x,y", "--block-size", "256"], modules=MODULES)
    assert rc == 0
    text = capsys.readouterr().out
    assert "## SASS analysis: `void spmv_csr<int>(int, int const*" in text
    assert "`col -> x`" in text and "`row_ptr -> col`" in text
    assert "Theoretical occupancy at 256 threads/block (compute capability 9.0)" in text


def test_occupancy_without_register_counts_says_why(h200_fixtures, capsys):
    """A saved cuobjdump listing has no -res-usage output: no occupancy, and the reason."""
    listing = str(h200_fixtures / "spmv_kernels_sm90.cuobjdump.sass")
    args = ["sass", listing, "--kernel", "scalar", "--block-size", "256", "--gpu", "H200"]
    assert main([*args, "--json"], modules=MODULES) == 0
    (k,) = json.loads(capsys.readouterr().out)["kernels"]
    assert k["occupancy"] is None
    assert k["occupancy_reason"].startswith("Theoretical occupancy at 256 threads/block: not "
                                            "computed -- the input carries no register count")
    assert main(args, modules=MODULES) == 0
    text = capsys.readouterr().out
    assert "Theoretical occupancy at 256 threads/block: not computed" in text
    assert "`cuobjdump -res-usage -sass`" in text
    # no block size asked: nothing to explain
    assert main(["sass", listing, "--kernel", "scalar"], modules=MODULES) == 0
    assert "Theoretical occupancy" not in capsys.readouterr().out


def test_sass_errors(tmp_path, capsys, h200_fixtures):
    rc = main(["sass", str(tmp_path / "missing.cubin")], modules=MODULES)
    assert rc == 2 and "no such file" in capsys.readouterr().err
    rc = main(["sass", str(h200_fixtures / "spmv_kernels_sm90.cuobjdump.sass"), "--kernel",
               "nomatch"], modules=MODULES)
    assert rc == 2 and "no kernel matching 'nomatch'" in capsys.readouterr().err


def test_sass_stalls_and_list(h200_fixtures, fatbin_80_90, capsys):
    rc = main(["sass", str(h200_fixtures / "scalar_device_cuobjdump.sass"), "--source",
               str(h200_fixtures / "scalar_device.cu"), "--stalls",
               str(h200_fixtures / "scalar_source_sass.csv"), "--json"], modules=MODULES)
    assert rc == 0
    (k,) = json.loads(capsys.readouterr().out)["kernels"]
    top = k["stalls"]["top"][0]
    assert (top["address"], top["class"], top["dominant_reason"], top["role"]) == \
        (0x970, "FFMA", "Long Scoreboard", "uses chain load")
    assert k["stalls"]["hot_loop_header"] == 0x4A0
    rc = main(["sass", str(fatbin_80_90), "--list", "--arch", "sm_80", "--json"], modules=MODULES)
    assert rc == 0
    listed = json.loads(capsys.readouterr().out)["kernels"]
    assert len(listed) == 5 and {r["arch"] for r in listed} == {"sm_80"}
    assert any(r["demangled"].startswith("void spmv_csr<long long>") for r in listed)
