"""Control flow and dataflow on the real fixtures and on small hand-made listings."""

from __future__ import annotations

from sparsescope.sass.cfg import build_cfg
from sparsescope.sass.dataflow import load_slices_and_chains, reaching_definitions
from sparsescope.sass.instructions import parse_instruction
from sparsescope.sass.listing import read_listing


def _listing(lines: list[str]):
    return tuple(parse_instruction(16 * k, t) for k, t in enumerate(lines))


def test_fixture_loops(h200_fixtures):
    vec, sca = read_listing(h200_fixtures / "spmv_kernels_sm90.cuobjdump.sass")
    cv = build_cfg(vec.instructions)
    assert [(lp.header_address, lp.end_address, lp.back_edge_addresses) for lp in cv.loops] == \
        [(0x210, 0x3E0, (0x3E0,))]
    assert cv.loops[0].global_loads == 12 and cv.hot_loop == 0
    cs = build_cfg(sca.instructions)
    assert [(lp.header_address, lp.end_address) for lp in cs.loops] == [(0x280, 0x380),
                                                                         (0x4B0, 0xA30)]
    # the 16x unrolled loop (16 col + 16 val + 16 x loads) is the hot one
    assert cs.hot_loop == 1 and cs.loops[1].global_loads == 48
    # the trailing 'BRA self' after the last EXIT is unreachable, so it is no loop
    assert not cs.blocks[-1].reachable


def test_code_paths_and_nesting():
    body = ["NOP"] * 20
    lines = (["ISETP.GT.AND P0, PT, R0, 0x10, PT", "@P0 BRA 0x{:x}"] + body +
             ["BRA 0x{:x}"] + body + ["IADD3 R1, R1, 0x1, RZ", "ISETP.NE.AND P1, PT, R1, RZ, PT",
                                      "@P1 BRA 0x{:x}", "EXIT", "BRA 0x{:x}"])
    taken = 16 * 23  # first instruction of the second arm
    join = 16 * (23 + 20)
    tail = 16 * (len(lines) - 1)
    lines[1] = lines[1].format(taken)
    lines[22] = lines[22].format(join)
    lines[45] = lines[45].format(join)
    lines[47] = lines[47].format(tail)
    cfg = build_cfg(_listing(lines))
    (path,) = cfg.code_paths
    assert (path.branch_address, path.condition, path.condition_address, path.join_address) == \
        (0x10, "P0", 0x0, join)
    assert [(a.start_address, a.instructions) for a in path.arms] == [(taken, 20), (0x20, 21)]
    # a self loop on the join block: header = join, closed at 0x2d0
    assert [(lp.header_address, lp.back_edge_addresses) for lp in cfg.loops] == \
        [(join, (16 * 45,))]


def test_guarded_definition_does_not_kill():
    ins = _listing(["MOV R2, 0x1", "@P0 MOV R2, 0x2", "IADD3 R3, R2, 0x1, RZ",
                    "@P0 IADD3 R4, R2, 0x1, RZ"])
    du = reaching_definitions(ins, build_cfg(ins))
    assert du.defs(2, "R2") == (0, 1)
    # a use under the same guard sees only the guarded write
    assert du.defs(3, "R2") == (1,)
    assert du.users()[1] == (2, 3)


def test_definitions_through_a_loop():
    ins = _listing(["MOV R1, RZ", "IADD3 R1, R1, 0x1, RZ", "ISETP.NE.AND P0, PT, R1, 0x8, PT",
                    "@P0 BRA 0x10", "EXIT"])
    du = reaching_definitions(ins, build_cfg(ins))
    assert du.defs(1, "R1") == (0, 1)  # from before the loop and from the previous iteration
    assert du.defs(2, "P0") == ()


def test_chain_through_lea_pair_and_none_without_dependency():
    ins = _listing([
        "LDC.64 R2, c[0x0][0x220]", "LDC.64 R8, c[0x0][0x230]",
        "LDG.E.64 R36, desc[UR6][R2.64]",
        "LEA R8, P6, R36, R8, 0x2", "LEA.HI.X R9, R36, R9, R37, 0x2, P6",
        "LDG.E R14, desc[UR6][R8.64]", "LDG.E R15, desc[UR6][R2.64+0x8]", "EXIT"])
    du = reaching_definitions(ins, build_cfg(ins))
    slices, chains = load_slices_and_chains(ins, du)
    (chain,) = chains
    assert (chain.producer, chain.consumer, chain.via) == (2, 5, (3, 4))
    by_load = {s.load: s for s in slices}
    assert by_load[5].const_offsets == ((0x230, True),)
    assert by_load[6].producers == () and by_load[6].const_offsets == ((0x220, True),)


def test_fixture_chain_in_unrolled_loop(h200_fixtures):
    vec = read_listing(h200_fixtures / "spmv_kernels_sm90.cuobjdump.sass")[0]
    ins = vec.instructions
    du = reaching_definitions(ins, build_cfg(ins))
    _, chains = load_slices_and_chains(ins, du)
    idx = {i.address: k for k, i in enumerate(ins)}
    pairs = {(ins[c.producer].address, ins[c.consumer].address) for c in chains}
    # LDG col[j] at 0x210 -> IMAD.WIDE R8, R9, 0x4, R4 at 0x260 -> LDG x[col] at 0x280
    assert (0x210, 0x280) in pairs
    (c,) = [c for c in chains if c.consumer == idx[0x280]]
    assert [ins[v].text for v in c.via] == ["IMAD.WIDE R8, R9, 0x4, R4"]
