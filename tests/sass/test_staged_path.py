"""A staged loop's every-iteration and staging instructions, read from the SASS that ncu
profiled (tests/fixtures/h200/profile_check: spmv_sell_dae on the ldoor analog, H200), against
the instructions ncu counted there."""

from __future__ import annotations

from pathlib import Path

from sparsescope.sass.cfg import build_cfg
from sparsescope.sass.instructions import parse_instruction
from sparsescope.sass.source_page import read_source_page
from sparsescope.sass.staged_path import staged_path

FIXTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "h200" / "profile_check"
           / "profile_seed6_ldoor_cuda-spmv-auto_source.csv.gz")


def _kernel(source: Path):
    page = next(iter(read_source_page(source)))           # the export read gzipped
    ins = tuple(parse_instruction(r.address, r.sass) for r in page.rows)
    return ins, build_cfg(ins), [r.instructions_executed for r in page.rows]


def test_staged_loop_paths_against_what_ncu_counted():
    ins, cfg, executed = _kernel(FIXTURE)
    loop = max(cfg.loops, key=lambda lp: len(lp.blocks))        # the chunk loop at 0x1330
    every, staging = staged_path(ins, cfg, loop)
    assert (every, staging) == (145, 124)
    header = next(i for i, x in enumerate(ins) if x.address == loop.header_address)
    iterations = executed[header]                               # 140,044 over 29,760 warps
    warps = executed[0]
    ran = sum(executed[i] for i in cfg.instructions_of(loop.blocks))
    assert (iterations, warps, ran) == (140_044, 29_760, 33_500_291)
    # n x every + (n - 1) x staging, summed over the warps: within 2 % of what ran; the
    # whole body an iteration (the count before) was 1.7x
    charged = iterations * every + (iterations - warps) * staging
    assert abs(charged / ran - 1) < 0.02
    body = sum(1 for i in cfg.instructions_of(loop.blocks) if ins[i].opcode != "NOP")
    assert iterations * body / ran > 1.7


def test_a_loop_without_copies_has_no_staged_path():
    # spmv_sell on the cage15 analog: loads straight to registers, no cp.async
    ins, cfg, _ = _kernel(FIXTURE.with_name("profile_seed6_cage15_cuda-spmv-sell_source.csv.gz"))
    loop = max(cfg.loops, key=lambda lp: len(lp.blocks))
    assert not any(ins[i].opcode == "LDGSTS" for i in range(len(ins)))
    assert staged_path(ins, cfg, loop) is None
