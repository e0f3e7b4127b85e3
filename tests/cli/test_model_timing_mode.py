"""``sparsescope model MATRIX --timing-mode latency|throughput``: the what-if in either timing
mode of ``run`` (the one option, ``cli.op_options.add_timing_mode_option``), the mode named in
the text's header, in auto's line and in every ``--json`` record; a mode the option does not
offer is argparse's usage error, exit 2. ``--op spmm --k N --layout row|col``: the SpMM
backends' what-if (``run``'s op options), a table per (matrix, k, layout) (issues 36, 37)."""

from __future__ import annotations

import json

import pytest

from sparsescope.cli import build_parser, main
from sparsescope.timing.types import TIMING_MODES

MODULES = ["sparsescope.cli.model_cmd"]
ARGS = ["--backend", "cupy-cusparse-i32", "--backend", "cuda-spmv-auto", "--gpu", "H100",
        "--no-sass", "--no-store"]


def _timing_mode_action(command: str):
    parser = build_parser(["sparsescope.cli.model_cmd", "sparsescope.cli.run_cmd"])
    sub = next(a for a in parser._actions if a.dest == "command" or a.choices
               and command in a.choices)
    return next(a for a in sub.choices[command]._actions if a.dest == "timing_mode")


def test_model_offers_run_s_timing_modes():
    model, run = _timing_mode_action("model"), _timing_mode_action("run")
    assert tuple(model.choices) == tuple(run.choices) == TIMING_MODES
    assert model.default == run.default == "latency"
    assert "predicted in this mode" in model.help and "Stored with every case" in run.help


def test_throughput_is_named_in_the_header_auto_s_line_and_every_record(powerlaw, capsys):
    assert main(["model", str(powerlaw), *ARGS, "--timing-mode", "throughput"],
                modules=MODULES) == 0
    text = capsys.readouterr().out
    header = text.splitlines()[0]
    assert header.startswith("what-if on H100-SXM") and "throughput mode" in header
    assert "candidates in the throughput mode:" in text
    assert main(["model", str(powerlaw), *ARGS, "--timing-mode", "throughput", "--json"],
                modules=MODULES) == 0
    warm = json.loads(capsys.readouterr().out)
    assert [d["timing_mode"] for d in warm] == ["throughput", "throughput"]
    auto = next(d for d in warm if d["backend"] == "cuda-spmv-auto")
    assert "throughput mode" in auto["auto_choice"]["reason"]
    # the default is the latency mode, and the numbers are the mode's own
    assert main(["model", str(powerlaw), *ARGS, "--json"], modules=MODULES) == 0
    cold = json.loads(capsys.readouterr().out)
    assert [d["timing_mode"] for d in cold] == ["latency", "latency"]
    assert "throughput mode" not in next(
        d for d in cold if d["backend"] == "cuda-spmv-auto")["auto_choice"]["reason"]
    by = {d["backend"]: d["predicted_ms"] for d in cold}
    assert by["cupy-cusparse-i32"] != pytest.approx(
        next(d["predicted_ms"] for d in warm if d["backend"] == "cupy-cusparse-i32"), rel=1e-3)


def test_a_mode_the_option_does_not_offer_is_a_usage_error(powerlaw, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["model", str(powerlaw), *ARGS, "--timing-mode", "warm"], modules=MODULES)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.splitlines()[-1] == ("sparsescope model: error: argument --timing-mode: invalid "
                                    "choice: 'warm' (choose from 'latency', 'throughput')")
    with pytest.raises(SystemExit):
        main(["model", str(powerlaw), *ARGS, "--timing-mode", "warm", "--json"],
             modules=MODULES)
    doc = json.loads(capsys.readouterr().out)
    assert doc["type"] == "UsageError" and doc["exit_code"] == 2
    assert "--timing-mode" in doc["error"]


def test_the_mode_without_a_matrix_is_one_line(capsys):
    assert main(["model", "--gpu", "H100", "--timing-mode", "throughput"], modules=MODULES) == 2
    err = capsys.readouterr().err
    assert err == "sparsescope: error: --timing-mode needs a MATRIX file or --suite\n"


# -- --op spmm --k N --layout row|col -------------------------------------------------------
SPMM = ["--op", "spmm", "--gpu", "H100", "--no-sass", "--no-store"]


def test_spmm_what_if_per_k_and_layout(powerlaw, capsys):
    args = ["model", str(powerlaw), *SPMM, "--k", "8", "--k", "64", "--layout", "col",
            "--backend", "spmm-cuda-auto", "--backend", "spmm-cuda-colmajor",
            "--timing-mode", "throughput"]
    assert main([*args, "--json"], modules=MODULES) == 0
    docs = json.loads(capsys.readouterr().out)
    assert [(d["backend"], d["op"], d["params"], d["timing_mode"]) for d in docs] == [
        (b, "spmm", {"k": k, "layout": "col"}, "throughput") for k in (8, 64)
        for b in ("spmm-cuda-auto", "spmm-cuda-colmajor")]
    assert all(d["predicted_ms"] > 0 for d in docs)
    auto = docs[0]
    note = f"chose {auto['kernel']}, the fastest predicted of its candidates"
    assert auto["summary"]["note"] == note
    assert main(args, modules=MODULES) == 0
    text = capsys.readouterr().out
    assert "\npl  k=8 layout=col\n" in text and "\npl  k=64 layout=col\n" in text
    assert f"  spmm-cuda-auto {note} in the throughput mode\n" in text


def test_spmm_all_is_every_gpu_spmm_backend(powerlaw, capsys):
    from sparsescope.backends.registry import device_backends

    assert main(["model", str(powerlaw), *SPMM, "--backend", "all", "--json"],
                modules=MODULES) == 0
    docs = json.loads(capsys.readouterr().out)
    assert [d["backend"] for d in docs] == device_backends("gpu", "spmm")
    assert {(d["params"]["k"], d["params"]["layout"]) for d in docs} == {(8, "row")}


@pytest.mark.parametrize(("extra", "message"), [
    (["--k", "8"], "--k applies to --op spmm, not --op spmv"),
    (["--op", "spmm", "--k", "0"], "k must be >= 1, got '0'"),
    (["--op", "spmm", "--backend", "cuda-spmv-sell"],
     "backend 'cuda-spmv-sell' implements op 'spmv', not 'spmm'"),
])
def test_spmm_options_refused_in_one_line(powerlaw, capsys, extra, message):
    assert main(["model", str(powerlaw), "--gpu", "H100", "--no-sass", *extra],
                modules=MODULES) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sparsescope: error: {message}") and len(err.splitlines()) == 1
