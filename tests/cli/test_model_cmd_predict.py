"""``sparsescope model MATRIX --backend B --gpu G``: the cross-GPU what-if, on the CPU.

Each backend plans its call on the host and the model predicts the kernel's time on a GPU of
the spec table; nothing runs on a GPU. Small matrices, real model values.
"""

from __future__ import annotations

import json

import pytest
import scipy.sparse as sp

from sparsescope.cli import main
from sparsescope.hardware.specs import get_spec

MODULES = ["sparsescope.cli.model_cmd"]
EVERY_TERM = {"dram", "latency", "memory", "imbalance", "compute", "overhead"}


@pytest.fixture(autouse=True)
def _own_store(tmp_path, monkeypatch):
    """A store of this test's own: the session's may hold ceilings another test stored."""
    monkeypatch.setenv("SPARSESCOPE_STORE", str(tmp_path / "store.sqlite"))


@pytest.fixture
def banded(tmp_path):
    """A 400 x 400 banded matrix (4,000 nonzeros) written as .mtx."""
    from sparsescope.matrices import generate, write_matrix

    path = tmp_path / "band.mtx"
    write_matrix(generate("banded", 400, 4000, seed=1, halfwidth=12), path)
    return path


def predict(capsys, *argv: str) -> list[dict]:
    assert main(["model", *argv, "--json"], modules=MODULES) == 0
    return json.loads(capsys.readouterr().out)


def terms(case: dict) -> dict[str, float]:
    return {t["name"]: t["time_ms"] for t in case["terms"]}


def test_sell_on_h100_every_term(banded, capsys):
    [case] = predict(capsys, str(banded), "--backend", "cuda-spmv-sell", "--gpu", "H100",
                     "--no-sass")
    assert case["matrix"] == "band" and case["backend"] == "cuda-spmv-sell"
    assert case["gpu"] == "H100-SXM"  # --gpu H100 is the SXM board in the spec table
    assert case["not_modelled"] == ""
    assert case["predicted_ms"] > 0
    found = terms(case)
    # no measured L2 bandwidth in an empty store: the datasheet has none, so no l2 term
    assert set(found) == EVERY_TERM
    assert case["limiter"] in found
    assert all(t["formula"] for t in case["terms"])
    assert case["predicted_ms"] == pytest.approx(
        found["overhead"] + max(found["memory"], found["imbalance"], found["compute"]))
    assert case["kernel"].startswith("spmv_sell<float")
    assert case["index_bytes"] == 4 and case["value_dtype"] == "float32"
    assert case["inputs"]["x_l2_requests"] > 0
    assert any(a.startswith("rates: datasheet of H100-SXM (no measured ceilings")
               for a in case["assumptions"])
    assert any("--no-sass" in a for a in case["assumptions"])


def test_h200_differs_by_its_bandwidth(banded, capsys):
    argv = (str(banded), "--backend", "cuda-spmv-sell", "--no-sass")
    [h100] = predict(capsys, *argv, "--gpu", "H100")
    [h200] = predict(capsys, *argv, "--gpu", "H200")
    assert h200["gpu"] == "H200"
    # the memory term moves with the bandwidth; on this 400-row matrix the longest block's
    # round trips through the L1 (model.l1_wavefronts, by the SM clock) bound the call on both
    assert terms(h100)["memory"] > terms(h200)["memory"]
    # the dram term is bytes / bandwidth: datasheet 3,350 GB/s against 4,800 GB/s
    ratio = get_spec("H200").peak_bw_gb_s / get_spec("H100").peak_bw_gb_s
    assert terms(h100)["dram"] / terms(h200)["dram"] == pytest.approx(ratio)


def test_measured_ceilings_from_the_store_add_the_l2_term(banded, capsys):
    import os

    from sparsescope.hardware.types import MeasuredCeilings
    from sparsescope.results.ceilings_history import store_ceilings

    measured = MeasuredCeilings(device="NVIDIA H100 80GB HBM3", read_bw_gb_s=3000.0,
                                l2_bw_gb_s=9000.0, dram_latency_ns=600.0, l2_latency_ns=250.0,
                                launch_us=2.0)
    store_ceilings(os.environ["SPARSESCOPE_STORE"], measured, "gpu",
                   measured_utc="2025-01-02T03:04:05+00:00")
    argv = (str(banded), "--backend", "cuda-csr-vector", "--gpu", "H100", "--no-sass")
    [case] = predict(capsys, *argv)
    assert set(terms(case)) == EVERY_TERM | {"l2"}
    assert terms(case)["overhead"] == pytest.approx(0.002)  # 1 launch x 2 us
    assert ("rates: measured on NVIDIA H100 80GB HBM3 at 2025-01-02T03:04:05+00:00 "
            "(datasheet where not measured)") in case["assumptions"]
    assert "3,000 GB/s" in next(t["formula"] for t in case["terms"] if t["name"] == "dram")
    # --no-store: the datasheet again; another GPU: its own (absent) ceilings
    [datasheet] = predict(capsys, *argv, "--no-store")
    assert "l2" not in terms(datasheet)
    [h200] = predict(capsys, str(banded), "--backend", "cuda-csr-vector", "--gpu", "H200",
                     "--no-sass")
    assert "l2" not in terms(h200)


def test_cpu_backend_is_not_modelled(banded, capsys):
    [case] = predict(capsys, str(banded), "--backend", "scipy-cpu", "--gpu", "H100")
    assert case["predicted_ms"] is None and case["terms"] == [] and case["limiter"] == ""
    assert "CPU backend" in case["not_modelled"]


def test_missing_file_names_it_without_a_traceback(tmp_path, capsys):
    missing = tmp_path / "nowhere.mtx"
    code = main(["model", str(missing), "--backend", "cuda-spmv-sell", "--gpu", "H100"],
                modules=MODULES)
    err = capsys.readouterr().err
    assert code == 4  # matrix not available
    assert str(missing) in err and "Traceback" not in err


def test_awkward_suite_every_backend(capsys):
    from sparsescope.backends.registry import device_backends
    from sparsescope.matrices import suite_entries

    cases = predict(capsys, "--suite", "awkward", "--backend", "all", "--gpu", "H100",
                    "--no-sass")
    names = [e.name for e in suite_entries("awkward")]
    backends = device_backends("gpu", "spmv")
    assert [(c["matrix"], c["backend"]) for c in cases] == [
        (m, b) for m in names for b in backends]
    for case in cases:
        if case["predicted_ms"] is None:
            assert case["not_modelled"], case
        else:
            assert case["predicted_ms"] > 0 and case["limiter"] in terms(case), case


def test_suite_entry_picked_by_name_and_float64(capsys):
    argv = ("--suite", "awkward", "--matrix", "banded-1001", "--backend", "torch-cusparse-i64",
            "--gpu", "B200")
    [f32] = predict(capsys, *argv)
    [f64] = predict(capsys, *argv, "--dtype", "float64")
    assert f32["matrix"] == "banded-1001" and f32["gpu"] == "B200"
    assert f32["index_bytes"] == 8
    assert terms(f64)["dram"] > terms(f32)["dram"]  # 8-byte values and x


def test_sass_refinement_or_the_reason(banded, capsys):
    from sparsescope.sass.kernel_shape import sass_tools_available

    [case] = predict(capsys, str(banded), "--backend", "cuda-csr-scalar", "--gpu", "H100")
    if sass_tools_available():
        assert case["kernel_source"].startswith("SASS of csr_scalar<float, int> (sm_90")
    else:
        assert case["kernel_source"].startswith("declared by the backend")
        assert any("no CUDA compiler" in a for a in case["assumptions"])


def test_details_show_every_term_and_the_time_taken(banded, capsys):
    code = main(["model", str(banded), "--backend", "cuda-spmv-sell", "--backend", "scipy-cpu",
                 "--gpu", "H100", "--no-sass", "--details"], modules=MODULES)
    out = capsys.readouterr().out
    assert code == 0
    assert "rates: datasheet of H100-SXM (no measured ceilings; L2 and gather rates unknown)" \
        in out
    summary, details = out.split("\ndetails\n")
    assert "band / cuda-spmv-sell" not in summary  # the summary comes first, details after
    assert "band / cuda-spmv-sell" in details and "kernel      spmv_sell<float" in details
    assert "predicted   " in details and "model took  " in details
    for name in EVERY_TERM:  # each term with its words: "    dram (DRAM bandwidth) ..."
        assert f"\n    {name} (" in details
    assert "band / scipy-cpu\n  not modelled: scipy-cpu is a CPU backend" in details


def test_old_usage_still_works(capsys):
    assert main(["model", "--gpu", "H100", "--rows", "1000", "--nnz", "10000", "--time-ms",
                 "0.01", "--json"], modules=MODULES) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gpu"] == "H100-SXM" and out["case"]["bytes"] > 0


@pytest.mark.parametrize("argv, message", [
    (["--backend", "cuda-spmv-sell"], "--backend needs a MATRIX file or --suite"),
    (["--suite", "awkward", "--rows", "10"], "--rows describe one case without a matrix"),
    (["--suite", "awkward", "--backend", "no-such"], "unknown backend 'no-such'"),
    (["--suite", "awkward", "--matrix", "nope"], "unknown entry of suite 'awkward' 'nope'"),
    (["--suite", "awkward", "--latency-ns", "nan"], "--latency-ns must be finite"),
])
def test_bad_what_if_arguments_exit_2(capsys, argv, message):
    assert main(["model", *argv], modules=MODULES) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_api_what_if_on_an_empty_matrix():
    from sparsescope.api import what_if
    from sparsescope.backends.registry import device_backends
    from sparsescope.matrices import Matrix

    result = what_if([Matrix(name="zero", csr=sp.csr_matrix((5, 5)), source="memory")],
                     ["all", "scipy-cpu"], "H100", use_store=False, sass=False)
    # every GPU SpMV backend (both auto choosers) and scipy-cpu
    assert len(result.cases) == len(device_backends("gpu", "spmv")) + 1 >= 14
    for case in result.cases:
        assert case.not_modelled or case.prediction.predicted_ms > 0


def test_backend_that_cannot_plan_without_its_device(banded, capsys, monkeypatch):
    from sparsescope.backends import torch_cusparse

    monkeypatch.setattr(torch_cusparse._TorchCusparse, "host_plan",
                        lambda self, csr, value_dtype, index_bytes, sms: (None, None))
    [case] = predict(capsys, str(banded), "--backend", "torch-cusparse-i32", "--gpu", "H100")
    assert case["predicted_ms"] is None
    assert case["not_modelled"] == "torch-cusparse-i32 cannot plan without its device"
