"""Selection by prediction (``select_predicted``) and ``cuda-spmv-auto``'s CPU-side path: the
candidates, the ranking and shortlist arithmetic, the prediction on datasheet rates, the
timed choice among near-ties (fake kernels), the what-if through ``use_model``."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import scipy.sparse as sp
from test_spmv_select import stats  # hand-made statistics, shared with the rules' tests

from sparsescope.backends import spmv_auto
from sparsescope.backends.select import matrix_statistics
from sparsescope.backends.select_predicted import (
    TRIAL_MARGIN,
    Candidate,
    CandidatePrediction,
    candidates,
    prediction_table,
    ranked,
    select_by_prediction,
    short_piece_long_rows,
    shortlist,
)
from sparsescope.backends.spmv_auto import CudaSpmvAuto, CudaSpmvAutoRules
from sparsescope.matrices import generate
from sparsescope.ops.registry import get_op
from sparsescope.timing.types import Measurement, TimingConfig
from sparsescope.whatif import gpu_rates, predict_case


def pred(label: str, ms: float | None, limiter: str = "dram") -> CandidatePrediction:
    return CandidatePrediction(Candidate(label), ms, limiter if ms else "",
                               "" if ms else "no shape")


def test_candidates_cover_every_family_and_blocks_only_when_they_save():
    plain = candidates(stats())
    assert [c.label for c in plain[:3]] == ["cuda-spmv-adaptive[iters=1]",
                                           "cuda-spmv-adaptive[iters=2]", "cuda-spmv-merge"]
    assert sum(c.backend == "cuda-spmv-sell" for c in plain) == 4
    assert sum(c.backend == "cuda-spmv-delta16" for c in plain) == 4
    assert not any(c.backend == "cuda-spmv-blocked16" for c in plain)
    blocked = [c for c in candidates(stats(block_width=3)) if c.backend == "cuda-spmv-blocked16"]
    assert [c.params["block"] for c in blocked] == [3, 3, 3]
    assert {(c.params.get("tpr", 1), c.params.get("stage", 0)) for c in blocked} == {
        (1, 4), (2, 4), (1, 0)}
    assert [c.label for c in candidates(stats(nnz=0))] == ["cuda-spmv-adaptive[iters=1]"]
    # every candidate builds: its parameters are the backend's own
    for cand in candidates(stats(block_width=4)):
        spmv_auto.CHOICES[cand.backend](**cand.params)


def test_short_pieces_only_where_they_cut_a_row_shorter_than_the_default():
    # rows up to 100 nonzeros, cut by default at 819 (a 99th-percentile row): pieces of
    # 16 and 32 steps a lane at 2 and 4 threads per row cut at 32, 64, 64, 128; the 128 cut
    # is no shorter than the longest row, so it is not planned
    assert short_piece_long_rows(stats(max_nnz_per_row=100, sell_long_row=819)) == [
        (2, 32), (2, 64), (4, 64)]
    # the default cut is already 64: only the 32 cut is shorter
    assert short_piece_long_rows(stats(max_nnz_per_row=4700, sell_long_row=64)) == [(2, 32)]
    # no row longer than a short piece (the hand-made statistics: 12 at most): none
    assert short_piece_long_rows(stats()) == []
    assert short_piece_long_rows(stats(max_nnz_per_row=5000)) == []  # default cut unknown (0)
    found = [c for c in candidates(stats(max_nnz_per_row=5000, sell_long_row=800))
             if "long_row" in c.params]
    assert [(c.backend, c.params) for c in found] == [
        ("cuda-spmv-sell", {"tpr": tpr, "unroll": 2, "minb": 8, "long_row": cut})
        for tpr, cut in ((2, 32), (2, 64), (4, 64), (4, 128))]


def test_one_launch_tiles_only_where_a_row_may_be_cut():
    """Whole-row tiles hold 256 x iters chunks of 4 aligned nonzeros: a row of n nonzeros
    starting r = s mod 4 into its chunk fits alone while n <= 4 x 256 x iters - r, so a row of
    1,021 never splits at iters 1 and one of 1,022 may (started 3 into a chunk)."""
    from sparsescope.backends.select_predicted import rows_may_split
    from sparsescope.backends.spmv_tiling import row_tiles

    assert [rows_may_split(stats(max_nnz_per_row=n), 1) for n in (1021, 1022)] == [False, True]
    assert [rows_may_split(stats(max_nnz_per_row=n), 2) for n in (2045, 2046)] == [False, True]
    # the tiling agrees: a 1,022-nonzero row after a 3-nonzero row is cut, a 1,021 one is not
    for n, cut in ((1021, False), (1022, True)):
        tiles = row_tiles(np.array([0, 3, 3 + n]), 256)
        assert bool(tiles.split_rows.size) is cut
    finished = [c.params for c in candidates(stats(max_nnz_per_row=1500))
                if c.params.get("finish")]
    assert finished == [{"iters": 1, "finish": 1}]
    assert [c.params["iters"] for c in candidates(stats(max_nnz_per_row=5000))
            if c.params.get("finish")] == [1, 2]
    assert not any(c.params.get("finish") for c in candidates(stats()))


def test_the_model_sees_the_tail_that_short_pieces_remove():
    """An R-MAT graph (20,000 rows, one row of about 18,000 nonzeros, 99th-percentile rows of
    hundreds): at the default cut a few warps walk many times their neighbours' steps and the
    prediction is the imbalance; pieces of 16 steps a lane (2 x 16 = 32 nonzeros) are
    predicted several times faster at the same launch, and selection plans them."""
    csr = generate("rmat", 20_000, 1_000_000, seed=3)
    gpu = gpu_rates("H200", use_store=False)
    launch = {"tpr": 2, "unroll": 2, "minb": 8}
    default = predict_case("m", csr, spmv_auto.CHOICES["cuda-spmv-sell"](
        breakdown=False, **launch), gpu).prediction
    short = predict_case("m", csr, spmv_auto.CHOICES["cuda-spmv-sell"](
        breakdown=False, **launch, long_row=32), gpu).prediction
    assert default.limiter == "imbalance"
    assert default.predicted_ms > 4 * short.predicted_ms
    stats_ = matrix_statistics(csr)
    assert stats_.sell_long_row > 128 and (2, 32) in short_piece_long_rows(stats_)


def test_statistics_carry_the_default_sell_cut():
    # 200 rows of 3 and one of 500: mean 5.47 -> 8 x 6 = 48; 99th percentile 3; at least 64
    lengths = np.array([3] * 200 + [500])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate([np.arange(n) for n in lengths])
    csr = sp.csr_matrix((np.ones(indptr[-1]), indices, indptr), shape=(201, 600))
    got = matrix_statistics(csr)
    assert (got.sell_long_row, got.max_nnz_per_row) == (64, 500)
    assert short_piece_long_rows(got) == [(2, 32)]


def member(family: str, name: str, ms: float) -> CandidatePrediction:
    return CandidatePrediction(Candidate(family, {"n": ord(name)}), ms, "dram")


def test_ranking_shortlist_and_table():
    table = [pred("a", 0.050), pred("b", 0.040), pred("c", None), pred("d", 0.0439),
             pred("e", 0.0441), pred("f", 0.0404), pred("g", 0.0402)]
    assert [p.candidate.backend for p in ranked(table)] == ["b", "g", "f", "d", "e", "a", "c"]
    text = prediction_table(table, rows=2)
    assert text == ("b 40.0 us (DRAM bandwidth); g 40.2 us (DRAM bandwidth, +0.5 %); 5 more "
                    "in the case's candidate table")
    assert prediction_table([pred("c", None)]) == "no candidate could be predicted"
    # the fastest names its format's memory floor when the prediction has one
    floored = [dataclasses.replace(table[1], floor_ms=0.0312), table[0]]
    assert prediction_table(floored) == ("b 40.0 us (DRAM bandwidth; its format's memory "
                                         "floor 31.2 us); a 50.0 us (DRAM bandwidth, +25.0 %)")
    assert floored[0].as_dict()["floor_ms"] == 0.0312
    # errors of +-15 %: a candidate up to 1.15 / 0.85 = 1.353 x the fastest may be faster
    assert TRIAL_MARGIN == pytest.approx(0.35294, abs=1e-5)


def test_shortlist_takes_each_familys_fastest_first():
    x = [member("X", "b", 0.040), member("X", "g", 0.0402), member("X", "f", 0.0404),
         member("X", "a", 0.050)]
    table = [*x, member("Y", "d", 0.0439), member("Z", "e", 0.0541), member("W", "h", 0.060),
             pred("c", None)]
    # limit 0.040 x 1.3529 = 0.05412: h (W) is out; heads b (X), d (Y), e (Z), then g by
    # prediction; listed in prediction order
    picked = shortlist(table, most=4)
    assert [(p.candidate.backend, p.predicted_ms) for p in picked] == [
        ("X", 0.040), ("X", 0.0402), ("Y", 0.0439), ("Z", 0.0541)]
    assert [p.predicted_ms for p in shortlist(table, most=2)] == [0.040, 0.0439]
    assert [p.predicted_ms for p in shortlist(table)] == [0.040, 0.0402, 0.0404, 0.0439,
                                                          0.050, 0.0541]
    assert [p.predicted_ms for p in shortlist(table, margin=0.0)] == [0.040]
    assert shortlist([pred("c", None)]) == []


def test_select_by_prediction_picks_the_fastest_prediction():
    csr = generate("banded", 3000, 60_000, seed=1)
    gpu = gpu_rates("H200", use_store=False)
    selection, table = select_by_prediction(csr, gpu)
    done = [p for p in table if p.predicted_ms is not None]
    assert len(done) == len(table) == len(candidates(matrix_statistics(csr)))
    fastest = min(done, key=lambda p: p.predicted_ms)
    assert (selection.backend, selection.params) == (fastest.candidate.backend,
                                                     fastest.candidate.params)
    assert selection.rule == "predicted-fastest"
    assert selection.reason.startswith(f"fastest predicted of {len(table)} candidates on H200")
    assert f"{fastest.candidate.label} {1e3 * fastest.predicted_ms:,.1f} us" in selection.reason
    # the chosen prediction is the one the what-if makes of that kernel alone
    alone = predict_case("m", csr, spmv_auto.CHOICES[fastest.candidate.backend](
        **fastest.candidate.params), gpu)
    assert alone.prediction.predicted_ms == pytest.approx(fastest.predicted_ms)


def test_a_throughput_run_ranks_the_candidates_by_their_throughput_predictions():
    """Auto's candidates are predicted in the run's timing mode: back to back with a warm L2,
    each is predicted faster than alone after a flush, and the table is the one the what-if
    makes of each kernel in that mode."""
    from sparsescope.context import predict_plan

    csr = generate("banded", 3000, 60_000, seed=1)
    gpu = gpu_rates("H200", use_store=False)
    throughput = TimingConfig(mode="throughput")
    _, latency_table = select_by_prediction(csr, gpu)
    selection, table = select_by_prediction(csr, gpu, timing=throughput)
    assert selection.reason.startswith(
        f"fastest predicted of {len(table)} candidates on H200, throughput mode")
    for fast, alone in zip(table, latency_table, strict=True):
        assert fast.candidate == alone.candidate
        assert fast.predicted_ms < alone.predicted_ms
    first = table[0].candidate
    backend = spmv_auto.CHOICES[first.backend](**first.params)
    case = get_op("spmv").make_case(csr, None, seed=0)
    direct = predict_plan(case, backend, gpu, timing=throughput).prediction
    assert direct.predicted_ms == pytest.approx(table[0].predicted_ms)


def test_no_prediction_falls_back_to_the_rules(monkeypatch):
    csr = generate("banded", 500, 5_000, seed=2)
    from sparsescope.backends import select_predicted

    monkeypatch.setattr(select_predicted, "predict_candidates",
                        lambda csr, gpu, found, **kw: [pred(c.label, None) for c in found])
    selection, _ = select_by_prediction(csr, gpu_rates("H100", use_store=False))
    assert selection.rule in ("tiles", "regular-rows", "regular-rows-delta16",
                              "regular-rows-blocked16")
    assert selection.reason.startswith("no candidate could be predicted (no shape); by the "
                                       "rules: ")


def test_what_if_of_auto_is_its_predicted_choice():
    """``sparsescope model --backend cuda-spmv-auto --gpu G`` predicts the kernel that the
    prediction on G chooses (``use_model`` hands G's rates over)."""
    csr = generate("powerlaw", 4000, 40_000, seed=3)
    for name in ("H100", "H200"):
        gpu = gpu_rates(name, use_store=False)
        selection, table = select_by_prediction(csr, gpu)
        auto = predict_case("m", csr, "cuda-spmv-auto", gpu)
        best = min(p.predicted_ms for p in table if p.predicted_ms is not None)
        assert auto.prediction.predicted_ms == pytest.approx(best)
        assert selection.backend in auto.kernel or selection.backend.endswith("adaptive")


class _Fake:
    """A kernel that runs on the CPU and times as given (by backend name)."""

    times = {"fast": 0.5, "slow": 0.9, "middle": 0.7}
    prepared: list = []

    def __init__(self, breakdown=True, **params):
        self.params, self.breakdown = params, breakdown

    def prepare(self, csr, value_dtype, index_bytes):
        _Fake.prepared.append(self.name)
        return csr

    def time(self, prepared, x, config):
        return Measurement(samples_ms=[self.times[self.name]] * config.repeats,
                           config=config, flushed=True, clock="cuda-events")

    def run(self, prepared, x):
        return prepared @ x

    def notes(self, prepared):
        return {}


def _fake(name):
    return type(name, (_Fake,), {"name": name})


def test_timed_choice_keeps_the_fastest_measured(monkeypatch):
    """Predictions within the margin are timed: the second-fastest prediction ran fastest, so
    it is kept; a candidate 40 % over the fastest prediction is not even prepared."""
    monkeypatch.setattr(spmv_auto, "CHOICES", {n: _fake(n) for n in ("fast", "slow", "middle",
                                                                       "far")})
    monkeypatch.setattr(spmv_auto, "TRIAL_TIMING", TimingConfig(warmups=0, repeats=3))
    table = [pred("slow", 0.100), pred("fast", 0.105), pred("middle", 0.108),
             pred("far", 0.140)]
    monkeypatch.setattr(CudaSpmvAuto, "select", lambda self, csr, vd, sms: (
        spmv_auto.Selection("slow", {}, "predicted-fastest", "table"), table))
    monkeypatch.setattr("sparsescope.backends._gpu.device_sm_count", lambda: 132)
    monkeypatch.setattr("sparsescope.backends._gpu.device_l2_bytes", lambda lib: 50 << 20)
    _Fake.prepared = []
    csr = sp.random(50, 40, density=0.2, format="csr", random_state=4)
    auto = CudaSpmvAuto(trial=True)
    prepared = auto.prepare(csr, "float32", 4)
    assert _Fake.prepared == ["slow", "fast", "middle"]
    assert prepared.selection.backend == "fast"
    notes = auto.notes(prepared)
    assert notes["selected"] == "fast" and notes["selection_rule"] == "predicted-then-timed"
    assert float(notes["selection_s"]) >= 0.0  # a duration, recorded (never a bound)
    assert notes["selection_reason"].endswith("timed here (median of 3 calls): slow 900.0 us, "
                                              "fast 500.0 us, middle 700.0 us, on the whole "
                                              "matrix")
    assert notes["selection_trial_nnz"] == str(csr.nnz)
    assert float(notes["selection_predict_s"]) + float(notes["selection_trial_s"]) == \
        pytest.approx(float(notes["selection_s"]), abs=0.011)  # each rounded to 0.01 s
    rows = json.loads(notes["selection_table"])
    assert [r["label"] for r in rows] == ["slow", "fast", "middle", "far"]
    assert [r["trial_ms"] for r in rows] == [0.9, 0.5, 0.7, None]
    x = np.arange(40, dtype=np.float32)
    np.testing.assert_allclose(auto.run(prepared, x), csr @ x)
    # without the trial, the fastest prediction alone
    _Fake.prepared = []
    alone = CudaSpmvAuto(trial=False).prepare(csr, "float32", 4)
    assert _Fake.prepared == ["slow"] and alone.selection.backend == "slow"


def test_rules_variant_needs_no_device_rates():
    csr = generate("banded", 2000, 20_000, seed=5)
    selection, table = CudaSpmvAutoRules().select(csr, "float32", 132)
    assert table == [] and selection.rule != "predicted-fastest"
    assert CudaSpmvAutoRules.name == "cuda-spmv-auto-rules"


def test_planning_on_threads_gives_the_one_thread_answer(monkeypatch):
    from sparsescope.backends import select_predicted
    from sparsescope.backends.format_cache import FORMATS
    from sparsescope.context.predict import forget_plans

    csr = generate("banded", 3000, 45_000, seed=6)
    gpu = gpu_rates("H200", use_store=False)
    found = candidates(matrix_statistics(csr))
    monkeypatch.setattr(select_predicted, "plan_workers", lambda groups: 1)
    FORMATS.clear()
    forget_plans()  # plans and predictions are kept per matrix: computed afresh each time
    alone = select_predicted.predict_candidates(csr, gpu, found)
    monkeypatch.setattr(select_predicted, "plan_workers", lambda groups: 4)
    FORMATS.clear()
    forget_plans()
    threaded = select_predicted.predict_candidates(csr, gpu, found)
    assert [(p.candidate, p.predicted_ms, p.limiter) for p in threaded] == [
        (p.candidate, p.predicted_ms, p.limiter) for p in alone]
    assert [p.candidate for p in threaded] == found
    # one worker per format, at most the cores and 8
    monkeypatch.undo()
    assert select_predicted.plan_workers(1) == 1
    assert 1 <= select_predicted.plan_workers(100) <= 8


def test_format_cache_builds_each_format_once_across_threads():
    import threading
    import time as clock

    from sparsescope.backends.format_cache import FormatCache

    cache, csr, built = FormatCache(), sp.random(20, 20, density=0.2, format="csr"), []

    def build(key):
        def make(matrix):
            built.append(key)
            clock.sleep(0.01)
            return (key, matrix.nnz)
        return make

    got = {}
    threads = [threading.Thread(target=lambda k=k: got.__setitem__(k, cache.get(
        csr, (k,), build(k)))) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(built) == list(range(6))
    assert all(got[k] == (k, csr.nnz) and cache.get(csr, (k,), build(-1)) is got[k]
               for k in range(6))
    assert sorted(built) == list(range(6))  # served from the cache


def test_variant_sets_hold_every_candidate():
    """``auto-candidates`` is exactly what auto predicts for 1 x 3 blocks and rows long enough
    for every short piece, and the ``selection`` sweep holds all of them, so regret is scored
    against every possible choice."""
    from sparsescope.backends.variants import VARIANT_SETS

    def key(backend, options):
        cls = spmv_auto.CHOICES[backend]
        return backend, tuple(sorted({**cls.defaults, **options}.items()))

    skewed = stats(block_width=3, max_nnz_per_row=5000, sell_long_row=800)
    wanted = {key(c.backend, c.params) for c in candidates(skewed)}
    for name in ("auto-candidates", "selection"):
        have = {key(b, o) for b, o in VARIANT_SETS[name].values() if b in spmv_auto.CHOICES}
        assert wanted <= have, name
    assert len(VARIANT_SETS["auto-candidates"]) == len(wanted)


def test_the_trial_can_be_turned_off_for_a_process(monkeypatch):
    """The ncu target sets SPARSESCOPE_AUTO_TRIAL=0: ncu profiles every launch of the process,
    so auto chooses by prediction alone there."""
    import argparse

    from sparsescope import target
    from sparsescope.backends.spmv_auto import AUTO_TRIAL_ENV

    monkeypatch.delenv(AUTO_TRIAL_ENV, raising=False)
    assert CudaSpmvAuto().trial and not CudaSpmvAuto(trial=False).trial
    monkeypatch.setenv(AUTO_TRIAL_ENV, "0")
    assert not CudaSpmvAuto().trial and CudaSpmvAuto(trial=True).trial
    monkeypatch.delenv(AUTO_TRIAL_ENV)
    seen = {}
    monkeypatch.setattr("sparsescope.matrices.suite_dlmc.build_named_entry",
                        lambda *a, **k: None)
    monkeypatch.setattr("sparsescope.backends.runner.run_case",
                        lambda *a, **k: seen.setdefault("trial", CudaSpmvAuto().trial))
    monkeypatch.setattr("sparsescope.backends.runner.report_case_exit", lambda case, label: 0)
    args = argparse.Namespace(suite="seed6", matrix="cant", scale=0.01, backend="b", op="spmv",
                              param=[], warmups=1, repeats=1, seed=0, check_only=True,
                              profile_call=False)
    assert target.run_one(args) == 0 and seen["trial"] is False
    assert AUTO_TRIAL_ENV not in __import__("os").environ  # nothing left for later cases


def test_a_large_matrix_is_trialled_on_a_row_sample_and_only_the_kept_one_prepared_whole(
        monkeypatch):
    """Above the trial's size (4 x the L2 in stored entries) the shortlist is prepared and
    timed on a row sample of whole rows, and only the kernel kept is prepared on the whole
    matrix; the reason says so."""
    monkeypatch.setattr(spmv_auto, "CHOICES", {n: _fake(n) for n in ("fast", "slow",
                                                                       "middle")})
    monkeypatch.setattr(spmv_auto, "TRIAL_TIMING", TimingConfig(warmups=0, repeats=3))
    table = [pred("slow", 0.100), pred("fast", 0.105), pred("middle", 0.108)]
    monkeypatch.setattr(CudaSpmvAuto, "select", lambda self, csr, vd, sms: (
        spmv_auto.Selection("slow", {}, "predicted-fastest", "table"), table))
    monkeypatch.setattr("sparsescope.backends._gpu.device_sm_count", lambda: 132)
    # 4 x 4,000 bytes of L2 / (4 + 4) bytes an entry = 2,000 nonzeros a trial
    monkeypatch.setattr("sparsescope.backends._gpu.device_l2_bytes", lambda lib: 4_000)
    sizes = []
    original = _Fake.prepare

    def prepare(self, csr, value_dtype, index_bytes):
        sizes.append((self.name, csr.shape[0], csr.nnz))
        return original(self, csr, value_dtype, index_bytes)

    monkeypatch.setattr(_Fake, "prepare", prepare)
    _Fake.prepared = []
    csr = generate("banded", 3000, 30_000, seed=3)
    auto = CudaSpmvAuto(trial=True)
    prepared = auto.prepare(csr, "float32", 4)
    assert [name for name, _, _ in sizes] == ["slow", "fast", "middle", "fast"]
    sampled = {(rows, nnz) for _, rows, nnz in sizes[:3]}
    assert len(sampled) == 1  # one sample for the three
    rows, nnz = sampled.pop()
    assert rows < 3000 and 1_000 <= nnz < 30_000
    assert sizes[3] == ("fast", 3000, csr.nnz)  # the kept one, whole
    notes = auto.notes(prepared)
    assert notes["selection_trial_nnz"] == str(nnz)
    assert f"on a row sample of {nnz:,} of {csr.nnz:,} nonzeros" in notes["selection_reason"]
    x = np.arange(3000, dtype=np.float32)
    np.testing.assert_allclose(auto.run(prepared, x), csr @ x, rtol=1e-5)


def test_the_trial_times_in_the_runs_timing_mode(monkeypatch):
    """A throughput run tells auto its mode (the runner's ``use_timing``): the shortlist is
    timed back to back, and the reason says so; a latency run keeps the latency trial."""
    modes = []

    class Recording(_Fake):
        def time(self, prepared, x, config):
            modes.append((self.name, config.mode))
            return super().time(prepared, x, config)

    monkeypatch.setattr(spmv_auto, "CHOICES", {n: type(n, (Recording,), {"name": n})
                                               for n in ("fast", "slow")})
    monkeypatch.setattr(spmv_auto, "TRIAL_TIMING", TimingConfig(warmups=0, repeats=3))
    table = [pred("slow", 0.100), pred("fast", 0.105)]
    monkeypatch.setattr(CudaSpmvAuto, "select", lambda self, csr, vd, sms: (
        spmv_auto.Selection("slow", {}, "predicted-fastest", "table"), table))
    monkeypatch.setattr("sparsescope.backends._gpu.device_sm_count", lambda: 132)
    monkeypatch.setattr("sparsescope.backends._gpu.device_l2_bytes", lambda lib: 50 << 20)
    csr = sp.random(50, 40, density=0.2, format="csr", random_state=4)
    auto = CudaSpmvAuto(trial=True)
    auto.use_timing(TimingConfig(mode="throughput"))
    prepared = auto.prepare(csr, "float32", 4)
    assert modes == [("slow", "throughput"), ("fast", "throughput")]
    assert "back to back (throughput mode)" in prepared.selection.reason
    modes.clear()
    auto.use_timing(TimingConfig())
    assert "back to back" not in auto.prepare(csr, "float32", 4).selection.reason
    assert modes == [("slow", "latency"), ("fast", "latency")]
