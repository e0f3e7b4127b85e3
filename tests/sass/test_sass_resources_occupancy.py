"""Resource figures of the fixtures, and the occupancy calculator against ncu's launch limits."""

from __future__ import annotations

import csv
import sys
import types
from pathlib import Path

import pytest

from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.sass.analysis import resources_from_text
from sparsescope.sass.occupancy import limits_for, occupancy
from sparsescope.sass.resources import parse_ptxas_verbose, parse_res_usage


def test_fixture_resources(h200_fixtures):
    text = (h200_fixtures / "spmv_kernels_resources.txt").read_text()
    res = parse_res_usage(text)
    vec, sca = res[("spmv_csr_vector8", "")], res[("spmv_csr_scalar", "")]
    assert (vec.registers, vec.shared_bytes, vec.local_bytes, vec.stack_bytes, vec.constant_bytes) \
        == (25, 0, 0, 0, 576)
    assert (sca.registers, sca.constant_bytes) == (32, 576)
    ptx = parse_ptxas_verbose(text)
    assert ptx["spmv_csr_vector8"].arch == "sm_90" and ptx["spmv_csr_scalar"].registers == 32
    merged = resources_from_text(text)["spmv_csr_scalar"]
    assert merged.source == "cuobjdump+ptxas" and merged.spill_store_bytes == 0


def test_ptxas_spills_and_smem():
    text = """ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_80'
ptxas info    : Function properties for _Z3fooPf
    24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 360 bytes cmem[0]
"""
    r = parse_ptxas_verbose(text)["_Z3fooPf"]
    assert (r.registers, r.stack_bytes, r.spill_store_bytes, r.spill_load_bytes, r.barriers,
            r.shared_bytes, r.constant_bytes, r.arch) == (255, 24, 8, 12, 1, 4096, 360, "sm_80")


def _ncu_rows(path: Path) -> tuple[dict[str, str], list[dict[str, str]]]:
    """(units, data rows) of an ncu --csv --page raw export (header, units row, data)."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.DictReader(lines[start:]))
    return rows[0], rows[1:]


def _num(text: str) -> float:
    return float(text.replace(",", ""))


NCU_FILES = ["spmv_full_raw.csv", "ncu_metrics_cant_analog.csv", "ncu_metrics_cage15_analog.csv",
             "scalar_raw.csv"]


@pytest.mark.parametrize("name", NCU_FILES)
def test_occupancy_matches_ncu_launch_limits(h200_fixtures, name):
    units, rows = _ncu_rows(h200_fixtures / name)
    kib = {k: 1024.0 if units[k].startswith("Kbyte") else 1.0 for k in units}
    seen = set()
    for r in rows:
        static = round(_num(r["launch__shared_mem_per_block_static"]) *
                       kib["launch__shared_mem_per_block_static"])
        config = round(_num(r["launch__shared_mem_config_size"]) *
                       kib["launch__shared_mem_config_size"])
        key = (int(_num(r["launch__registers_per_thread"])), int(_num(r["launch__block_size"])),
               static, int(_num(r["launch__shared_mem_per_block_dynamic"])), config)
        if key in seen:
            continue
        seen.add(key)
        occ = occupancy(key[0], key[1], arch="sm_90", static_shared_bytes=key[2],
                        dynamic_shared_bytes=key[3], shared_config_bytes=key[4])
        assert occ.limit_registers_blocks == _num(r["launch__occupancy_limit_registers"]), key
        assert occ.limit_shared_blocks == _num(r["launch__occupancy_limit_shared_mem"]), key
        assert occ.limit_warps_blocks == _num(r["launch__occupancy_limit_warps"]), key
        assert occ.limit_blocks == _num(r["launch__occupancy_limit_blocks"]), key
        assert occ.occupancy_pct == pytest.approx(_num(r["sm__maximum_warps_per_active_cycle_pct"]))
    assert seen


def test_occupancy_hand_computed():
    # 47 regs -> 1504 -> 1536 per warp; 65536 // 1536 = 42 warps; 16 warps/block -> 2 blocks
    occ = occupancy(47, 512, arch="sm_90", static_shared_bytes=12672,
                    shared_config_bytes=64 * 1024)
    assert (occ.limit_registers_blocks, occ.limit_shared_blocks,
            occ.limit_warps_blocks) == (2, 4, 4)
    assert (occ.active_warps_per_sm, occ.occupancy_pct, occ.limiter) == (32, 50.0, "registers")
    # seed 001: 46 registers, 32-thread blocks: 44 warps by registers, capped at 32 blocks = 50 %
    seed = occupancy(46, 32, arch="9.0")
    assert (seed.limit_registers_blocks, seed.active_blocks_per_sm, seed.occupancy_pct,
            seed.limiter) == (42, 32, 50.0, "blocks")
    # sm_86: 48 warps, 16 blocks; 1,536 threads of 256 = 6 blocks
    assert occupancy(32, 256, arch="sm_86").active_blocks_per_sm == 6
    # no reserve before sm_80, 256-byte granularity: (1000 -> 1024) -> 96 blocks of 96 KB
    assert occupancy(16, 64, arch="sm_70", static_shared_bytes=1000).limit_shared_blocks == 96


def test_occupancy_by_gpu_name_goes_through_the_spec_table(monkeypatch):
    fake = types.ModuleType("sparsescope.hardware.specs")
    fake.get_spec = lambda name: types.SimpleNamespace(compute_capability={"H200": "9.0",
                                                                          "A100": "8.0"}[name])
    monkeypatch.setitem(sys.modules, "sparsescope.hardware.specs", fake)
    assert occupancy(32, 256, gpu="H200").compute_capability == "9.0"
    assert limits_for(gpu="A100").max_shared_per_sm_bytes == 164 * 1024


def test_occupancy_errors():
    with pytest.raises(UnknownNameError):
        occupancy(32, 256, arch="sm_61")
    with pytest.raises(UsageError, match="block size"):
        occupancy(32, 2048, arch="sm_90")
    with pytest.raises(UsageError, match="shared memory"):
        occupancy(32, 256, arch="sm_90", dynamic_shared_bytes=300 * 1024)
