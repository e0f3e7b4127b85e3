"""``api.what_if_matrices(timing_mode=...)``: the what-if predicts every backend, and auto's
choice, in the timing mode asked for (issues 36, 37): the same prediction as
``context.predict_plan(..., timing=TimingConfig(mode=...))`` of the same plan, the mode
carried in every ``--json`` record; a mode the timing protocol does not know is refused before
anything is loaded; the SpMM backends (``op="spmm"``, every k and layout) alike."""

from __future__ import annotations

import pytest

from sparsescope.errors import UsageError

BACKENDS = ["cupy-cusparse-i32", "cuda-spmv-sell", "cuda-spmv-auto"]


@pytest.fixture(scope="module")
def powerlaw(tmp_path_factory):
    """A 2,000-row power-law matrix (20,000 nonzeros) as .mtx: its working set fits the
    H100's L2, so the latency mode flushes it and the throughput mode finds it warm."""
    from sparsescope.matrices import generate, write_matrix

    path = tmp_path_factory.mktemp("timing_mode") / "pl.mtx"
    write_matrix(generate("powerlaw", 2000, 20000, seed=0), path)
    return path


def _what_if(path, mode: str):
    from sparsescope import api

    return api.what_if_matrices([str(path)], gpu="H100", backends=BACKENDS, sass=False,
                                use_store=False, timing_mode=mode)


@pytest.fixture(scope="module")
def both(powerlaw):
    """(latency, throughput) what-ifs of the same matrix and backends."""
    return _what_if(powerlaw, "latency"), _what_if(powerlaw, "throughput")


def _direct(path, backend_name: str, mode: str, op: str = "spmv",
            params: dict | None = None) -> float:
    """``backend_name``'s prediction on ``path`` through the one entry point, in ``mode``
    (for ``op`` with ``params``: ``{"k": [8], "layout": ["row"]}``)."""
    from sparsescope.backends.registry import get_backend
    from sparsescope.context import named_gpu
    from sparsescope.context.predict import plan_case, predict_plan
    from sparsescope.matrices import read_matrix
    from sparsescope.ops.registry import params_for
    from sparsescope.timing.types import TimingConfig

    csr = read_matrix(str(path)).csr
    device = named_gpu("H100", use_store=False, sass=False)
    backend = get_backend(backend_name)
    width = int(backend.capability.index_bytes[0])
    (op_params,) = params_for(op, params)
    case = plan_case(op, csr, op_params, index_bytes=width)
    timing = TimingConfig(mode=mode)
    backend.use_timing(timing)
    plan = predict_plan(case, backend, device, timing=timing)
    assert plan.prediction is not None, plan.not_modelled
    return plan.prediction.predicted_ms


def test_each_backend_is_predicted_as_predict_plan_predicts_the_throughput_mode(both, powerlaw):
    latency, throughput = both
    assert (latency.timing_mode, throughput.timing_mode) == ("latency", "throughput")
    warm = {c.backend: c.prediction.predicted_ms for c in throughput.cases}
    cold = {c.backend: c.prediction.predicted_ms for c in latency.cases}
    assert set(warm) == set(BACKENDS)
    for name in ("cupy-cusparse-i32", "cuda-spmv-sell"):
        assert warm[name] == pytest.approx(_direct(powerlaw, name, "throughput"), rel=1e-12)
        assert cold[name] == pytest.approx(_direct(powerlaw, name, "latency"), rel=1e-12)
    # the modes differ here (launches overlapped, the L2 warm): a what-if that ignored the
    # mode could not match both
    assert warm["cupy-cusparse-i32"] != pytest.approx(cold["cupy-cusparse-i32"], rel=1e-3)
    # the summary's numbers are the mode's
    rows = {r.backend: r.predicted_ms for r in throughput.summary}
    assert rows == warm


def test_auto_chooses_in_the_throughput_mode_and_says_so(both):
    latency, throughput = both
    for result, mode in ((latency, "latency"), (throughput, "throughput")):
        (choice,) = result.auto
        assert choice.rule == "predicted-fastest"
        done = [c for c in choice.candidates if c["predicted_ms"] is not None]
        fastest = min(done, key=lambda c: c["predicted_ms"])
        assert choice.chosen == fastest["label"]
        auto = next(c for c in result.cases if c.backend == "cuda-spmv-auto")
        # auto's own row is the mode's fastest candidate, from the one list
        assert auto.prediction.predicted_ms == pytest.approx(fastest["predicted_ms"],
                                                             rel=1e-12)
        assert ("throughput mode" in choice.reason) is (mode == "throughput")
    warm_table = {c["label"]: c["predicted_ms"] for c in throughput.auto[0].candidates}
    cold_table = {c["label"]: c["predicted_ms"] for c in latency.auto[0].candidates}
    assert warm_table.keys() == cold_table.keys()
    assert warm_table != cold_table


def test_every_json_record_names_the_mode(both):
    latency, throughput = both
    assert {d["timing_mode"] for d in latency.case_docs()} == {"latency"}
    docs = throughput.case_docs()
    assert len(docs) == len(BACKENDS)
    assert {d["timing_mode"] for d in docs} == {"throughput"}
    auto = next(d for d in docs if d["backend"] == "cuda-spmv-auto")
    assert "throughput mode" in auto["auto_choice"]["reason"]


def test_a_mode_the_protocol_does_not_know_is_refused_before_loading(tmp_path):
    from sparsescope import api

    with pytest.raises(UsageError, match="timing mode must be one of latency, throughput, "
                                         "got 'warm'"):
        api.what_if_matrices([str(tmp_path / "absent.mtx")], gpu="H100",
                             backends=["cuda-spmv-sell"], sass=False, use_store=False,
                             timing_mode="warm")


def test_spmm_backends_for_each_k_and_layout_in_the_mode_asked(powerlaw):
    from sparsescope import api

    backends = ["spmm-cuda-rowwarp", "spmm-cuda-auto"]
    result = api.what_if_matrices([str(powerlaw)], gpu="H100", backends=backends, sass=False,
                                  use_store=False, timing_mode="throughput", op="spmm",
                                  op_params={"k": [8, 64], "layout": ["row"]})
    assert [(c.backend, c.op, c.params) for c in result.cases] == [
        (b, "spmm", {"k": k, "layout": "row"}) for k in (8, 64) for b in backends]
    for case in result.cases:
        one = {"k": [case.params["k"]], "layout": ["row"]}
        warm = _direct(powerlaw, case.backend, "throughput", "spmm", one)
        assert case.prediction.predicted_ms == pytest.approx(warm, rel=1e-12)
    # auto chose in the throughput mode: at k = 64 its latency-mode plan predicts another time
    auto_64 = result.cases[3]
    cold = _direct(powerlaw, "spmm-cuda-auto", "latency", "spmm", {"k": [64], "layout": ["row"]})
    assert auto_64.prediction.predicted_ms != pytest.approx(cold, rel=1e-3)
    # a summary table per (matrix, k, layout); auto's row names the kernel it chose
    assert [r.group for r in result.summary] == ["pl  k=8 layout=row"] * 2 + [
        "pl  k=64 layout=row"] * 2
    for row in result.summary:
        case = next(c for c in result.cases if (c.backend, c.params) == (row.backend,
                                                                          row.params))
        assert row.predicted_ms == case.prediction.predicted_ms
        if row.backend == "spmm-cuda-auto":
            assert row.note == f"chose {case.kernel}, the fastest predicted of its candidates"
    docs = result.case_docs()
    assert [d["summary"]["params"] for d in docs] == [c.params for c in result.cases]
    assert {d["timing_mode"] for d in docs} == {"throughput"}
    assert result.auto == ()  # SpMV auto's account: not asked for here
