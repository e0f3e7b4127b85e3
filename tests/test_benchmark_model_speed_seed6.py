"""``benchmarks/model_speed_seed6.py``: its before/after section of the model-speed page, which
replaces only itself, and says whether the two trees predicted alike."""

from __future__ import annotations


def _module():
    from tests.test_scripts import load

    return load("model_speed_seed6", "benchmarks")


def _side(label, prediction_s, choice_s, predicted):
    machine = {"nproc": 2, "cpu": "x", "load_avg_start": [1.0], "load_avg_end": [1.5]}
    versions = {"commit": "abc", "python": "3.11", "numpy": "2"}
    work = {"cant": {"nnz": 4_007_383, "prediction_s": prediction_s, "cpu_s": 3.0,
                     "choice": {"wall_s": choice_s, "model_s": 1.0, "chosen": ["k", {}],
                                "table": {"k": 0.02}},
                     "predicted_ms": predicted}}
    what_if = {"cant model --no-sass": {"wall_s": 5.0, "cpu_s": 4.0, "peak_rss_mib": 900,
                                        "exit": 0}}
    return {"label": label, "date_utc": "2026-11-28", "machine": machine,
            "versions": versions, "work": work, "what_if": what_if}


def test_the_section_compares_the_trees_and_replaces_only_itself(tmp_path):
    bench = _module()
    before = _side("before", 4.0, 6.0, {"a": 1.0, "b": 2.0})
    after = _side("after", 1.0, 2.0, {"a": 1.0, "b": 2.0})
    section = bench.table(before, after)
    assert "| cant | 4,007,383 | 4.00 + 6.00 s (model 1.00); CPU 3.00 s |" in section
    assert "| 4.00 -> 1.00 s | 6.00 -> 2.00 s | yes (3) |" in section
    assert "| **all six** | | 4.00 + 6.00 = 10.00 s | 1.00 + 2.00 = 3.00 s |" in section
    assert "| cant model --no-sass | 5.00 s (CPU 4.00 s, 900 MiB) |" in section
    # a prediction that moved is shown as such
    moved = _side("after", 1.0, 2.0, {"a": 1.0, "b": 2.5})
    assert "**no**" in bench.table(before, moved)

    page = tmp_path / "model_speed.md"
    page.write_text("# Title\n\nearlier sitting\n\n| row | 1 |\n")
    bench.write_section(page, section)
    first = page.read_text()
    assert first.startswith("# Title\n\n" + bench.BEGIN)
    assert first.endswith("earlier sitting\n\n| row | 1 |\n")
    # written again: the section replaced, the rest as it was
    bench.write_section(page, bench.table(before, moved))
    again = page.read_text()
    assert again.count(bench.BEGIN) == 1 and "**no**" in again
    assert again.endswith("earlier sitting\n\n| row | 1 |\n")
