"""The assembled analysis on the real fixtures: chains named by parameter, resources, stalls,
JSON and Markdown."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from sparsescope.errors import UsageError
from sparsescope.report.sass_render import render_markdown
from sparsescope.sass.analysis import analyse_listing, resources_from_text
from sparsescope.sass.listing import read_listing
from sparsescope.sass.stall_map import read_source_sass_csv


@pytest.fixture(scope="module")
def fixture_kernels(h200_fixtures):
    src = (h200_fixtures / "spmv_kernels.cu").read_text()
    res = resources_from_text((h200_fixtures / "spmv_kernels_resources.txt").read_text())
    out = {}
    for fmt in ("cuobjdump.sass", "nvdisasm.txt"):
        for k in read_listing(h200_fixtures / f"spmv_kernels_sm90.{fmt}"):
            out[(fmt, k.name)] = analyse_listing(k, resources=res[k.name], source=src)
    return out


@pytest.mark.parametrize("fmt", ["cuobjdump.sass", "nvdisasm.txt"])
@pytest.mark.parametrize("kernel", ["spmv_csr_scalar", "spmv_csr_vector8"])
def test_fixture_chain_col_to_x_in_loop(fixture_kernels, fmt, kernel):
    a = fixture_kernels[(fmt, kernel)]
    in_loop = Counter(c.label for c in a.loop_chains)
    assert set(in_loop) == {"col -> x"}
    # the unrolled main loop holds one chain per unrolled element: 16 (scalar) / 4 (vector8),
    # plus the scalar kernel's one-element remainder loop
    assert in_loop["col -> x"] == {"spmv_csr_scalar": 17, "spmv_csr_vector8": 4}[kernel]
    assert a.max_chain_depth == 3  # rowptr -> col -> x
    labels = {c.label for c in a.load_chains}
    assert {"rowptr -> col", "rowptr -> val", "col -> x"} == labels
    for c in a.loop_chains:
        assert [v.mnemonic for v in c.via] == ["IMAD.WIDE"]
        assert c.loads[0].param_offset == 0x10 and c.loads[1].param_offset == 0x20
    hot = a.cfg.loops[a.cfg.hot_loop].header_address
    assert Counter(c.loop_header for c in a.loop_chains)[hot] == \
        {"spmv_csr_scalar": 16, "spmv_csr_vector8": 4}[kernel]


def test_fixture_resources_in_analysis(fixture_kernels):
    vec = fixture_kernels[("nvdisasm.txt", "spmv_csr_vector8")]
    sca = fixture_kernels[("nvdisasm.txt", "spmv_csr_scalar")]
    assert (vec.resources.registers, vec.resources.constant_bytes) == (25, 576)
    assert (sca.resources.registers, sca.resources.shared_bytes, sca.resources.local_bytes,
            sca.resources.stack_bytes) == (32, 0, 0, 0)
    assert sca.param_base == 0x210
    assert [p.name for p in sca.params] == ["n", "rowptr", "col", "val", "x", "y"]


def test_to_dict_is_json_and_has_the_cli_fields(fixture_kernels):
    a = fixture_kernels[("cuobjdump.sass", "spmv_csr_vector8")]
    d = json.loads(json.dumps(a.to_dict()))
    assert d["name"] == "spmv_csr_vector8" and d["instructions"] == 120
    assert d["registers"] == 25 and d["shared_bytes"] == 0
    assert sum(d["classes"].values()) == 120 and d["classes"]["LDG"] == 23
    assert d["loops"][0]["header"] == 0x210 and d["loops"][0]["hot"] is True
    chain = next(c for c in d["load_chains"] if c["loads"] == [0x210, 0x280])
    assert chain["via"] == [0x260] and chain["label"] == "col -> x" and chain["in_loop"]


def test_markdown_section(fixture_kernels):
    md = render_markdown(fixture_kernels[("cuobjdump.sass", "spmv_csr_scalar")])
    for heading in ("## SASS analysis: `spmv_csr_scalar`", "### Resources", "### Instruction mix",
                    "### Control flow", "### Dependent load chains"):
        assert heading in md
    assert "| Registers per thread | 32 |" in md
    assert "`col -> x` x17 (in a loop)" in md


def test_stall_mapping_puts_long_scoreboard_on_the_x_consumer(h200_fixtures):
    (prof,) = read_source_sass_csv(h200_fixtures / "scalar_source_sass.csv")
    assert prof.name == "spmv_csr_scalar" and len(prof.rows) == 256
    listing = read_listing(h200_fixtures / "scalar_device_cuobjdump.sass")[0]
    a = analyse_listing(listing, source=(h200_fixtures / "scalar_device.cu").read_text(),
                        stalls=prof)
    m = a.stall_map
    assert m.total_samples == sum(r.samples for r in prof.rows)
    top = m.top(1, reason="long_sb")[0]
    assert (top.address, top.text, top.klass) == (0x970, "FFMA R21, R8, R24, R21", "FFMA")
    assert top.dominant_reason == "Long Scoreboard" and top.role == "uses chain load"
    x_load = next(g for g in a.global_loads if g.address == top.chain_load_address)
    assert x_load.param_name == "x" and x_load.text == "LDG.E.CONSTANT R8, desc[UR4][R8.64]"
    assert a.cfg.loop_of[[i.address for i in a.instructions].index(0x970)] == a.cfg.hot_loop
    assert m.hot_loop_header == 0x4A0 == a.cfg.loops[a.cfg.hot_loop].header_address
    assert next(iter(m.reason_totals)) == "Long Scoreboard"
    assert m.by_class()["FFMA"]["dominant_reason"] == "Long Scoreboard"
    assert "### Stall mapping" in render_markdown(a)


def test_stall_mapping_refuses_another_build(h200_fixtures):
    (prof,) = read_source_sass_csv(h200_fixtures / "scalar_source_sass.csv")
    other = read_listing(h200_fixtures / "spmv_kernels_sm90.cuobjdump.sass")[0]
    with pytest.raises(UsageError, match="do not match"):
        analyse_listing(other, stalls=prof)
