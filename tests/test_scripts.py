"""The scripts that stay in ``scripts/`` (they write numbers committed READMEs quote), on
hand-made records and committed runs, and the one device driver's recipe table. The readings
that were scripts (the offline model score, the memory floor, the SpMM bounds, the L1 check,
the shortlist) are ``sparsescope model score`` now: ``tests/analyze/test_score_runs.py`` and
``tests/analyze/test_run_readings.py``."""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]



def load(name: str, folder: str = "scripts"):
    """The module ``FOLDER/NAME.py`` (scripts and benchmarks are files, not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_ab_table_on_the_committed_tile_ab():
    ab = load("ab_table")
    runs = ab.medians(ROOT / "results/h200/kernels/followups/2026-11-25-tile-phase2-ab")
    key = next(k for k in runs if k[:2] == ("rmat-29", "cuda-spmv-merge"))
    assert set(runs[key]) == {"A1", "A2", "B1", "B2"}
    line = next(ln for ln in ab.table(runs).splitlines()
                if ln.startswith("rmat-29") and "cuda-spmv-merge" in ln)
    a = sorted([runs[key]["A1"], runs[key]["A2"]])
    b = sorted([runs[key]["B1"], runs[key]["B2"]])
    assert line.endswith(f"{(b[0] + b[1]) / (a[0] + a[1]):6.3f}")  # medians of two: means


def test_spmm_backend_table_on_the_committed_blocktc_run(committed, tmp_path):
    results = committed("results/h200/spmm-tuning/2026-11-25-blocktc-batched/results.json")
    out = tmp_path / "t.json"
    assert load("spmm_backend_table").main([str(results), "--note",
                                               "fill", "--json", str(out)]) == 0
    t = json.loads(out.read_text())
    assert t["backends"][:4] == ["spmm-torch-i32", "spmm-cupy-i32", "spmm-cuda-auto",
                                 "spmm-cuda-blocktc"]
    row = next(r for r in t["rows"] if r["matrix"] == "weights-03" and r["k"] == 32)
    assert row["ms"]["spmm-cuda-blocktc"] == "skipped"          # fill 10 > 8
    assert row["notes"]["spmm-cuda-blocktc[max_fill=64]"]["fill"] == "10.00"
    best = min(row["ms"]["spmm-torch-i32"], row["ms"]["spmm-cupy-i32"])
    assert row["speedup"]["spmm-cuda-auto"] == best / row["ms"]["spmm-cuda-auto"]
    assert len(t["rows"]) == 36 and 0 < t["geomean"]["spmm-cuda-auto"]


def test_spmm_groups_on_the_committed_real_dev_run(committed):
    """--groups: per (k, layout), auto over the best library and its regret, from the cases'
    medians, checked for one group against the table's own rows; and which candidate auto
    kept, as many a group as auto ran there."""
    import math
    import statistics

    script = load("spmm_backend_table")
    results = committed("results/h200/real-dev/2026-11-28-spmm-narrow/spmm_results.json.xz")
    t = script.table(results)
    lines = script.groups_markdown(t).splitlines()
    assert len(lines) == 2 + 4  # k 8 and 64, column- and row-major X
    rows = [r for r in t["rows"]
            if (r["k"], r["layout"]) == (8, "col") and "spmm-cuda-auto" in r["speedup"]]
    speed = [r["speedup"]["spmm-cuda-auto"] for r in rows]
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[:3] == ["8", "col", str(len(rows))]
    assert cells[3] == f"{math.exp(statistics.fmean(map(math.log, speed))):.2f}x"
    assert cells[5] == str(sum(x < 1 for x in speed))
    kept = script.kept_markdown(results).splitlines()
    counts = next(x for x in kept if x.startswith("| 8 | col |")).split("|")[3]
    assert sum(int(part.split()[-1]) for part in counts.split(";")) == len(rows)


def test_spmm_groups_choice_regret_on_the_committed_block_sum_run(committed):
    """The choice's regret: where the run timed the kernel auto kept on its own (here colmajor
    with fit_long, a variant the run names with its options in the order given), that case's
    median stands in for auto's call; k = 64 column-major's largest checked against the
    cases' own medians."""
    import json
    import statistics

    from sparsescope.api import read_runset

    script = load("spmm_backend_table")
    results = committed("results/h200/real-dev/2026-11-28-block-sum/spmm_results.json.xz")
    chosen = script.auto_choices(results)
    label = "spmm-cuda-colmajor[batch=4,fit_long=1,slice_nnz=8]"
    assert chosen[("bp_1200", 64, "col")] == label
    assert script.canonical("spmm-cuda-colmajor[batch=4,slice_nnz=8,fit_long=1]") == label
    assert script.canonical("spmm-cuda-auto") == "spmm-cuda-auto"
    runset = read_runset(results)
    med, picked = {}, {}
    for c in runset.cases:
        if (int(c.params.k), c.params.layout) != (64, "col") or c.outcome != "ok":
            continue
        med.setdefault(c.matrix, {})[script.canonical(c.backend)] = \
            statistics.median(c.measurement.samples_ms)
        if c.backend == "spmm-cuda-auto":
            params = json.loads(c.notes["selected_params"])
            picked[c.matrix] = c.notes["selected"] + (
                "[" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) + "]"
                if params else "")
    regret = {}
    for matrix, ms in med.items():
        own = [v for b, v in ms.items() if b.startswith("spmm-cuda") and b != "spmm-cuda-auto"]
        if "spmm-cuda-auto" in ms and own:
            regret[matrix] = ms.get(picked[matrix], ms["spmm-cuda-auto"]) / min(own) - 1
    assert picked["bp_1200"] == label and label in med["bp_1200"]   # its own case found
    worst = max(regret, key=regret.get)
    line = next(x for x in script.groups_markdown(script.table(results), chosen).splitlines()
                if x.startswith("| 64 | col |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[9] == f"{100 * regret[worst]:+.1f} % ({worst})"
    assert cells[8] == f"{100 * statistics.median(regret.values()):+.1f} %"


def test_spmm_pair_on_the_committed_block_sum_run(committed):
    """--pair A B: per case where both ran, each median in us and B / A, checked for one case
    against its samples; --pair-note cut_row_sum keeps the cases where A cuts rows (rowgroup's
    note not "none"), and the summary counts them."""
    import statistics

    from sparsescope.api import read_runset

    script = load("spmm_backend_table")
    results = committed("results/h200/real-dev/2026-11-28-block-sum/spmm_results.json.xz")
    a = "spmm-cuda-rowgroup"
    b = "spmm-cuda-rowgroup[block_sum=1,slice_nnz=8]"
    text = script.pair_markdown(results, a, b, "cut_row_sum")
    cases = {(c.matrix, int(c.params.k), c.params.layout, c.backend): c
             for c in read_runset(results).cases if c.backend in (a, b) and c.outcome == "ok"}
    cut = {key[:3] for key, c in cases.items()
           if key[3] == a and c.notes["cut_row_sum"] != "none" and key[:3] + (b,) in cases}
    rows = [x for x in text.splitlines() if x.startswith("| ") and not x.startswith("| matrix")]
    assert cut and len(rows) == len(cut) and f"over {len(cut)} cases" in text
    matrix, k, layout = sorted(cut)[0]
    ta = 1000 * statistics.median(cases[(matrix, k, layout, a)].measurement.samples_ms)
    tb = 1000 * statistics.median(cases[(matrix, k, layout, b)].measurement.samples_ms)
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[:3] == [matrix, str(k), layout]
    assert cells[3] == f"{ta:.2f}" and cells[5] == f"{tb:.2f}" and cells[7] == f"{tb / ta:.3f}"
    everything = script.pair_markdown(results, a, b)
    assert len([x for x in everything.splitlines() if x.startswith("| ")]) > len(rows) + 1
    assert script.pair_markdown(results, a, "no-such-backend").startswith("No case")
    assert script.pair_markdown(results, a, b, "kernel=true>").startswith("No case")


def test_spmm_dense_break_even_on_the_committed_weights_run(committed):
    """--dense 0.8: per (k, layout) over the layers at least 80 % sparse (the generated "80 %"
    layers, their nonzeros rounded up, included), auto / dense FP32 checked for weights-20 at
    k = 256 row-major against the two cases' own medians."""
    import statistics

    from sparsescope.api import read_runset

    script = load("spmm_backend_table")
    runset = read_runset(committed(
        "results/h200/spmm-break-even/2026-11-28-weights/results.json.xz"))
    lines = script.dense_markdown(runset, 0.8).splitlines()
    rows = {tuple(c.strip() for c in x.strip("|").split("|")[:2]): x for x in lines[4:]}
    assert set(rows) == {("32", "row"), ("32", "col"), ("256", "row"), ("256", "col")}
    cells = [c.strip() for c in rows[("256", "row")].strip("|").split("|")]
    assert cells[2] == "16"  # 4 sides x (80, 90, 95, 98 %)
    med = {c.backend: statistics.median(c.measurement.samples_ms)
           for c in runset.cases if c.matrix == "weights-20"
           and (int(c.params.k), c.params.layout) == (256, "row")}
    ratio = med["spmm-cuda-auto"] / med["spmm-cublas-dense[math=fp32]"]
    assert cells[4] == f"{ratio:.2f} (weights-20)"  # the highest ratio of the group
    assert script.dense_markdown(runset, 0.99).splitlines()[4:] == []  # none 99 % sparse


def test_selection_compare_on_the_committed_held_out_runs(committed):
    """The short-piece run against the run before it, on the 66 held-out matrices: rmat-29's
    speedup is read from each run's own times (best library / auto). The two runs' selection
    tables (H200, 2026-11-25; the runs themselves were superseded and left results/ on
    2026-11-27) are kept as test data."""
    compare = load("selection_compare")
    base = "tests/fixtures/selection"
    before = compare.load(committed(f"{base}/h200-population-held-out.selection.json"))
    now = compare.load(committed(f"{base}/h200-short-pieces-held-out.selection.json"))
    assert compare.speedup(before["rmat-29"]) == pytest.approx(
        before["rmat-29"]["best_lib_us"] / before["rmat-29"]["auto_us"])
    assert compare.speedup(before["rmat-29"]) < 1.0 < compare.speedup(now["rmat-29"])
    assert compare.choice(now["rmat-29"]) == (
        "cuda-spmv-sell[long_row=64,minb=8,tpr=4,unroll=2]")
    text = compare.compare(before, now, changed_only=True)
    assert "| rmat-29 | cuda-spmv-merge | 0.89x |" in text
    assert "| cant |" not in text and "| banded-05 |" not in text  # unchanged choices left out
    assert "slower than cuSPARSE on 2 (powerlaw-29, rmat-29)" in text
    assert "slower than cuSPARSE on 0;" in text


def test_hot_set_reach_rows_by_hand():
    """Column 0 gathered 50 times, column 9 30 times, 30 others once (110 gathers), 4 SMs."""
    reach = load("hot_set_reach")
    counts = np.ones(32, dtype=np.int64)
    counts[[0, 9]] = [50, 30]
    rows = reach.reach_rows("m", counts, entries_per_sm=1, sms=4, clusters=[1, 2])
    # one SM each: column 0 (50 of 110), 4 copies of its sector; two SMs a copy: 0 and 9
    assert rows == ["| m | 1 | 1 | 45.5 % | 0.00 | 4 | 0.00 | 0.00 |",
                    "| m | 2 | 2 | 72.7 % | 0.00 | 2 | 0.00 | 0.00 |"]


def test_dsmem_probe_grid_and_rate_arithmetic():
    probe = load("dsmem_gather_probe")
    # 132 SMs x 2 blocks = 264: a whole number of clusters of 1, 2, 4 and 8
    assert [probe.grid_for(132, c) for c in (1, 2, 4, 8)] == [264, 264, 264, 264]
    assert probe.grid_for(132, 16) == 256 and probe.grid_for(3, 8) == 8
    # 264 blocks x 1,024 threads x 256 loads in 1 ms: 69.2 G loads/s
    assert probe.rate_gloads_s(264, 256, 1.0) == pytest.approx(69.206016)


def test_dsmem_probe_source_compiles_for_hopper():
    """The probe's source builds for sm_90 at every cluster size it launches, eight
    distributed-shared-memory loads in flight (skipped without a CUDA compiler)."""
    from sparsescope.sass.extract import compile_cuda, iter_kernels
    from sparsescope.sass.kernel_shape import sass_tools_available

    if not sass_tools_available():
        pytest.skip("no CUDA compiler and cuobjdump")
    probe = load("dsmem_gather_probe")
    for cluster, owners in probe.CONFIGS:
        compiled = compile_cuda(probe.SOURCE.read_text(), "sm_90", options=(
            "-std=c++17", f"-DCLUSTER={cluster}", f"-DRANKS={owners}"))
        (entry, listing), = list(iter_kernels(compiled.cubin))
        texts = [i.text for i in listing.instructions]
        assert entry.name == "dsmem_gather"
        assert sum(t.startswith("LD.E ") for t in texts) == 8
        assert sum("UCGABAR_WAIT" in t for t in texts) == 2  # fill, then before exit




# -- the device driver ------------------------------------------------------------------------
DEVICE = ROOT / "scripts" / "device.sh"
#: Every recipe of the driver (the fifteen device_*.sh scripts' and the ones added since).
RECIPES = ("gpu-tests", "kernels", "model", "seed6", "seed6-speed", "profile", "profile-cases",
           "ab-kernel", "finish-ab", "ops", "spmm-blocktc", "spmm-population", "spmm-real-dev",
           "sweep",
           "sweep-gpus", "sweep-scale", "latency-probe", "spmm-interleaved",
           "timing-after-profiler", "bench")


def _device(*args: str, env: dict | None = None):
    import os
    import subprocess

    return subprocess.run(["bash", str(DEVICE), *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})})


def test_device_driver_parses_and_lists_every_recipe():
    import subprocess

    assert subprocess.run(["bash", "-n", str(DEVICE)]).returncode == 0
    listed = _device("list")
    assert listed.returncode == 0
    for recipe in RECIPES:
        assert f"\n  {recipe} " in listed.stdout or f"\n  {recipe}\n" in listed.stdout, recipe
        assert f"recipe_{recipe.replace('-', '_')}() {{" in DEVICE.read_text(), recipe
    assert "Writes" in listed.stdout


def test_device_driver_refuses_an_unknown_recipe():
    r = _device("device_kernels")
    assert r.returncode == 2 and "unknown recipe" in r.stderr and "gpu-tests" in r.stderr


def test_device_gpu_tests_recipe_runs_the_gpu_tests_into_out():
    """The recipe the lead runs on the lent GPU: pytest -m gpu, its log under $OUT."""
    text = DEVICE.read_text()
    body = text[text.index("recipe_gpu_tests() {"):text.index("recipe_kernels() {")]
    assert "$PY -m pytest tests -m gpu" in body and '"$OUT/pytest_gpu.log"' in body
    assert 'return "$rc"' in body


def test_device_driver_calls_only_what_exists():
    """Every ``scripts/X`` the driver runs is there; no recipe names a removed script."""
    import re

    text = DEVICE.read_text()
    for name in set(re.findall(r"scripts/([\w.]+\.(?:py|sh))", text)):
        assert (ROOT / "scripts" / name).exists(), name
    assert not list((ROOT / "scripts").glob("device_*.sh"))


def test_spmm_latency_probe_times_a_case_flushed_and_warm(tmp_path, capsys):
    """``benchmarks/spmm_latency_probe.py`` on the CPU backend: each case checked and timed
    twice (L2 flushed and warm), a GPU backend without a GPU reported as skipped, the rows
    kept as JSON; ``--once`` runs the gate alone."""
    import scipy.sparse as sp

    from sparsescope.matrices.io import write_matrix

    path = write_matrix(sp.random(40, 30, density=0.2, format="csr", random_state=1),
                        tmp_path / "m.npz")
    probe = load("spmm_latency_probe", "benchmarks")
    out = tmp_path / "probe.json"
    assert probe.main(["--matrix", str(path), "--k", "3", "--layout", "col", "--backend",
                       "spmm-scipy-cpu", "--backend", "spmm-cuda-ell[tile_cols=2]",
                       "--repeats", "2", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    cpu, ell = rows
    assert cpu["outcome"] == "ok" and cpu["flushed_us"] > 0 and cpu["warm_us"] > 0
    assert ell["backend"] == "spmm-cuda-ell[tile_cols=2]" and ell["outcome"] == "skipped"
    table = capsys.readouterr().out
    assert "| m | 3 | col | spmm-scipy-cpu |" in table and "| skipped |" in table
    assert probe.main(["--matrix", str(path), "--k", "3", "--layout", "row", "--backend",
                       "spmm-scipy-cpu", "--once", "--json", str(out)]) == 0
    assert "flushed_us" not in json.loads(out.read_text())[0]


def test_spmm_interleaved_alternates_two_backends_and_sums_up_the_rounds(tmp_path, capsys):
    """``benchmarks/spmm_interleaved.py``: the rounds' ratios by hand; two CPU backends timed
    in alternation on one case (each round one timing of each, both checked first); a GPU
    backend without a GPU named as skipped, not timed."""
    import scipy.sparse as sp

    from sparsescope.matrices.io import write_matrix

    script = load("spmm_interleaved", "benchmarks")
    got = script.round_ratios([10, 12, 9, 11], [10, 10, 10, 10])
    assert got == pytest.approx({
        "ratio_balanced": (0.95 * 1.15) ** 0.5, "ratio_a_first": 0.95, "ratio_b_first": 1.15,
        "second_slower": (1.15 / 0.95) ** 0.5, "ratio_low": 0.9, "ratio_high": 1.2,
        "b_faster": 2, "rounds": 4})
    assert round(got["ratio_balanced"], 3) == 1.045 and round(got["second_slower"], 3) == 1.100
    one = script.round_ratios([12], [10])
    assert one["ratio_balanced"] == one["ratio_a_first"] == 1.2 and one["second_slower"] == 1
    path = write_matrix(sp.random(40, 30, density=0.2, format="csr", random_state=1),
                        tmp_path / "m.npz")
    out = tmp_path / "rounds.json"
    assert script.main(["--matrix", str(path), "--k", "3", "--layout", "row", "--a",
                        "spmm-scipy-cpu", "--b", "spmm-scipy-cpu", "--rounds", "3",
                        "--repeats", "2", "--json", str(out)]) == 0
    row, = json.loads(out.read_text())
    assert row["outcome"] == "ok" and row["rounds"] == 3
    assert len(row["a_ms"]) == len(row["b_ms"]) == 3 and min(row["a_ms"] + row["b_ms"]) > 0
    ratios = [a / b for a, b in zip(row["a_ms"], row["b_ms"], strict=True)]
    first = statistics.median(ratios[0::2])   # rounds 0 and 2: A first
    assert row["ratio_a_first"] == pytest.approx(first)
    assert row["ratio_balanced"] == pytest.approx((first * ratios[1]) ** 0.5)
    assert (row["ratio_low"], row["ratio_high"]) == pytest.approx((min(ratios), max(ratios)))
    assert "| m | 3 | row |" in capsys.readouterr().out
    assert script.main(["--table", str(out)]) == 0   # the same rows, printed again
    again = capsys.readouterr().out
    assert "| m | 3 | row |" in again and f"| {row['ratio_balanced']:.3f} |" in again
    assert script.main(["--matrix", str(path), "--k", "3", "--layout", "row", "--a",
                        "spmm-scipy-cpu", "--b", "spmm-cuda-ell", "--rounds", "2",
                        "--json", str(out)]) == 0
    row, = json.loads(out.read_text())
    assert row["outcome"].startswith("b skipped") and "a_ms" not in row


def test_timing_after_profiler_reads_a_sequence_by_parity(tmp_path, capsys):
    """``benchmarks/timing_after_profiler.py``: the parity of a sequence by hand; the modes
    change the protocol's step after the samples only inside their block; a CPU backend timed
    in each mode (no profiler there: the three rows are timings of one kind); a GPU backend
    without a GPU named as skipped."""
    import scipy.sparse as sp

    from sparsescope.matrices.io import write_matrix
    from sparsescope.timing import cuda as cuda_timing

    script = load("timing_after_profiler", "benchmarks")
    assert script.parity([6, 5, 6, 5]) == pytest.approx(
        {"median_us": 5.5, "odd_over_even": 5 / 6, "low_us": 5, "high_us": 6})
    assert script.parity([4.0])["odd_over_even"] == 1.0
    profile = cuda_timing.kernel_breakdown
    with script.breakdown_mode("unsettled"):
        assert cuda_timing.SETTLE_LAUNCHES == 0 and cuda_timing.kernel_breakdown is profile
    with script.breakdown_mode("none"):
        assert cuda_timing.kernel_breakdown(lambda: None, synchronize=lambda: None) == ()
        assert cuda_timing.SETTLE_LAUNCHES == 0
    assert cuda_timing.SETTLE_LAUNCHES == 3 and cuda_timing.kernel_breakdown is profile
    with pytest.raises(ValueError, match="mode must be one of protocol, unsettled, none"):
        with script.breakdown_mode("sometimes"):
            pass
    path = write_matrix(sp.random(40, 30, density=0.2, format="csr", random_state=1),
                        tmp_path / "m.npz")
    out = tmp_path / "after.json"
    assert script.main(["--matrix", str(path), "--k", "3", "--layout", "row", "--backend",
                        "spmm-scipy-cpu", "--backend", "spmm-cuda-ell", "--timings", "3",
                        "--repeats", "2", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["mode"] for r in rows[:3]] == ["protocol", "unsettled", "none"]
    for r in rows[:3]:
        seq = r["timings_us"]
        assert len(seq) == 3 and min(seq) > 0
        assert r["odd_over_even"] == pytest.approx(seq[1] / statistics.median(seq[0::2]))
    assert rows[3]["backend"] == "spmm-cuda-ell" and rows[3]["outcome"].startswith("skipped")
    table = capsys.readouterr().out
    assert "| m | 3 | row | `spmm-scipy-cpu` | unsettled |" in table


def test_timing_placements_separates_the_two_spreads(tmp_path, capsys):
    """``benchmarks/timing_placements.py``: the spreads by hand; a CPU backend prepared twice
    and timed in three rotated rounds."""
    import scipy.sparse as sp

    from sparsescope.matrices.io import write_matrix

    script = load("timing_placements", "benchmarks")
    got = script.spreads([[10, 11], [12, 12.6]])
    assert got == pytest.approx({"medians_us": [10.5, 12.3], "median_us": 11.4,
                                 "within": 1.075, "between": 12.3 / 10.5})
    path = write_matrix(sp.random(40, 30, density=0.2, format="csr", random_state=1),
                        tmp_path / "m.npz")
    out = tmp_path / "placements.json"
    assert script.main(["--matrix", str(path), "--k", "3", "--layout", "row", "--backend",
                        "spmm-scipy-cpu", "--preparations", "2", "--rounds", "3",
                        "--repeats", "2", "--json", str(out)]) == 0
    row, = json.loads(out.read_text())
    assert row["outcome"] == "ok" and [len(t) for t in row["timings_us"]] == [3, 3]
    assert row["between"] == pytest.approx(max(row["medians_us"]) / min(row["medians_us"]))
    assert "| m | 3 | row | `spmm-scipy-cpu` |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        script.main(["--matrix", str(path), "--k", "3", "--layout", "row", "--backend",
                     "spmm-scipy-cpu", "--rounds", "0"])


def test_timing_state_flips_times_two_backends_in_cycles(tmp_path, capsys):
    """``benchmarks/timing_state_flips.py``: odd / even by hand; two CPU backends timed in
    cycles with each chosen kind of work between them (a preparation kept alive, the float64
    check); a GPU backend without a GPU named, not timed."""
    import scipy.sparse as sp

    from sparsescope.matrices.io import write_matrix

    script = load("timing_state_flips", "benchmarks")
    assert script.odd_over_even([6, 5, 6, 5]) == pytest.approx(5 / 6)
    assert script.odd_over_even([4.0]) == 1.0
    path = write_matrix(sp.random(40, 30, density=0.2, format="csr", random_state=1),
                        tmp_path / "m.npz")
    out = tmp_path / "flips.json"
    assert script.main(["--matrix", str(path), "--k", "3", "--layout", "row", "--a",
                        "spmm-scipy-cpu", "--b", "spmm-scipy-cpu", "--cycles", "3",
                        "--repeats", "2", "--after", "none", "--after", "a-prepare",
                        "--after", "a-check", "--state-halves", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["after_each_cycle"] for r in rows] == ["none", "a-prepare", "a-check"]
    assert all(r["state_halves"] for r in rows)
    for r in rows:
        assert len(r["a_us"]) == len(r["b_us"]) == 3 and min(r["a_us"] + r["b_us"]) > 0
        assert r["a_odd_over_even"] == pytest.approx(
            r["a_us"][1] / statistics.median(r["a_us"][0::2]))
    assert "| m | 3 | row | a-check |" in capsys.readouterr().out
    assert script.main(["--matrix", str(path), "--k", "3", "--layout", "row", "--a",
                        "spmm-cuda-ell", "--b", "spmm-scipy-cpu", "--json", str(out)]) == 0
    row, = json.loads(out.read_text())
    assert row["outcome"].startswith("spmm-cuda-ell: skipped")


def test_spmm_against_an_earlier_run(committed):
    """--against: a run against itself changes nothing (new / old 1.000 for auto and for the
    library, the library's time moved 0.0 % in every case), and lists the block-sum run's
    ten cases below 1.0x (1 / 1 / 2 / 6 by group, as its README says), each with the same
    ratio twice."""
    script = load("spmm_backend_table")
    results = committed("results/h200/real-dev/2026-11-28-block-sum/spmm_results.json.xz")
    lines = script.against_markdown(results, results).splitlines()
    groups = [ln.split(" | ") for ln in lines[2:6]]
    assert [(g[0].strip("| "), g[1], g[4], g[6]) for g in groups] == [
        ("8", "col", "1", "1"), ("8", "row", "1", "1"), ("64", "col", "2", "2"),
        ("64", "row", "6", "6")]
    assert all(g[7] == "1.000" and g[8] == "1.000" and g[9] == "0.0 %"
               and g[10].rstrip(" |") == "0.0 %" for g in groups)
    below = [ln.split(" | ") for ln in lines[9:]]
    assert len(below) == 10 and all(b[3] == b[4] and float(b[3].rstrip("x")) < 1 for b in below)
    assert ["Pd", "8", "col", "0.948x"] == [below[0][0].strip("| "), *below[0][1:4]]
