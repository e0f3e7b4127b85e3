"""Every backend of an SpMM run side by side: per (matrix, k, layout), each backend's median
ms, and each own backend's speedup over the best library configuration (the fastest sparse
library case of the same matrix, k and layout: ``is_sparse_library``, never the dense peer);
the notes named by ``--note`` (e.g. ``fill``) beside them; a skipped or failed case shows its
outcome.

    python scripts/spmm_backend_table.py RESULTS [--note fill] [--json FILE] [--groups]

``--groups``: instead, issue 37 item 3's summary per (k, layout): ``spmm-cuda-auto`` over the
best library (geomean, lowest, cases below 1.0x) and auto's regret against the fastest other
own kernel, ``auto / fastest own - 1`` (median, largest), and the regret of its choice: the
same with the chosen kernel's own case of the run in place of auto's call, where the run timed
that kernel on its own (else auto's call), so that two timings of one kernel, which differ by
up to 10 % on a 5 us call, do not count as a wrong choice; then which candidate auto kept (its
selection table's fastest trial, else its fastest prediction) and, per candidate with options,
its trial time over its plain kernel's (median, range) where both were timed.

``--dense S``: instead, issue 37 item 4's summary per (k, layout) over the matrices at least S
sparse (1 - nnz / (rows x cols), to 0.05 %: a generated "80 %" layer rounds its nonzeros up):
``spmm-cuda-auto``'s time over the dense cuBLAS peer's in FP32 and in TF32
(``registry.is_dense``; geomean, highest, cases where auto is not faster), and auto over the
best sparse library (geomean, lowest, below 1.0x).

``--pair A B``: instead, two backends of one run side by side, per (matrix, k, layout) where
both were timed: each one's median (us) and kernel instance, and B / A; then the geomean of
B / A and how many cases B was faster (below 0.98) or slower (above 1.02). ``--pair-note N``
keeps only the cases whose A has note N not equal to ``none`` (e.g. ``long_rows``), or, as
``N=V``, note N ending with V (e.g. ``kernel=true>``: the scanned instance).

``--against OLD``: instead, this run against an earlier one (OLD, e.g. before a change) over
the cases both timed: per (k, layout), auto over the best library in each (geomean, cases
below 1.0x), and the geomean of new / old of auto's time and of the best library's (the
library's ratio is the two runs' drift, auto's less it is the change), and how far the
library's time moved a case (``max(new / old, old / new) - 1``: median, largest; the same
library code timed twice, so the runs' noise a case); then every case below 1.0x in either
run, with both.

RESULTS is a run's or a sweep's ``results.json`` (or ``.json.xz``, ``.json.gz``).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

from sparsescope.api import is_dense, is_own, is_sparse_library, read_runset


def table(path: Path, notes: tuple[str, ...] = ()) -> dict:
    """{"backends": [...], "rows": [{matrix, k, layout, ms: {b: ms|outcome}, speedup: {b: x},
    notes: {b: {note: value}}}], "geomean": {own backend: geomean speedup}}."""
    runset = read_runset(path)
    groups: dict[tuple, dict] = defaultdict(dict)
    backends: list[str] = []
    for c in runset.cases:
        if c.op != "spmm":
            continue
        key = (c.matrix, int(c.params.k), str(c.params.layout))
        ok = c.outcome == "ok" and c.measurement is not None and c.measurement.samples_ms
        groups[key][c.backend] = (float(statistics.median(c.measurement.samples_ms)) if ok
                                  else c.outcome, {n: c.notes.get(n, "") for n in notes})
        if c.backend not in backends:
            backends.append(c.backend)
    rows, ratios = [], defaultdict(list)
    for (matrix, k, layout), by in sorted(groups.items()):
        lib = [v[0] for b, v in by.items() if is_sparse_library(b) and isinstance(v[0], float)]
        best = min(lib) if lib else None
        speedup = {}
        for b, (ms, _) in by.items():
            if is_own(b) and best and isinstance(ms, float):
                speedup[b] = best / ms
                ratios[b].append(math.log(best / ms))
        rows.append({"matrix": matrix, "k": k, "layout": layout,
                     "ms": {b: v[0] for b, v in by.items()}, "speedup": speedup,
                     "notes": {b: v[1] for b, v in by.items() if any(v[1].values())}})
    geomean = {b: math.exp(sum(v) / len(v)) for b, v in ratios.items()}
    return {"backends": backends, "rows": rows, "geomean": geomean, "source": str(path)}


def markdown(t: dict, notes: tuple[str, ...] = ()) -> str:
    own = [b for b in t["backends"] if is_own(b)]
    head = ["matrix", "k", "layout", *t["backends"], *(f"{b} x" for b in own),
            *(f"{n} ({b})" for b in own for n in notes)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in t["rows"]:
        cells = [r["matrix"], str(r["k"]), r["layout"]]
        for b in t["backends"]:
            v = r["ms"].get(b, "-")
            cells.append(f"{v:.4f}" if isinstance(v, float) else str(v))
        cells += [f"{r['speedup'][b]:.3f}" if b in r["speedup"] else "-" for b in own]
        cells += [r["notes"].get(b, {}).get(n, "") or "-" for b in own for n in notes]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"- {b}: geomean {g:.3f}x over the best library on "
              f"{sum(b in r['speedup'] for r in t['rows'])} cases"
              for b, g in sorted(t["geomean"].items())]
    return "\n".join(lines) + "\n"


AUTO = "spmm-cuda-auto"


def canonical(label: str) -> str:
    """A backend label with its options sorted by name, as :func:`auto_choices` names them:
    ``b[slice_nnz=8,fit_long=1]`` -> ``b[fit_long=1,slice_nnz=8]`` (a run names a variant as
    it was given)."""
    name, bracket, inner = label.partition("[")
    if not bracket:
        return label
    return f"{name}[{','.join(sorted(inner.rstrip(']').split(',')))}]"


def groups_markdown(t: dict, chosen: dict[tuple, str] | None = None) -> str:
    """Per (k, layout) of :func:`table`'s rows with auto and a library timed: auto over the best
    library (geomean, lowest and where, below 1.0x), auto's regret against the fastest own
    kernel other than itself (median, largest and where), and its choice's regret: ``chosen``
    ((matrix, k, layout) -> the label auto kept, :func:`auto_choices`) names the case timed in
    place of auto's where the run has it."""
    chosen = chosen or {}
    by: dict[tuple, list] = defaultdict(list)
    for r in t["rows"]:
        ms = r["ms"]
        auto = ms.get(AUTO)
        own = [v for b, v in ms.items() if is_own(b) and b != AUTO and isinstance(v, float)]
        if AUTO in r["speedup"] and own and isinstance(auto, float):
            named = {canonical(b): v for b, v in ms.items()}
            alone = named.get(chosen.get((r["matrix"], r["k"], r["layout"]), ""))
            choice = alone if isinstance(alone, float) else auto
            by[(r["k"], r["layout"])].append((r["speedup"][AUTO], auto / min(own) - 1,
                                              r["matrix"], choice / min(own) - 1))
    lines = ["| k | layout | cases | auto over the best library: geomean | lowest | below 1.0x "
             "| auto's regret: median | largest | its choice's regret: median | largest |",
             "|---:|---|---:|---:|---|---:|---:|---|---:|---|"]
    for (k, layout), cases in sorted(by.items()):
        speed = [c[0] for c in cases]
        low = min(cases, key=lambda c: c[0])
        worst = max(cases, key=lambda c: c[1])
        worst_choice = max(cases, key=lambda c: c[3])
        lines.append(
            f"| {k} | {layout} | {len(cases)} | "
            f"{_geomean(speed):.2f}x | "
            f"{low[0]:.2f}x ({low[2]}) | {sum(x < 1 for x in speed)} | "
            f"{100 * statistics.median(c[1] for c in cases):+.1f} % | "
            f"{100 * worst[1]:+.1f} % ({worst[2]}) | "
            f"{100 * statistics.median(c[3] for c in cases):+.1f} % | "
            f"{100 * worst_choice[3]:+.1f} % ({worst_choice[2]}) |")
    return "\n".join(lines) + "\n"


def auto_choices(path: Path) -> dict[tuple, str]:
    """(matrix, k, layout) -> the label of the kernel ``spmm-cuda-auto`` kept (its ``selected``
    backend with its ``selected_params``, e.g. ``spmm-cuda-rowgroup[vec=2]``), as the run's own
    cases of that kernel are named."""
    out = {}
    for c in read_runset(path).cases:
        if c.backend == AUTO and c.outcome == "ok" and c.notes.get("selected"):
            params = json.loads(c.notes.get("selected_params") or "{}")
            inner = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
            label = f"{c.notes['selected']}[{inner}]" if inner else c.notes["selected"]
            out[(c.matrix, int(c.params.k), str(c.params.layout))] = label
    return out


def kept_markdown(path: Path) -> str:
    """Per (k, layout): the candidates ``spmm-cuda-auto`` kept (label: cases), and for each
    candidate with options the ratio of its trial time to its plain kernel's in the same
    selection table (median, lowest, highest, cases)."""
    kept: dict[tuple, Counter] = defaultdict(Counter)
    ratios: dict[tuple, list] = defaultdict(list)
    for c in read_runset(path).cases:
        if c.backend != AUTO or c.outcome != "ok" or "selection_table" not in c.notes:
            continue
        key = (int(c.params.k), str(c.params.layout))
        table = json.loads(c.notes["selection_table"])
        timed = [r for r in table if r.get("trial_ms")]
        pool = timed or [r for r in table if r.get("predicted_ms")]
        field = "trial_ms" if timed else "predicted_ms"
        if pool:
            kept[key][min(pool, key=lambda r: r[field])["label"]] += 1
        plain = {r["backend"]: r["trial_ms"] for r in timed if r["label"] == r["backend"]}
        for r in timed:
            if r["label"] != r["backend"] and r["backend"] in plain:
                kernel = r["label"].split("[")[0]
                ratios[key + (kernel,)].append(r["trial_ms"] / plain[r["backend"]])
    lines = ["| k | layout | candidates auto kept (cases) |", "|---:|---|---|"]
    for (k, layout), counts in sorted(kept.items()):
        lines.append(f"| {k} | {layout} | " + "; ".join(
            f"`{label}` {n}" for label, n in counts.most_common()) + " |")
    lines += ["", "| k | layout | kernel | its variant's trial / its plain trial: median | "
              "lowest | highest | cases |", "|---:|---|---|---:|---:|---:|---:|"]
    for (k, layout, kernel), v in sorted(ratios.items()):
        lines.append(f"| {k} | {layout} | `{kernel}[...]` | {statistics.median(v):.2f} | "
                     f"{min(v):.2f} | {max(v):.2f} | {len(v)} |")
    return "\n".join(lines) + "\n"


def _geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def dense_markdown(results, min_sparsity: float) -> str:
    """Per (k, layout), over the matrices at least ``min_sparsity`` sparse: auto / dense FP32
    and auto / dense TF32 (geomean, highest and where, cases >= 1: auto not faster), and auto
    over the best sparse library (geomean, lowest, below 1.0x). ``results``: a results file,
    or a run set already read (``read_runset``)."""
    runset = read_runset(results) if isinstance(results, (str, Path)) else results
    shapes = {m.name: m.stats for m in runset.matrices}
    by: dict[tuple, dict] = defaultdict(dict)
    for c in runset.cases:
        ok = c.op == "spmm" and c.outcome == "ok" and c.measurement is not None
        st = shapes.get(c.matrix)
        if not ok or st is None or 1 - st.nnz / (st.rows * st.cols) < min_sparsity - 5e-4:
            continue
        role = ("fp32" if c.notes.get("precision", "").split(" ")[0] != "TF32" else "tf32") \
            if is_dense(c.backend) else "lib" if is_sparse_library(c.backend) else \
            "auto" if c.backend == AUTO else None
        if role:
            ms = float(statistics.median(c.measurement.samples_ms))
            group = by[(int(c.params.k), str(c.params.layout))].setdefault(c.matrix, {})
            group[role] = min(ms, group.get(role, math.inf))
    lines = [f"Matrices at least {100 * min_sparsity:.0f} % sparse.", "",
             "| k | layout | matrices | auto / dense FP32: geomean | highest | auto not faster "
             "| auto / dense TF32: geomean | highest | auto not faster | auto over the best "
             "library: geomean | lowest | below 1.0x |",
             "|---:|---|---:|---:|---|---:|---:|---|---:|---:|---|---:|"]
    for (k, layout), matrices in sorted(by.items()):
        cells = [str(k), layout]
        full = {m: v for m, v in matrices.items() if {"auto", "fp32", "tf32", "lib"} <= set(v)}
        cells.append(str(len(full)))
        if not full:
            continue
        for math_mode in ("fp32", "tf32"):
            ratio = {m: v["auto"] / v[math_mode] for m, v in full.items()}
            worst = max(ratio, key=ratio.get)
            cells += [f"{_geomean(list(ratio.values())):.2f}", f"{ratio[worst]:.2f} ({worst})",
                      str(sum(r >= 1 for r in ratio.values()))]
        speed = {m: v["lib"] / v["auto"] for m, v in full.items()}
        low = min(speed, key=speed.get)
        cells += [f"{_geomean(list(speed.values())):.2f}x", f"{speed[low]:.2f}x ({low})",
                  str(sum(x < 1 for x in speed.values()))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _keeps(notes: dict[str, str], condition: str) -> bool:
    """``--pair-note``: ``N`` -> note N present and not ``none``; ``N=V`` -> note N ends
    with V."""
    name, _, value = condition.partition("=")
    found = notes.get(name, "none")
    return found.endswith(value) if value else found != "none"


def pair_markdown(results, a: str, b: str, condition: str = "") -> str:
    """Backends ``a`` and ``b`` of one run side by side (module docstring: ``--pair``)."""
    runset = read_runset(results) if isinstance(results, (str, Path)) else results
    by: dict[tuple, dict] = defaultdict(dict)
    for c in runset.cases:
        if c.op == "spmm" and c.backend in (a, b) and c.outcome == "ok" and c.measurement:
            by[(c.matrix, int(c.params.k), str(c.params.layout))][c.backend] = (
                1000 * float(statistics.median(c.measurement.samples_ms)), c.notes)
    lines = [f"| matrix | k | layout | {a} (us) | its kernel | {b} (us) | its kernel | B / A |",
             "|---|---:|---|---:|---|---:|---|---:|"]
    ratios = []
    for (matrix, k, layout), both in sorted(by.items()):
        if len(both) < 2 or (condition and not _keeps(both[a][1], condition)):
            continue
        (ta, na), (tb, nb) = both[a], both[b]
        ratios.append(tb / ta)
        lines.append(f"| {matrix} | {k} | {layout} | {ta:.2f} | `{na.get('kernel', '')}` | "
                     f"{tb:.2f} | `{nb.get('kernel', '')}` | {tb / ta:.3f} |")
    if not ratios:
        return f"No case where both {a} and {b} were timed" + \
            (f" and {condition} holds.\n" if condition else ".\n")
    lines += ["", f"B / A over {len(ratios)} cases: geomean {_geomean(ratios):.3f}, lowest "
              f"{min(ratios):.3f}, highest {max(ratios):.3f}; B faster (< 0.98) in "
              f"{sum(r < 0.98 for r in ratios)}, slower (> 1.02) in "
              f"{sum(r > 1.02 for r in ratios)}."]
    return "\n".join(lines) + "\n"


def against_markdown(new, old) -> str:
    """This run against an earlier one (module docstring: ``--against``)."""
    rows = {}
    for label, path in (("old", old), ("new", new)):
        for r in table(path)["rows"]:
            best = [v for b, v in r["ms"].items() if is_sparse_library(b) and isinstance(v, float)]
            if AUTO in r["speedup"] and best:
                rows.setdefault((r["k"], r["layout"], r["matrix"]), {})[label] = (
                    r["speedup"][AUTO], r["ms"][AUTO], min(best))
    both = {key: v for key, v in rows.items() if len(v) == 2}
    lines = ["| k | layout | cases | old: auto over the best library | below 1.0x | new | below "
             "1.0x | auto new / old: geomean | best library new / old: geomean | the library's "
             "change a case: median | largest |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k, layout in sorted({key[:2] for key in both}):
        group = [v for key, v in both.items() if key[:2] == (k, layout)]
        old_x = [v["old"][0] for v in group]
        new_x = [v["new"][0] for v in group]
        # the library's code is the same in both runs: how far its time moves is the noise
        moved = [max(v["new"][2] / v["old"][2], v["old"][2] / v["new"][2]) - 1 for v in group]
        lines.append(f"| {k} | {layout} | {len(group)} | {_geomean(old_x):.3f}x | "
                     f"{sum(x < 1 for x in old_x)} | {_geomean(new_x):.3f}x | "
                     f"{sum(x < 1 for x in new_x)} | "
                     f"{_geomean([v['new'][1] / v['old'][1] for v in group]):.3f} | "
                     f"{_geomean([v['new'][2] / v['old'][2] for v in group]):.3f} | "
                     f"{100 * statistics.median(moved):.1f} % | {100 * max(moved):.1f} % |")
    lines += ["", "| matrix | k | layout | old: auto over the best library | new | auto old -> "
              "new (us) | best library old -> new (us) |", "|---|---:|---|---:|---:|---:|---:|"]
    for (k, layout, matrix), v in sorted(both.items(), key=lambda kv: (kv[0][2], kv[0][:2])):
        if v["old"][0] < 1 or v["new"][0] < 1:
            lines.append(f"| {matrix} | {k} | {layout} | {v['old'][0]:.3f}x | {v['new'][0]:.3f}x"
                         f" | {1e3 * v['old'][1]:.2f} -> {1e3 * v['new'][1]:.2f} | "
                         f"{1e3 * v['old'][2]:.2f} -> {1e3 * v['new'][2]:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--note", action="append", default=[],
                        help="a note of the own backends' cases to show (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the table as JSON here")
    parser.add_argument("--groups", action="store_true",
                        help="the per (k, layout) summary of auto instead of the table")
    parser.add_argument("--dense", type=float, metavar="S",
                        help="the dense break-even summary over matrices at least S sparse")
    parser.add_argument("--pair", nargs=2, metavar=("A", "B"),
                        help="two backends side by side: each median, B / A")
    parser.add_argument("--pair-note", default="", metavar="N[=V]",
                        help="--pair: only cases whose A has note N (not none), or N ending "
                             "with V")
    parser.add_argument("--against", type=Path, metavar="OLD",
                        help="this run against an earlier one: auto over the best library in "
                             "each, and new / old of auto and of the library")
    args = parser.parse_args(argv)
    if args.against:
        sys.stdout.write(against_markdown(args.results, args.against))
        return 0
    if args.pair:
        sys.stdout.write(pair_markdown(args.results, *args.pair, args.pair_note))
        return 0
    if args.dense is not None:
        sys.stdout.write(dense_markdown(args.results, args.dense))
        return 0
    t = table(args.results, tuple(args.note))
    if args.json:
        args.json.write_text(json.dumps(t, indent=1))
    if args.groups:
        sys.stdout.write(groups_markdown(t, auto_choices(args.results)) + "\n"
                         + kept_markdown(args.results))
    else:
        sys.stdout.write(markdown(t, tuple(args.note)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
