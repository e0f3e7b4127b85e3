"""The planned cuSPARSE backends (nvmath-python) without a GPU: registration as libraries,
their variants, the skip with the install hint, the preprocessing decision from the loaded
library's symbols, the SpMM layouts and the refusal probe (with stand-ins), the report's
naming of the algorithm that won, and the probes ``sparsescope ceilings`` times."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope import registry
from sparsescope.backends import nvmath_cusparse, spmm_nvmath
from sparsescope.backends.library_probe import (
    LIBRARY_PROBES,
    ProbeUnavailable,
    backend_probe,
    library_call_probes,
    probe_matrix,
    routes_for,
)
from sparsescope.backends.registry import get_backend
from sparsescope.backends.runner import run_case
from sparsescope.backends.scipy_cpu import ScipyCpuBackend
from sparsescope.backends.variants import backend_choice, variant_set
from sparsescope.errors import UsageError
from sparsescope.hardware.gpu_ceilings import library_call_costs, library_methods
from sparsescope.matrices.types import Matrix
from sparsescope.report.collection_data import backend_label
from sparsescope.results.records import CaseResult
from sparsescope.timing.types import Measurement, TimingConfig


def test_both_are_libraries_of_their_ops():
    assert registry.LIBRARY_BACKENDS[("spmv", "nvmath-cusparse-i32")].endswith(
        "nvmath_cusparse:NvmathCusparseI32")
    assert registry.LIBRARY_BACKENDS[("spmm", "spmm-nvmath-i32")].endswith(
        "spmm_nvmath:SpmmNvmathI32")
    for name in ("nvmath-cusparse-i32", "nvmath-cusparse-i32[alg=2]", "spmm-nvmath-i32[alg=3]"):
        assert not registry.is_own(name)  # counted among the libraries: "best cuSPARSE"
    spmv, spmm = get_backend("nvmath-cusparse-i32"), get_backend("spmm-nvmath-i32")
    assert (spmv.capability.ops, spmm.capability.ops) == (("spmv",), ("spmm",))
    assert spmv.capability.index_bytes == spmm.capability.index_bytes == (4,)
    assert spmv.capability.value_dtypes == ("float32", "float64") == spmm.capability.value_dtypes
    assert (spmv.alg, spmv.preprocess) == (0, 1)  # default algorithm, preprocessed


def test_algorithms_are_variants():
    choice = backend_choice("nvmath-cusparse-i32[alg=2]")
    backend = choice.create()
    assert (backend.alg, backend.preprocess, choice.result_name) == (
        2, 1, "nvmath-cusparse-i32[alg=2]")
    assert backend_choice("spmm-nvmath-i32[alg=3,preprocess=0]").create().preprocess == 0
    with pytest.raises(UsageError, match=r"alg must be one of 0 \(DEFAULT\), 1 \(CSR_ALG1\), "
                                         r"2 \(CSR_ALG2\), got 3"):
        backend_choice("nvmath-cusparse-i32[alg=3]")
    with pytest.raises(UsageError, match="preprocess must be 0 or 1"):
        backend_choice("spmm-nvmath-i32[preprocess=2]")
    spmv = [c.result_name for c in variant_set("cusparse-spmv")]
    assert spmv == ["nvmath-cusparse-i32[alg=0]", "nvmath-cusparse-i32[alg=1]",
                    "nvmath-cusparse-i32[alg=2]", "nvmath-cusparse-i32[alg=0,preprocess=0]",
                    "nvmath-cusparse-i32[alg=1,preprocess=0]",
                    "nvmath-cusparse-i32[alg=2,preprocess=0]"]
    spmm = {c.result_name: dict(c.options) for c in variant_set("cusparse-spmm")}
    assert spmm["spmm-nvmath-i32[alg=3,preprocess=0]"] == {"alg": 3, "preprocess": 0}
    assert sorted(o["alg"] for o in spmm.values()) == [0, 1, 1, 2, 3, 3]


def test_cusparse_names():
    assert nvmath_cusparse.cusparse_name("SPMV", 0) == "CUSPARSE_SPMV_ALG_DEFAULT"
    assert nvmath_cusparse.cusparse_name("SPMV", 2) == "CUSPARSE_SPMV_CSR_ALG2"
    assert nvmath_cusparse.cusparse_name("SPMM", 3) == "CUSPARSE_SPMM_CSR_ALG3"


@pytest.fixture
def without_nvmath(monkeypatch):
    """A machine where nvmath-python is not installed (whatever this one has)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "nvmath" else real(name, *a))
    nvmath_cusparse.nvmath_status.cache_clear()
    yield
    nvmath_cusparse.nvmath_status.cache_clear()


def _tiny() -> Matrix:
    csr = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 0.0]]))
    return Matrix(name="tiny", csr=csr, source="test", kind="uniform")


@pytest.mark.parametrize("name, op, params", [
    ("nvmath-cusparse-i32", "spmv", None), ("spmm-nvmath-i32", "spmm", {"k": 4})])
def test_without_nvmath_the_case_is_skipped_with_the_install_hint(without_nvmath, name, op,
                                                                   params):
    case = run_case(_tiny(), name, op, params, config=TimingConfig(warmups=0, repeats=1))
    assert case.outcome == "skipped"
    assert "nvmath-python is not installed" in case.reason
    assert "pip install 'sparsescope[nvmath]'" in case.reason
    choice = backend_choice(f"{name}[alg=1]")  # a variant is skipped the same way
    assert run_case(_tiny(), choice, op, params, config=TimingConfig()).outcome == "skipped"


def test_the_extra_names_the_package():
    from sparsescope._optional import EXTRA_FOR_MODULE

    assert EXTRA_FOR_MODULE["nvmath"] == "nvmath"
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert 'nvmath = ["nvmath-python[cu13]' in text


@pytest.mark.parametrize("pointers, offered, why", [
    ({"__cusparseSpMV_preprocess": 0x7f00}, True, ""),
    ({"cusparseSpMV_preprocess": 1}, True, ""),
    ({"__cusparseSpMV_preprocess": 0}, False, "the loaded cuSPARSE has no "
                                              "cusparseSpMV_preprocess"),
    ({"__cusparseSpMV": 0x10}, False, "these nvmath-python bindings do not know "
                                      "cusparseSpMV_preprocess"),
])
def test_preprocess_is_offered_only_where_the_library_exports_it(pointers, offered, why):
    ok, reason = nvmath_cusparse.library_offers("cusparseSpMV_preprocess", pointers)
    assert ok is offered and why in reason


def test_preprocess_state_is_recorded():
    state = nvmath_cusparse.preprocess_state
    assert state(0, "cusparseSpMV_preprocess", (True, "")) == (False, "off (variant "
                                                                      "preprocess=0)")
    assert state(1, "cusparseSpMV_preprocess", (True, "")) == (
        True, "cusparseSpMV_preprocess once in prepare")
    assert state(1, "cusparseSpMV_preprocess", (False, "the loaded cuSPARSE has no X")) == (
        False, "not run: the loaded cuSPARSE has no X")
    # as the H100's kernel breakdown of the planned call showed: memset + csrmv_v3, the
    # partition unless preprocessed, the fix-up of CSR_ALG2
    assert nvmath_cusparse.planned_launches(True) == 2
    assert nvmath_cusparse.planned_launches(False) == 3
    assert nvmath_cusparse.planned_launches(False, alg=2) == 4


def test_dense_layouts():
    assert spmm_nvmath.dense_layout("row", 1000, 8) == ("ROW", 8)
    assert spmm_nvmath.dense_layout("col", 1000, 8) == ("COL", 1000)
    with pytest.raises(ValueError, match="layout must be row or col"):
        spmm_nvmath.dense_layout("tiled", 4, 4)


class _Status:
    name = "NOT_SUPPORTED"


class _CusparseError(Exception):
    status = _Status()


def test_an_algorithm_that_refuses_a_layout_is_a_skip_asked_once(monkeypatch):
    monkeypatch.setattr(spmm_nvmath, "_REFUSALS", {})
    calls = []

    def probe(alg, layout, dtype):
        calls.append((alg, layout, dtype))
        if alg == 2 and layout == "col":
            raise _CusparseError("CUSPARSE_STATUS_NOT_SUPPORTED")

    why = spmm_nvmath.refusal(2, "col", "float32", probe)
    assert why == ("cuSPARSE does not take CUSPARSE_SPMM_CSR_ALG2 with col-major X and Y "
                   "(float32): NOT_SUPPORTED")
    assert spmm_nvmath.refusal(2, "col", "float32", probe) == why  # kept: not asked again
    assert spmm_nvmath.refusal(2, "row", "float32", probe) == ""
    assert calls == [(2, "col", "float32"), (0, "col", "float32"), (2, "row", "float32")]


def test_a_call_the_default_refuses_too_is_a_fault_not_a_skip(monkeypatch):
    monkeypatch.setattr(spmm_nvmath, "_REFUSALS", {})

    def broken(alg, layout, dtype):
        raise RuntimeError("invalid value")

    assert spmm_nvmath.refusal(3, "row", "float64", broken) == ""
    assert spmm_nvmath._REFUSALS == {}  # not kept: prepare is left to fail with the cause


def test_the_report_names_the_algorithm_that_won():
    case = CaseResult(matrix="m", backend="nvmath-cusparse-i32[alg=2]", op="spmv",
                      outcome="skipped", notes={"algorithm": "CUSPARSE_SPMV_CSR_ALG2"})
    assert backend_label(case) == "nvmath-cusparse-i32[alg=2] (CSR_ALG2)"
    default = CaseResult(matrix="m", backend="spmm-nvmath-i32", op="spmm", outcome="skipped",
                         notes={"algorithm": "CUSPARSE_SPMM_ALG_DEFAULT"})
    assert backend_label(default) == "spmm-nvmath-i32 (ALG_DEFAULT)"
    wrapper = CaseResult(matrix="m", backend="cupy-cusparse-i32", op="spmv", outcome="skipped")
    assert backend_label(wrapper) == "cupy-cusparse-i32"


def test_the_collection_counts_every_library_variant_as_the_baseline():
    from sparsescope.report.collection_data import _group_row
    from sparsescope.timing.types import Measurement

    def timed(backend, ms, **notes):
        return CaseResult(matrix="m", backend=backend, op="spmv", outcome="ok",
                          measurement=Measurement((ms,), TimingConfig()), notes=notes)

    cases = [timed("cupy-cusparse-i32", 0.020), timed("cuda-csr-vector", 0.010),
             timed("nvmath-cusparse-i32[alg=2]", 0.016, algorithm="CUSPARSE_SPMV_CSR_ALG2"),
             timed("nvmath-cusparse-i32", 0.018, algorithm="CUSPARSE_SPMV_ALG_DEFAULT")]
    row = _group_row(("m", "spmv", ""), cases, None, "m", {})
    assert row.library_backend == "nvmath-cusparse-i32[alg=2] (CSR_ALG2)"
    assert row.library_ms == 0.016 and row.speedup_x == pytest.approx(1.6)


def test_probe_matrix():
    csr = probe_matrix()
    assert csr.shape == (32, 32) and csr.nnz == 64 and csr.has_canonical_format
    assert set(np.diff(csr.indptr)) == {2} and set(csr.getnnz(axis=0)) == {2}


class _CountingScipy(ScipyCpuBackend):
    def __init__(self, wrong: bool = False) -> None:
        self.prepared, self.wrong = 0, wrong

    def prepare(self, matrix_csr, value_dtype, index_bytes):
        self.prepared += 1
        return super().prepare(matrix_csr, value_dtype, index_bytes)

    def run(self, prepared, x):
        y = super().run(prepared, x)
        return y + 1.0 if self.wrong else y


def test_a_probe_checks_once_then_times_with_the_config_given():
    backend = _CountingScipy()
    probe = backend_probe(backend)
    first = probe(TimingConfig(warmups=0, repeats=2, flush_l2=False))
    second = probe(TimingConfig(warmups=0, repeats=3, mode="throughput", throughput_calls=10))
    assert backend.prepared == 1  # prepared and checked once, timed twice
    assert len(first.samples_ms) == 2 and first.config.mode == "latency"
    assert len(second.samples_ms) == 3 and second.config.throughput_calls == 10
    assert "32 x 32 matrix of 64 nonzeros" in probe.describes
    with pytest.raises(AssertionError, match="got the probe matrix's product wrong"):
        backend_probe(_CountingScipy(wrong=True))(TimingConfig(repeats=1))


def test_probes_of_routes_that_cannot_run_here_say_why(without_nvmath):
    probes = library_call_probes({"nvmath": "nvmath-cusparse-i32"})
    with pytest.raises(ProbeUnavailable, match="nvmath-python is not installed"):
        probes["nvmath"](TimingConfig())
    assert set(LIBRARY_PROBES) == {"nvmath", "cupy", "torch"}


def test_library_call_costs_are_the_protocol_s_medians_in_us():
    seen = []

    def probe(config):
        seen.append((config.mode, config.flush_l2, config.repeats))
        samples = (0.012, 0.010, 0.011) if config.mode == "latency" else (0.004, 0.005, 0.003)
        return Measurement(samples, config)

    def missing(config):
        raise ProbeUnavailable("torch is not installed")

    latency, throughput, why = library_call_costs({"cupy": probe, "torch": missing}, 3)
    assert latency == {"cupy": pytest.approx(11.0)}
    assert throughput == {"cupy": pytest.approx(4.0)}
    assert why == {"torch": "ProbeUnavailable: torch is not installed"}
    assert seen == [("latency", True, 3), ("throughput", None, 3)]
    methods = library_methods({"cupy": probe, "torch": missing}, why, 3)
    assert "torch not measured (ProbeUnavailable: torch is not installed)" in (
        methods["library_call_us"])
    assert "L2 flushed" in methods["library_call_us"]
    assert library_methods({}, {}, 3) == {}


def test_a_run_measures_the_routes_of_its_library_backends_only():
    assert routes_for(["cupy-cusparse-i32", "nvmath-cusparse-i32[alg=2]", "cuda-csr-vector"]) == {
        "nvmath": "nvmath-cusparse-i32", "cupy": "cupy-cusparse-i32"}
    assert routes_for(["torch-cusparse-i64"]) == {"torch": "torch-cusparse-i32"}
    assert routes_for(["cuda-spmv-auto", "scipy-cpu"]) == {}
    # every route's backend declares that route on its kernel shape: the model charges the
    # fixed cost the probe measured to the same calls
    csr = probe_matrix()
    for route, name in LIBRARY_PROBES.items():
        _, shape = get_backend(name).host_plan(csr, "float32", 4, 132)
        assert shape.library == route
