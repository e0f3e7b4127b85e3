"""Both readers on the real H200 recordings, their agreement on one report, and unreadable files.

Expected values are read by hand from the CSV files (row and column given in each comment)."""

from __future__ import annotations

import dataclasses
import gzip
import lzma
import math
import random
from collections import Counter
from pathlib import Path

import pytest

from sparsescope.profile import load
from sparsescope.profile import metrics as M
from sparsescope.profile.errors import ProfileError
from sparsescope.profile.read_csv import (
    load_instruction_samples_csv,
    load_profiles_csv,
    read_details_rules,
)
from sparsescope.profile.read_report import (
    load_instruction_samples,
    load_profiles,
    plain_message,
)
from sparsescope.profile.records import short_kernel_name

PROFILE_CHECK = Path(__file__).resolve().parents[1] / "fixtures" / "h200" / "profile_check"
"""Real H200 exports, kept gzipped (as results folders kept them before xz)."""

# --- raw CSV, metric-group run ------------------------------------------------------------------


def test_cant_analog_csrmv_v3_kernel(cant):
    # ncu_metrics_cant_analog.csv, ID 1 (the first csrmv_v3_kernel, torch INT64)
    k = cant[1]
    assert k.index == 1
    assert k.name == "csrmv_v3_kernel"
    assert k.demangled_name.startswith("void cusparse::csrmv_v3_kernel<std::integral_constant")
    assert k.block_size == 512                 # launch__block_size 512, Block Size (512, 1, 1)
    assert k.grid_size == 1305                 # launch__grid_size "1,305"
    assert k.registers_per_thread == 47        # launch__registers_per_thread
    assert k.cpi == 17.23                      # smsp__average_warp_latency_per_inst_issued.ratio
    assert k.stalls["long_scoreboard"] == 6.12
    assert k.stalls["barrier"] == 3.04
    assert k.stalls["selected"] == 1.00
    assert k.theoretical_occupancy_pct == 50.0  # sm__maximum_warps_per_active_cycle_pct
    assert k.achieved_occupancy_pct == 46.84    # sm__warps_active.avg.pct_of_peak_sustained_active
    assert k.duration_ns == 24800.0             # gpu__time_duration.sum "24,800" ns
    assert k.metrics["dram__bytes_read.sum"] == (49122304.0, "byte")
    assert k.metrics["launch__func_cache_config"] == ("CachePreferNone", "")
    assert tuple(k.stalls) == M.STALL_REASONS   # every reason, in ncu's order


def test_cant_analog_skips_ncu_prelude_and_reads_every_launch(cant):
    # 7 lines of ==PROF==/program output precede the header; IDs 0..50
    assert [k.index for k in cant] == list(range(51))
    partition = cant[0]
    assert partition.name == "csr_partition_kernel"
    assert (partition.block_size, partition.grid_size) == (256, 6)
    assert partition.registers_per_thread == 18
    assert cant[18].name == "csr_vector"
    assert cant[7].registers_per_thread == 32 and cant[7].grid_size == 979  # INT32 indices


def test_full_raw_csv_scaled_units_become_base_units(full_csv):
    k = full_csv[0]
    assert k.duration_ns == pytest.approx(27840.0)           # "27.840000" us
    assert k.metrics["dram__bytes_read.sum"] == pytest.approx((49121792.0, "byte"))  # Mbyte
    value, unit = k.metrics["lrc__lts2lrc_sectors_op_read.sum.per_second"]  # 56.297629 sector/ns
    assert unit == "sector/s" and value == pytest.approx(56.297629e9)
    assert "sass__inst_executed_register_spilling_mem_local" not in k.metrics  # "no data"
    assert k.cpi == pytest.approx(14.540206)
    assert k.stalls["long_scoreboard"] == pytest.approx(4.035870)


def test_details_rules(h200_fixtures, full_csv):
    rules = read_details_rules(h200_fixtures / "spmv_full_details.csv")
    assert sorted(rules) == [0, 1, 2, 3]
    assert len(rules[0]) == 13
    uncoalesced = next(r for r in rules[0] if r.rule == "UncoalescedGlobalAccess")
    assert uncoalesced.section == "SourceCounters"
    assert uncoalesced.type == "OPT"
    assert "1130454 excessive sectors (35% of the total 3250882 sectors)" in uncoalesced.message
    assert (uncoalesced.speedup_type, uncoalesced.estimated_speedup_pct) == ("global", 26.29)
    bottleneck = next(r for r in rules[0] if r.rule == "SOLBottleneck")
    assert bottleneck.estimated_speedup_pct is None and bottleneck.speedup_type == ""
    assert full_csv[0].rules == rules[0]


def test_source_page_csv(h200_fixtures):
    blocks = load_instruction_samples_csv(h200_fixtures / "scalar_source_sass.csv")
    assert list(blocks) == [0]
    rows = blocks[0]
    assert len(rows) == 256                      # 258 lines: kernel row, header, 256 instructions
    first = rows[0]
    assert (first.kernel, first.address, first.sass) == (
        "spmv_csr_scalar", 0x7EFA397A0000, "LDC R1, c[0x0][0x28]")
    assert (first.warp_stall_samples, first.instructions_executed) == (16, 4096)
    assert first.stall_samples == {"no_instruction": 16}
    third = rows[2]                              # ULDC: stall_imc 17, stall_no_inst 1
    assert third.stall_samples == {"imc_miss": 17, "no_instruction": 1}
    for row in rows:
        assert row.warp_stall_samples == sum(row.stall_samples.values())
    # totals agree with the kernel-level counters of the same profile (scalar_raw.csv)
    raw = load_profiles_csv(h200_fixtures / "scalar_raw.csv")[0]
    assert sum(r.instructions_executed for r in rows) == raw.value("smsp__inst_executed.sum")
    assert sum(r.warp_stall_samples for r in rows) == raw.value("smsp__pcsamp_sample_count")
    long_sb = sum(r.stall_samples.get("long_scoreboard", 0) for r in rows)
    assert long_sb == raw.value("smsp__pcsamp_warps_issue_stalled_long_scoreboard")
    excessive = sum(r.l2_sectors_global_excessive for r in rows)
    assert excessive == raw.value("derived__memory_l2_theoretical_sectors_global_excessive")


# --- .ncu-rep ------------------------------------------------------------------------------------


def test_report_kernels(full_report):
    assert [k.name for k in full_report] == ["csrmv_v3_kernel"] * 3 + ["spmv_csr_scalar"]
    k = full_report[0]
    assert (k.block_size, k.grid_size, k.registers_per_thread) == (512, 1305, 47)
    assert k.cpi == pytest.approx(14.540206, abs=1e-6)            # raw CSV, ID 0
    assert k.stalls["long_scoreboard"] == pytest.approx(4.035870, abs=1e-6)
    assert k.theoretical_occupancy_pct == 50.0
    assert k.duration_ns == 27840.0
    assert k.text(M.DEVICE_NAME) == "NVIDIA H200"
    scalar = full_report[3]
    assert (scalar.block_size, scalar.grid_size, scalar.registers_per_thread) == (256, 244, 32)
    assert scalar.stalls["long_scoreboard"] == pytest.approx(38.344883, abs=1e-6)


def test_report_rule_markup_is_resolved(full_report):
    fp = next(r for r in full_report[0].rules if r.rule == "FPInstructions")
    assert "their fused (https://docs.nvidia.com/cuda/floating-point/" in fp.message
    assert "@" not in "".join(r.message for r in full_report[0].rules)
    assert plain_message("see @section:SourceCounters:Source Counters@ and "
                         "@url:guide:https://x.org/a#b@") == "see Source Counters and guide (https://x.org/a#b)"


# Metrics the CSV export prints differently from the report: derived__pct_occupancy_per_
# shared_mem_size is labelled "%/Kbyte" in the CSV but holds the per-byte figure's digits
# (13 vs 13000 %/byte); idc__requests.sum carries no unit in the CSV ("request" in the report).
CSV_QUIRKS = {"derived__pct_occupancy_per_shared_mem_size", "idc__requests.sum"}


def test_report_and_csv_readers_agree(full_report, full_csv):
    assert len(full_report) == len(full_csv) == 4
    for rep, exp in zip(full_report, full_csv, strict=True):
        assert rep.index == exp.index
        assert rep.name == exp.name == short_kernel_name(exp.demangled_name)
        for field in ("block_size", "grid_size", "registers_per_thread"):
            assert getattr(rep, field) == getattr(exp, field)
        for field in ("cpi", "achieved_occupancy_pct", "theoretical_occupancy_pct", "duration_ns"):
            assert getattr(rep, field) == pytest.approx(getattr(exp, field), rel=1e-6, abs=1e-6)
        assert list(rep.stalls) == list(exp.stalls)
        for reason, cycles in exp.stalls.items():
            assert rep.stalls[reason] == pytest.approx(cycles, abs=1e-6)
        compared = 0
        for name, (value, unit) in exp.metrics.items():
            if name in CSV_QUIRKS:
                continue
            rep_value, rep_unit = rep.metrics[name]
            assert rep_unit == unit, name
            if isinstance(value, str):
                assert str(rep_value) == value, name
            elif math.isnan(value):
                assert math.isnan(rep_value), name
            else:  # the CSV prints 6 decimals of the scaled value or 2 of unscaled ratios
                assert rep_value == pytest.approx(value, rel=2e-3, abs=6e-3), name
            compared += 1
        assert compared > 2000
        def key(r):
            return (r.rule, r.section, r.type, r.message, r.speedup_type)
        assert Counter(map(key, rep.rules)) == Counter(map(key, exp.rules))
        speedups = {key(r): r.estimated_speedup_pct for r in exp.rules}
        for r in rep.rules:  # the CSV rounds the estimate to 4 significant digits
            if speedups[key(r)] is None:
                assert r.estimated_speedup_pct is None
            else:
                assert r.estimated_speedup_pct == pytest.approx(speedups[key(r)], rel=1e-3)


def test_report_instruction_samples(h200_fixtures, full_report):
    samples = load_instruction_samples(h200_fixtures / "spmv_full.ncu-rep")
    assert {k: len(v) for k, v in samples.items()} == {0: 1160, 1: 1160, 2: 1160, 3: 247}
    scalar = samples[3]
    assert scalar[0].sass == "LDC R1, c[0x0][0x28]"
    assert scalar[0].source_file.endswith("spmv_kernels.cu") and scalar[0].source_line == 2
    assert [r.address for r in scalar] == sorted(r.address for r in scalar)
    # spmv_full_raw.csv ID 3: smsp__pcsamp_warps_issue_stalled_long_scoreboard = 1444, the
    # excessive sectors 7,492,981 (the UncoalescedGlobalAccess rule says the same)
    assert sum(r.stall_samples.get("long_scoreboard", 0) for r in scalar) == 1444
    assert sum(r.l2_sectors_global_excessive for r in scalar) == 7492981
    assert sum(r.l2_sectors_global for r in scalar) == 9098844


# --- unreadable files ----------------------------------------------------------------------------


@pytest.mark.parametrize("content",
                         [b"", random.Random(7).randbytes(4096), b"NVR\x00" + b"\x01" * 64],
                         ids=["empty", "random", "bad-header"])
def test_not_a_report(tmp_path, content):
    path = tmp_path / "bad.ncu-rep"
    path.write_bytes(content)
    with pytest.raises(ProfileError) as err:
        load_profiles(path)
    assert err.value.reason == "not_a_report"
    assert err.value.exit_code == 8
    assert str(path) in str(err.value)


def test_truncated_report(h200_fixtures, tmp_path):
    path = tmp_path / "cut.ncu-rep"
    path.write_bytes((h200_fixtures / "spmv_full.ncu-rep").read_bytes()[:100_000])
    with pytest.raises(ProfileError, match="no readable profile"):
        load_profiles(path)


def test_missing_report(tmp_path):
    with pytest.raises(ProfileError, match="no such file"):
        load_profiles(tmp_path / "absent.ncu-rep")


def test_csv_reader_refuses_wrong_files(h200_fixtures, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    binary = tmp_path / "blob.csv"
    binary.write_bytes(b"\x00\x01binary" * 100)
    text = tmp_path / "notes.csv"
    text.write_text("a,b\n1,2\n")
    no_units = tmp_path / "no_units.csv"
    lines = (h200_fixtures / "spmv_full_raw.csv").read_text().splitlines()
    no_units.write_text("\n".join([lines[0]] + lines[2:]))
    details_as_raw = tmp_path / "details_given_twice.csv"
    cases = [(empty, "empty file"), (binary, "binary file"), (text, 'no row starting with "ID"'),
             (no_units, "units row")]
    for path, message in cases:
        with pytest.raises(ProfileError, match=message) as err:
            load_profiles_csv(path)
        assert err.value.reason == "not_a_report" and str(path) in str(err.value)
    details_as_raw.write_bytes((h200_fixtures / "spmv_full_details.csv").read_bytes())
    with pytest.raises(ProfileError, match="holds its own rule messages"):
        load_profiles_csv(details_as_raw, h200_fixtures / "spmv_full_details.csv")


def test_csv_reader_takes_gzipped_exports(h200_fixtures, tmp_path):
    """The results folders keep raw exports gzipped (``*_raw.csv.gz``)."""
    packed = tmp_path / "cant_raw.csv.gz"
    packed.write_bytes(gzip.compress((h200_fixtures / "ncu_metrics_cant_analog.csv")
                                     .read_bytes()))
    plain = load_profiles_csv(h200_fixtures / "ncu_metrics_cant_analog.csv")
    unpacked = load_profiles_csv(packed)
    assert len(unpacked) == len(plain) == 51
    assert unpacked[1].grid_size == plain[1].grid_size == 1305
    broken = tmp_path / "cut_raw.csv.gz"
    broken.write_bytes(packed.read_bytes()[:200])
    with pytest.raises(ProfileError, match="damaged gzip data") as err:
        load_profiles_csv(broken)
    assert str(broken) in str(err.value)


def test_csv_reader_takes_xz_exports_as_it_takes_gzipped_ones(tmp_path):
    """The results folders keep ncu exports as xz (``*_raw.csv.xz``): a committed gzipped
    export recompressed as xz reads the same, by its name and by its content; a damaged one is
    an error naming it."""
    gz = PROFILE_CHECK / "profile_seed6_ldoor_cuda-spmv-auto_raw.csv.gz"
    xz = tmp_path / "profile_seed6_ldoor_cuda-spmv-auto_raw.csv.xz"
    xz.write_bytes(lzma.compress(gzip.decompress(gz.read_bytes())))

    def read(reader, path):         # the profiles less the file they came from
        return repr([dataclasses.replace(p, source="") for p in reader(path)])

    packed = read(load_profiles_csv, gz)
    assert "spmv_sell_dae" in packed
    assert read(load_profiles_csv, xz) == read(load, xz) == read(load, gz) == packed
    renamed = tmp_path / "export.bin"            # no .csv name: told by the xz magic bytes
    renamed.write_bytes(xz.read_bytes())
    assert read(load, renamed) == packed
    broken = tmp_path / "cut_raw.csv.xz"
    broken.write_bytes(xz.read_bytes()[:200])
    for read in (load_profiles_csv, load):
        with pytest.raises(ProfileError, match="damaged xz data") as err:
            read(broken)
        assert str(broken) in str(err.value)


def test_load_dispatches_on_content(h200_fixtures, tmp_path):
    assert len(load(h200_fixtures / "spmv_full.ncu-rep")) == 4
    assert len(load(h200_fixtures / "ncu_metrics_cant_analog.csv")) == 51
    renamed = tmp_path / "export.txt"  # a CSV export without the .csv suffix
    renamed.write_bytes((h200_fixtures / "scalar_raw.csv").read_bytes())
    assert load(renamed)[0].name == "spmv_csr_scalar"


@pytest.mark.parametrize("demangled, short", [
    ("void cusparse::<unnamed>::csr_partition_kernel<long, long>(const T1 *, T2, T1, T1, T2, "
     "T2 *, T2)", "csr_partition_kernel"),
    ("void csr_vector<8>(int, const int *, const int *, const float *, const float *, float *)",
     "csr_vector"),
    ("spmv_csr_scalar", "spmv_csr_scalar"),
    ("void (anonymous namespace)::kern<int>(int)", "kern"),
    ("void ns::Outer<float>::inner(float *)", "inner"),
])
def test_short_kernel_name(demangled, short):
    assert short_kernel_name(demangled) == short
