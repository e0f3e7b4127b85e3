"""What the OS reports about the CPU, and the measured CPU ceilings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparsescope.errors import UsageError
from sparsescope.hardware import cpuinfo
from sparsescope.hardware.cpu_ceilings import buffer_bytes, measure_cpu_ceilings

MiB = 2**20


@pytest.mark.parametrize("text, expected", [
    ("2048K", 2_097_152), ("48K", 49_152), ("260 MiB (1 instance)", 272_629_760),
    ("32 MB", 33_554_432), ("1.5 MiB", 1_572_864), ("512", 512), ("n/a", None),
])
def test_parse_size(text, expected):
    assert cpuinfo.parse_size(text) == expected


def test_last_level_cache_is_reported_with_its_source():
    size, source = cpuinfo.last_level_cache()
    assert size >= 256 * 1024
    assert source.startswith(("os:", "estimate:"))


def test_last_level_cache_falls_back_to_32_mb(monkeypatch):
    monkeypatch.setattr(cpuinfo, "_llc_from_sysfs", lambda: None)
    monkeypatch.setattr(cpuinfo, "_llc_from_lscpu", lambda: None)
    cpuinfo.last_level_cache.cache_clear()
    try:
        assert cpuinfo.last_level_cache() == (
            32 * MiB, "estimate: 32 MB (the OS reports no cache sizes)")
    finally:
        cpuinfo.last_level_cache.cache_clear()


def test_os_facts_are_plausible():
    assert cpuinfo.logical_cores() >= 1
    assert cpuinfo.cpu_model_name()
    assert cpuinfo.total_ram_bytes() > 256 * MiB
    assert 0 < cpuinfo.available_ram_bytes() <= cpuinfo.total_ram_bytes()


@pytest.mark.parametrize("size_mb, cache, available, expected", [
    (128, 256 * MiB, 64 * 2**30, 256 * MiB),   # a large cache beats the request
    (128, 32 * MiB, 64 * 2**30, 128 * MiB),    # the request beats a 32 MiB cache
    (256, 32 * MiB, 800 * MiB, 100 * MiB),     # both buffers capped to a quarter of free RAM
    (0.5, 100, 0, 512 * 1024),                 # unknown free RAM: no cap
])
def test_buffer_bytes(size_mb, cache, available, expected):
    assert buffer_bytes(size_mb, cache, available) == expected


def test_measure_cpu_ceilings_for_real_counts_its_work():
    """A real, short measurement (5 ms trials): every ceiling measured in 3 to 7 rounds, the
    buffers sized from the evictable cache, the machine's load recorded (no wall time
    asserted: the machine is shared)."""
    ceilings = measure_cpu_ceilings(size_mb=1, min_trial_s=0.005, gemm_n=128)
    assert 0.5 < ceilings.copy_bw_gb_s < 5000
    assert 0.5 < ceilings.read_bw_gb_s < 5000
    assert ceilings.fp32_gflops > 0.05
    assert ceilings.l2_bw_gb_s is None and ceilings.dram_latency_ns is None
    assert ceilings.device == cpuinfo.cpu_model_name()
    assert 3 <= ceilings.trials <= 7 and ceilings.measured_utc
    assert "bytes = read + write" in ceilings.method["copy_bw_gb_s"]
    assert f"best of {ceilings.trials} trials of >= 5 ms" in ceilings.method["read_bw_gb_s"]
    assert "np.bitwise_or.reduce over 64-bit words" in ceilings.method["read_bw_gb_s"]
    for spread in (ceilings.copy_bw_spread_pct, ceilings.read_bw_spread_pct,
                   ceilings.fp32_spread_pct):
        assert 0.0 <= spread < 100.0
    assert "2 n^3" in ceilings.method["fp32_gflops"]
    cache = cpuinfo.evictable_cache()
    per_buffer = buffer_bytes(1, cache.size_bytes, cpuinfo.available_ram_bytes())
    assert f"2 buffers x {per_buffer / MiB:.0f} MiB" in ceilings.method["copy_bw_gb_s"]
    assert cache.name in ceilings.method["copy_bw_gb_s"]
    if Path("/proc/stat").exists():
        assert " CPUs' time went to other processes (steal " in ceilings.method["machine_load"]


def test_measure_cpu_ceilings_rejects_bad_settings():
    with pytest.raises(UsageError):
        measure_cpu_ceilings(trials=0)
    with pytest.raises(UsageError):
        measure_cpu_ceilings(size_mb=0)


# ------------------------------------------------------- the cache a timer can evict

def fake_sys(root: Path, caches: list[tuple[int, str, str, str]]) -> Path:
    """A fake ``/sys/devices/system/cpu`` holding cpu0's caches: (level, type, size,
    shared_cpu_list) each."""
    for i, (level, kind, size, shared) in enumerate(caches):
        index = root / "cpu0" / "cache" / f"index{i}"
        index.mkdir(parents=True)
        (index / "level").write_text(f"{level}\n")
        (index / "type").write_text(f"{kind}\n")
        (index / "size").write_text(f"{size}\n")
        (index / "shared_cpu_list").write_text(f"{shared}\n")
    return root


#: The 2-vCPU VM of issue 35: a 480 MiB ("503.3 MB") L3 passed through from its host.
VM_503MB = [(1, "Data", "48K", "0"), (1, "Instruction", "32K", "0"), (2, "Unified", "2048K", "0"),
            (3, "Unified", "491520K", "0-1")]
#: This repository's 2-vCPU VM: a 32 MiB L3 shared by both (an AMD CCD's).
VM_32MB = [(1, "Data", "32K", "0"), (1, "Instruction", "32K", "0"), (2, "Unified", "1024K", "0"),
           (3, "Unified", "32768K", "0-1")]


def test_cache_levels_read_a_fake_sys_tree(tmp_path):
    levels = cpuinfo.cache_levels(fake_sys(tmp_path, VM_503MB))
    assert levels == (cpuinfo.CacheLevel(1, "Data", 48 * 1024, 1),
                      cpuinfo.CacheLevel(2, "Unified", 2 * MiB, 1),
                      cpuinfo.CacheLevel(3, "Unified", 480 * MiB, 2))
    assert cpuinfo.cache_levels(tmp_path / "nothing") == ()


@pytest.mark.parametrize("text, count", [("0-1", 2), ("0", 1), ("0-3,8,10-11", 7), ("", 0)])
def test_count_cpu_list(text, count):
    assert cpuinfo.count_cpu_list(text) == count


def test_a_vm_reported_503_mb_l3_on_two_cpus_is_bounded(tmp_path):
    levels = cpuinfo.cache_levels(fake_sys(tmp_path, VM_503MB))
    cache = cpuinfo.choose_evictable(levels, virtual=True)
    # 480 MiB / 2 CPUs = 240 MiB a CPU > 16 MiB: bounded to 2 x 16 MiB
    assert cache.size_bytes == 32 * MiB and cache.reported_bytes == 480 * MiB
    assert cache.bounded and cache.level == 3 and cache.shared_cpus == 2
    assert cache.name == "LLC (L3, as the VM reports it)"
    assert cache.reading.startswith("os: /sys/devices/system/cpu/cpu0/cache: LLC (L3, as the "
                                    "VM reports it), 480.0 MiB shared by 2 CPUs; ")
    assert "flushes as if it held 32 MiB (2 x 16 MiB)" in cache.reading


def test_a_plausible_vm_cache_and_bare_metal_are_trusted(tmp_path):
    levels = cpuinfo.cache_levels(fake_sys(tmp_path / "a", VM_32MB))
    cache = cpuinfo.choose_evictable(levels, virtual=True)   # 16 MiB a CPU: plausible
    assert (cache.size_bytes, cache.bounded) == (32 * MiB, False)
    assert cache.reading.endswith("the timer flushes against all of it")
    big = cpuinfo.cache_levels(fake_sys(tmp_path / "b", VM_503MB))
    metal = cpuinfo.choose_evictable(big, virtual=False)    # bare metal: the die's own report
    assert (metal.size_bytes, metal.bounded, metal.name) == (480 * MiB, False, "LLC (L3)")


def test_the_bound_never_falls_below_the_level_under_it(tmp_path):
    # one vCPU reporting a 480 MiB L3 over a 32 MiB L2 (an odd VM): bound 16 MiB < the L2
    levels = cpuinfo.cache_levels(fake_sys(tmp_path, [(2, "Unified", "32768K", "0"),
                                                      (3, "Unified", "491520K", "0")]))
    assert cpuinfo.choose_evictable(levels, virtual=True).size_bytes == 32 * MiB


def test_without_sysfs_levels_the_fallback_counts_as_shared_by_every_core():
    cache = cpuinfo.choose_evictable((), virtual=True, fallback=(256 * MiB, "os: lscpu"),
                                     cores=4)
    # 256 MiB / 4 = 64 MiB a CPU: bounded to 4 x 16 MiB
    assert (cache.size_bytes, cache.level, cache.name) == (64 * MiB, 0,
                                                          "LLC (as the VM reports it)")


def test_under_hypervisor_reads_the_cpu_flags(tmp_path):
    vm, metal = tmp_path / "vm", tmp_path / "metal"
    vm.write_text("processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n")
    metal.write_text("processor\t: 0\nflags\t\t: fpu vme lahf_lm\n")
    assert cpuinfo.under_hypervisor(vm) and not cpuinfo.under_hypervisor(metal)
    assert not cpuinfo.under_hypervisor(tmp_path / "missing")


def test_the_timer_flushes_against_this_machines_evictable_cache():
    cache = cpuinfo.evictable_cache()
    assert cpuinfo.evictable_cache_bytes() == cache.size_bytes
    assert cache.size_bytes <= cache.reported_bytes
    assert cache.size_bytes <= max(cache.reported_bytes,
                                   cache.shared_cpus * cpuinfo.MAX_LLC_PER_CPU_BYTES)


# ------------------------------------------------------------- other processes' share

def test_cpu_times_parse_a_fake_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal (ticks of 1 / SC_CLK_TCK s)
    stat.write_text("cpu  400 100 200 9000 50 10 40 30 0 0\n"
                    "cpu0 200 50 100 4500 25 5 20 15 0 0\n"
                    "cpu1 200 50 100 4500 25 5 20 15 0 0\nintr 1 2 3\n")
    times = cpuinfo.cpu_times(stat)
    hz = os.sysconf("SC_CLK_TCK")
    assert times.busy_s == pytest.approx((400 + 100 + 200 + 10 + 40) / hz)
    assert times.steal_s == pytest.approx(30 / hz) and times.cpus == 2
    (tmp_path / "bad").write_text("nothing here\n")
    assert cpuinfo.cpu_times(tmp_path / "bad") is None
    assert cpuinfo.cpu_times(tmp_path / "missing") is None


def test_other_activity_hand_computed():
    before = cpuinfo.CpuTimes(busy_s=10.0, steal_s=1.0, cpus=2, own_s=3.0, wall_s=100.0)
    after = cpuinfo.CpuTimes(busy_s=11.5, steal_s=1.1, cpus=2, own_s=3.9, wall_s=101.0)
    load = cpuinfo.other_activity(before, after)
    assert load.others_pct == pytest.approx(30.0) and load.steal_pct == pytest.approx(5.0)
    alone = cpuinfo.CpuTimes(busy_s=10.9, steal_s=1.0, cpus=2, own_s=3.95, wall_s=101.0)
    assert cpuinfo.other_activity(before, alone).others_pct == 0.0  # tick rounding: clipped
