"""The generated population: every kind, 10^4 .. 2 x 10^7 nonzeros, a held-out third."""

from __future__ import annotations

from collections import Counter

import pytest

from sparsescope.matrices import SUITES, suite_entries
from sparsescope.matrices.suite_population import KINDS, POPULATION, _nnz, is_held_out
from sparsescope.matrices.suites import build_entry


def test_population_spans_every_kind_and_the_size_range():
    entries = suite_entries("population")
    assert SUITES["population"] is POPULATION and len(entries) == 204
    assert Counter(e.kind for e in entries) == {kind: 34 for kind in KINDS}
    assert len({e.name for e in entries}) == 204
    assert min(e.nnz for e in entries) == 10_000 and max(e.nnz for e in entries) == 20_000_000
    # log spacing: entry 1 of 34 is 10^4 x 2000^(1/33) = 12,590 (hand-computed)
    assert _nnz(0) == 10_000 and _nnz(1) == 12_590 and _nnz(33) == 20_000_000
    means = {round(e.nnz / e.rows) for e in entries if e.kind == "uniform"}
    assert {3, 6, 12, 24, 48, 96} <= means


def test_a_third_of_every_kind_is_held_out():
    entries = POPULATION.entries
    held = [e for e in entries if is_held_out(e.name)]
    assert len(held) == 66 and Counter(e.kind for e in held) == {kind: 11 for kind in KINDS}
    assert all(("held out" in e.description) == is_held_out(e.name) for e in entries)
    with pytest.raises(ValueError, match="not a population entry"):
        is_held_out("cant")


def test_pruned_entries_are_dnn_layers_at_50_to_98_percent_sparsity():
    for e in (e for e in POPULATION.entries if e.kind == "pruned"):
        assert 512 <= e.rows <= 8192 and 512 <= e.cols <= 8192
        assert 0.5 <= 1 - e.nnz / (e.rows * e.cols) <= 0.98


@pytest.mark.parametrize("kind", KINDS)
def test_small_entries_build_with_their_exact_shape_and_nonzeros(kind):
    for e in [e for e in POPULATION.entries if e.kind == kind][:4]:
        m = build_entry(e)
        assert m.csr.shape == (e.rows, e.cols) and m.csr.nnz == e.nnz, e.name


def test_spmm_population_covers_graphs_weights_and_fem_with_a_held_out_third():
    from sparsescope.matrices.suite_population import SPMM_POPULATION, is_held_out_spmm

    entries = suite_entries("spmm-population")
    families = Counter(e.name.split("-")[0] for e in entries)
    assert len(entries) == 60 and families == {"graph": 22, "weights": 24, "fem": 14}
    graphs = [e for e in entries if e.name.startswith("graph")]
    assert max(e.rows for e in graphs) == 5_000_000 and min(e.rows for e in graphs) == 10_000
    weights = [e for e in entries if e.name.startswith("weights")]
    assert {e.rows for e in weights} == {512, 1024, 2048, 4096}
    assert all(0.5 <= 1 - e.nnz / (e.rows * e.cols) <= 0.98 for e in weights)
    assert max(e.nnz for e in entries) <= 100_000_000
    held = [e for e in SPMM_POPULATION.entries if is_held_out_spmm(e.name)]
    assert len(held) == 19 and {e.name.split("-")[0] for e in held} == set(families)
    with pytest.raises(ValueError, match="not an spmm-population entry"):
        is_held_out_spmm("graph")


def test_small_spmm_population_entries_build_exactly():
    from sparsescope.matrices.suite_population import SPMM_POPULATION

    for name in ("graph-00", "graph-01", "weights-00", "weights-23", "fem-00"):
        e = next(e for e in SPMM_POPULATION.entries if e.name == name)
        m = build_entry(e)
        assert m.csr.shape == (e.rows, e.cols) and m.csr.nnz == e.nnz, name


def test_held_out_and_tuning_parts_are_suites_that_split_the_population():
    from sparsescope.matrices import SUITES
    from sparsescope.matrices.suite_population import is_held_out, is_held_out_spmm

    for name, held in (("population", is_held_out), ("spmm-population", is_held_out_spmm)):
        whole = [e.name for e in SUITES[name].entries]
        out = [e.name for e in SUITES[f"{name}-held-out"].entries]
        rest = [e.name for e in SUITES[f"{name}-tuning"].entries]
        assert out == [n for n in whole if held(n)] and rest == [n for n in whole if not held(n)]
        assert len(out) + len(rest) == len(whole) and not set(out) & set(rest)
    assert len(SUITES["spmm-population-held-out"].entries) == 19   # graph 7, weights 8, fem 4
    assert SUITES["population-held-out"].entries[0].name.endswith("-02")
