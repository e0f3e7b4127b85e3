"""The GPU spec table: seed figures, datasheet figures, derived FP32, sources, name lookup."""

from __future__ import annotations

import dataclasses

import pytest

from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.hardware.specs import (
    fp32_peak_gflops,
    get_spec,
    list_specs,
    match_device_name,
    spec_names,
)

MiB = 2**20


def test_h200_matches_seed_section_2_1():
    h200 = get_spec("H200")
    assert (h200.sm_count, h200.max_warps_per_sm, h200.max_threads_per_sm) == (132, 64, 2048)
    assert h200.registers_per_sm == 65_536
    assert h200.warp_schedulers_per_sm == 4
    assert h200.peak_bw_gb_s == 4800.0
    assert h200.fp32_peak_gflops == 66_900.0
    assert h200.sm_clock_mhz == 1980.0
    assert h200.dram_latency_ns == 300.0
    assert h200.l2_bytes == 50 * MiB
    assert h200.compute_capability == "9.0"
    assert h200.kind == "gpu"
    assert h200.memory == "141 GB HBM3e"


def test_b200_matches_seed_section_7_10():
    b200 = get_spec("B200")
    assert (b200.sm_count, b200.max_warps_per_sm) == (148, 64)
    assert b200.peak_bw_gb_s == 8000.0
    assert b200.dram_latency_ns == 200.0
    assert b200.compute_capability == "10.0"
    assert "7.10" in b200.sources["sm_count"]


def test_seed_section_7_11_bandwidths():
    assert get_spec("H100-SXM").peak_bw_gb_s == 3350.0
    assert get_spec("RTX-4070-Ti-SUPER").peak_bw_gb_s == 672.0


@pytest.mark.parametrize("name", ["RTX-4090", "RTX-4070-Ti-SUPER"])
def test_ada_has_48_warps_per_sm_not_the_seeds_64(name):
    spec = get_spec(name)
    limits = (spec.max_warps_per_sm, spec.max_threads_per_sm, spec.max_blocks_per_sm)
    assert limits == (48, 1536, 24)
    assert spec.shared_mem_per_sm_bytes == 100 * 1024
    assert spec.compute_capability == "8.9"


def test_rtx_4070_ti_super_source_records_the_seed_claim():
    sources = get_spec("RTX-4070-Ti-SUPER").sources
    assert "seed 000 sec. 7.11 says 64 warps" in sources["max_warps_per_sm"]


@pytest.mark.parametrize("name, sms, bw, l2_mb, cc", [
    ("H100-PCIe", 114, 2000.0, 50, "9.0"),
    ("A100-40GB", 108, 1555.0, 40, "8.0"),
    ("A100-80GB", 108, 2039.0, 40, "8.0"),
    ("RTX-4090", 128, 1008.0, 72, "8.9"),
    ("RTX-4070-Ti-SUPER", 66, 672.0, 48, "8.9"),
    ("B200", 148, 8000.0, 126, "10.0"),
])
def test_datasheet_figures(name, sms, bw, l2_mb, cc):
    spec = get_spec(name)
    assert (spec.sm_count, spec.peak_bw_gb_s, spec.l2_bytes, spec.compute_capability) == (
        sms, bw, l2_mb * MiB, cc)


def test_fp32_formula_hand_computed():
    # 132 x 128 x 2 x 1.98 GHz; 108 x 64 x 2 x 1.41 GHz (GA100 has 64 FP32 lanes per SM)
    assert fp32_peak_gflops(132, "9.0", 1980.0) == pytest.approx(66_908.16)
    assert fp32_peak_gflops(108, "8.0", 1410.0) == pytest.approx(19_491.84)


@pytest.mark.parametrize("spec", list_specs(), ids=lambda s: s.name)
def test_table_fp32_agrees_with_derivation_within_half_a_percent(spec):
    derived = fp32_peak_gflops(spec.sm_count, spec.compute_capability, spec.sm_clock_mhz)
    assert spec.fp32_peak_gflops == pytest.approx(derived, rel=0.005)


@pytest.mark.parametrize("spec", list_specs(), ids=lambda s: s.name)
def test_every_figure_has_a_source(spec):
    figures = {f.name for f in dataclasses.fields(spec)} - {"name", "vendor_name", "kind",
                                                             "sources"}
    assert figures <= set(spec.sources), figures - set(spec.sources)
    assert all(spec.sources[f].strip() for f in figures)
    assert "estimate" in spec.sources["dram_latency_ns"]  # never passed off as a datasheet figure


@pytest.mark.parametrize("spec", list_specs(), ids=lambda s: s.name)
def test_threads_are_warps_times_32(spec):
    assert spec.max_threads_per_sm == 32 * spec.max_warps_per_sm


def test_table_lists_eight_gpus_with_unique_names():
    assert spec_names() == ("H200", "H100-SXM", "H100-PCIe", "B200", "A100-40GB", "A100-80GB",
                            "RTX-4090", "RTX-4070-Ti-SUPER")
    assert [s.name for s in list_specs()] == list(spec_names())


@pytest.mark.parametrize("query, expected", [
    ("h200", "H200"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA H200 SXM 141GB", "H200"),
    ("H100 80GB HBM3", "H100-SXM"),
    ("NVIDIA H100 80GB HBM3", "H100-SXM"),
    ("h100-sxm", "H100-SXM"),
    ("NVIDIA H100 PCIe", "H100-PCIe"),
    ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
    ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
    ("NVIDIA A100-PCIE-40GB", "A100-40GB"),
    ("a100 80 GB", "A100-80GB"),
    ("NVIDIA B200", "B200"),
    ("NVIDIA GeForce RTX 4090", "RTX-4090"),
    ("rtx4090", "RTX-4090"),
    ("NVIDIA GeForce RTX 4070 Ti SUPER", "RTX-4070-Ti-SUPER"),
    ("rtx-4070-ti-super", "RTX-4070-Ti-SUPER"),
])
def test_lookup_tolerates_case_vendor_words_and_suffixes(query, expected):
    assert get_spec(query).name == expected
    assert match_device_name(query).name == expected


@pytest.mark.parametrize("query", ["V100", "NVIDIA H200 NVL", "NVIDIA H100 NVL", "GH200",
                                   "NVIDIA A100 80GB PCIe", "RTX 4070", "RTX 4070 Ti", ""])
def test_names_outside_the_table_do_not_match(query):
    assert match_device_name(query) is None
    with pytest.raises(UnknownNameError) as info:
        get_spec(query)
    assert info.value.kind == "GPU"
    assert set(info.value.known) == set(spec_names())


def test_unknown_name_error_lists_known_names_and_is_a_usage_error():
    with pytest.raises(UsageError) as info:
        get_spec("V100")
    message = str(info.value)
    assert message.startswith("unknown GPU 'V100'; known: ")
    for name in spec_names():
        assert name in message
    assert info.value.exit_code == 2


def test_bare_a100_is_ambiguous_and_lists_both_candidates():
    with pytest.raises(UnknownNameError) as info:
        get_spec("NVIDIA A100")
    assert info.value.known == ["A100-40GB", "A100-80GB"]
    assert match_device_name("A100") is None
