"""scripts/model_rescore.py scores a run that is not committed beside the committed sets
(``score --run NAME=RESULTS``) and compares it before and now like a committed set."""

from __future__ import annotations

import argparse
import json
import lzma

import pytest

from sparsescope.api import ScoredCase
from tests.test_scripts import load


def write(folder, name, predicted, sources=("/data/seed6_results.json",)):
    folder.mkdir(exist_ok=True)
    rows = [ScoredCase(gpu="H200", matrix="ldoor", backend="cuda-spmv-delta16",
                       measured_ms=0.080, predicted_ms=predicted).as_dict()]
    data = json.dumps({"sources": list(sources), "cases": rows}).encode()
    (folder / f"{name}.json.xz").write_bytes(lzma.compress(data))   # what `score` writes


def test_run_takes_a_new_name_and_a_file(tmp_path):
    script = load("model_rescore")
    name, path = script.parse_run(f"seed6-today={tmp_path / 'r.json'}")
    assert name == "seed6-today" and path == (tmp_path / "r.json").resolve()
    for bad in ("seed6-today", "=x.json", "a/b=x.json", "model-h200=x.json"):
        with pytest.raises(argparse.ArgumentTypeError):
            script.parse_run(bad)


def test_compare_shows_a_given_run_after_the_committed_sets(tmp_path):
    script = load("model_rescore")
    write(tmp_path / "before", "seed6-today", 0.100)   # (80 - 100) / 80 = -25 %
    write(tmp_path / "now", "seed6-today", 0.084)      # (80 - 84) / 80 = -5 %
    write(tmp_path / "before", "model-h200", 0.100)
    write(tmp_path / "now", "model-h200", 0.100)
    text = script.compare(tmp_path / "before", tmp_path / "now", ["compare"], [])
    assert text.index("## model-h200:") < text.index("## seed6-today: a run given to `score --run`")
    assert "Runs: `/data/seed6_results.json`." in text
    assert ("| H200 | latency | our kernels | **all** | 1 | 25.0 | 5.0 | 25.0 | 5.0 | -25.0 | "
            "-5.0 | met |") in text
