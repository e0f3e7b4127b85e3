"""``benchmarks/seed6_speed.py``: the before/after table from what the device recipe wrote."""

from __future__ import annotations

import gzip
import json


def _module():
    from tests.test_scripts import load

    return load("seed6_speed", "benchmarks")


def _run(wall, prepare, cases):
    seconds = {"device": 1.0, "load": 2.0, "reference": 0.5, "prepare": prepare,
               "sass_plan": 0.0, "prediction": 0.0, "check": 0.0, "timing": 1.0,
               "profile": 0.0, "report": 0.5, "other": 0.0}
    return {"stages": {"wall_s": wall, "seconds": seconds},
            "cases": [{"matrix": m, "backend": b, "params": {}, "outcome": "ok",
                       "measurement": {"samples_ms": samples},
                       "stages": {"seconds": {"prepare": p}}}
                      for m, b, samples, p in cases]}


def test_the_table_compares_stages_backends_and_medians(tmp_path):
    before = _run(100.0, 80.0, [("cant", "cuda-spmv-auto", [1.0, 2.0, 3.0], 60.0),
                                ("cant", "cuda-spmv-merge", [4.0], 20.0)])
    after = _run(40.0, 20.0, [("cant", "cuda-spmv-auto", [2.2], 15.0),
                              ("cant", "cuda-spmv-merge", [4.4], 5.0)])
    for label, run in (("before", before), ("after", after)):
        with gzip.open(tmp_path / f"{label}_results.json.gz", "wt") as fh:
            json.dump(run, fh)
    (tmp_path / "timings.txt").write_text("before_rc 0 before_wall_s 104.2\n"
                                          "after_rc 0 after_wall_s 43.9\n")
    (tmp_path / "env.txt").write_text("date_utc 2026-11-27T21:00:00Z\n")
    text = _module().table(tmp_path)
    assert "| before | 0 | 104.2 |" in text and "| after | 0 | 43.9 |" in text
    assert "| **the run's own clock** | **100.0** | **40.0** |" in text
    assert "| prepare / pack | 80.0 | 20.0 |" in text
    assert "| `cuda-spmv-auto` | 60.0 | 15.0 |" in text
    # medians 2.0 -> 2.2 and 4.0 -> 4.4: both 1.1
    assert "median 1.100, range 1.100-1.100" in text
    assert "in both 2" in text
