"""Each planted defect is found from static evidence (SASS and resources only), with its
numbers, and no other defect rule fires on that kernel."""

from __future__ import annotations

import pytest

from sparsescope.analyze.api import analyze_evidence
from sparsescope.analyze.evidence import static_evidence
from sparsescope.analyze.sources import evidence_from_sass

#: kernel -> the rule its planted defect must fire
PLANTED = {"strided_load": "uncoalesced_access", "spill_regs": "register_spill",
           "divergent_branch": "warp_divergence", "dependent_chain": "dependent_load_chain",
           "conflicted_shared": "bank_conflicts"}
DEFECT_RULES = set(PLANTED.values())


def analyse(planted, name, **kw):
    ev = evidence_from_sass([planted[name]], workload=name, block_threads=256,
                            grid_blocks=4096, **kw)
    return analyze_evidence(ev)


@pytest.mark.parametrize("kernel", sorted(PLANTED))
def test_exactly_the_planted_defect_is_found(planted, kernel):
    result = analyse(planted, kernel)
    fired = {f.rule for f in result.findings} & DEFECT_RULES
    assert fired == {PLANTED[kernel]}
    finding = next(f for f in result.findings if f.rule == PLANTED[kernel])
    assert finding.basis == "static" and finding.kernel == kernel


def test_clean_kernel_has_no_finding(planted):
    assert analyse(planted, "clean_copy").findings == ()
    st = static_evidence(planted["clean_copy"])
    assert [(a.op, a.pattern, a.stride_bytes) for a in st.accesses] == [
        ("load", "coalesced", 4), ("store", "coalesced", 4)]


def test_strided_load_numbers(planted):
    st = static_evidence(planted["strided_load"])
    load = next(a for a in st.accesses if a.op == "load")
    # a[i * 17], 4-byte floats: lanes 68 bytes apart, one sector each
    assert (load.pattern, load.stride_bytes, load.width_bytes) == ("strided", 68, 4)
    assert (load.sectors_per_request, load.ideal_sectors_per_request) == (32, 4)
    f = next(f for f in analyse(planted, "strided_load").findings
             if f.rule == "uncoalesced_access")
    assert f.numbers["worst_sectors_ratio"] == 8.0
    assert f.locations[0].address == load.address
    assert "68 B lane stride" in f.locations[0].detail


def test_spill_numbers(planted):
    st = static_evidence(planted["spill_regs"])
    assert st.registers == 32  # __launch_bounds__(256, 8): 65536 / 2048 threads
    assert st.spill_store_bytes > 0 and st.spill_load_bytes > 0
    assert st.local_stores > 0 and st.local_loads > 0
    f = next(f for f in analyse(planted, "spill_regs").findings if f.rule == "register_spill")
    assert f.numbers["spill_store_bytes"] == st.spill_store_bytes
    assert f.numbers["stl"] == st.local_stores and f.numbers["ldl"] == st.local_loads
    assert f.title == "register spills"


def test_divergent_branch_cause(planted):
    st = static_evidence(planted["divergent_branch"])
    assert [b.cause for b in st.branches] == ["thread-index"]
    f = next(f for f in analyse(planted, "divergent_branch").findings
             if f.rule == "warp_divergence")
    assert f.numbers["thread_index_branches"] == 1 and f.numbers["data_branches"] == 0
    assert "BRA" in f.locations[0].sass


def test_dependent_chain_numbers(planted):
    st = static_evidence(planted["dependent_chain"])
    assert len(st.chains) == 1 and not st.chains[0].in_loop
    gather = [a for a in st.accesses if a.pattern == "gather"]
    assert len(gather) == 1 and gather[0].address == st.chains[0].consumer_address
    f = next(f for f in analyse(planted, "dependent_chain").findings
             if f.rule == "dependent_load_chain")
    assert f.numbers["max_chain_depth"] == 2 and f.numbers["chained_loads_in_loop"] == 0
    assert f.severity == "medium"  # not in a loop, no stall data


def test_bank_conflict_ways(planted):
    st = static_evidence(planted["conflicted_shared"])
    ways = sorted(a.bank_ways for a in st.accesses if a.space == "shared")
    assert ways == [32, 32]  # tile[tid * 32] and tile[tid * 32 + 1]: one bank per warp


def test_static_findings_have_no_gain_without_measurements(planted):
    result = analyse(planted, "strided_load")
    assert result.roadmap == ()
    assert [u.rule for u in result.unranked] == ["uncoalesced_access"]


def test_too_few_blocks_and_occupancy_from_static(planted):
    ev = evidence_from_sass([planted["clean_copy"]], workload="c", block_threads=256,
                            grid_blocks=100)
    result = analyze_evidence(ev)
    f = next(f for f in result.findings if f.rule == "too_few_blocks")
    # 10 registers, 256 threads: 8 blocks/SM (warps limit); 132 SMs -> 1056 slots
    assert (f.numbers["blocks_per_sm"], f.numbers["block_slots"]) == (8, 1056)
    assert f.numbers["waves"] == round(100 / 1056, 3)
