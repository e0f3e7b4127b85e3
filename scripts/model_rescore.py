#!/usr/bin/env python3
"""The committed runs scored against two versions of the time model, per backend family:
the before/after tables of a model change (issue 36's accuracy targets: median |error| <= 10 %,
p90 <= 25 % for our kernels and for the libraries, in each timing mode).

    # with the model before the change (another checkout): every set's score, kept
    python scripts/model_rescore.py score --out DIR/before
    # with the model after it: the same, then the tables
    python scripts/model_rescore.py score --out DIR/now
    python scripts/model_rescore.py compare --before DIR/before --now DIR/now --out FILE.md

``score`` writes ``sparsescope model score``'s cases (``api.model_score``: every own kernel,
chooser and GPU library re-planned and predicted with the run's own measured rates, in the
timing mode each case was measured in) of each committed set of :data:`SETS` to
``DIR/<set>.json.xz``; ``--set NAME`` picks some, and ``--run NAME=RESULTS`` adds a run that
is not (yet) committed (a fresh device run: ``--run seed6-today=/path/results.json``), scored
the same way. ``compare`` reads two such folders (``<set>.json.xz``, or ``<set>.json.gz`` as
folders made before 2026-11-28 hold them) and writes the Markdown: per set found in
both (the committed ones first, then the others by name), per GPU, timing mode and family (and
per backend), the cases both predicted, median and 90th-percentile |error| and the median
signed error before and now (``model score --by-family --baseline``'s table), with the command
lines that made it.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from sparsescope.api import (
    family_comparison_markdown,
    model_score,
    read_json,
    read_scores,
    write_json,
)

ROOT = Path(__file__).resolve().parents[1]
REAL_DEV = "results/h200/real-dev/2026-11-27-latency-throughput"
#: Set name -> (what it is, its results files, relative to the repository).
SETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "real-dev-h200": ("the real development set (32 SuiteSparse matrices), H200, latency and "
                      "throughput modes", (f"{REAL_DEV}/latency_results.json.xz",
                                           f"{REAL_DEV}/throughput_results.json.xz")),
    "seed6-h200": ("the seed6 analogs, H200: the CSR kernels and the libraries",
                   ("results/h200/seed6/results.json",)),
    "model-h200": ("the seed6 analogs, H200: every default backend",
                   ("results/h200/model/results.json.xz",)),
    "model-h100": ("the seed6 analogs, H100: every default backend (no retuning)",
                   ("results/h100/model/results.json.xz",)),
    "kernels-h200": ("the seed6 analogs, H200: the own kernels' variants",
                     ("results/h200/kernels/results.json.xz",)),
    "real-dev-h100": ("the real development set, H100 (no retuning), latency and throughput "
                      "modes, with the one-launch and persistent tile variants",
                      tuple(f"results/h100/real-dev/2026-11-28-finish-warp/{mode}_results.json.xz"
                            for mode in ("latency", "throughput"))),
    "seed6-h200-today": ("the seed6 analogs, H200, every default backend and the planned "
                         "cuSPARSE, 2026-11-28",
                         ("results/h200/gpu-tests/2026-11-28-seed6/seed6_results.json.xz",)),
    "held-out-h200": ("the generated population's held-out third (66 matrices), H200, every "
                      "default backend", ("results/h200/model/2026-11-28-held-out-population/"
                                          "latency_results.json.xz",)),
    "real-dev-h200-throughput": (
        "the real development set, H200, throughput mode, auto ranking in that mode",
        ("results/h200/real-dev/2026-11-28-throughput-ranked/throughput_results.json.xz",)),
}


def parse_run(text: str) -> tuple[str, Path]:
    """``NAME=RESULTS`` of ``--run``: the set's name (not a committed set's) and its file,
    made absolute (``score`` works from the repository root)."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path or "/" in name or name in SETS:
        raise argparse.ArgumentTypeError(
            f"--run takes NAME=RESULTS with a new set name, got {text!r}")
    return name, Path(path).resolve()


def score(out: Path, names: list[str], runs: Sequence[tuple[str, Path]] = ()) -> None:
    """Each set's ``model score`` cases to ``out/<set>.json.xz``: the committed ``names``,
    then each ``(name, results file)`` of ``runs``."""
    out.mkdir(parents=True, exist_ok=True)
    # the runs name their matrix files relative to the checkout they ran in (.real-dev/...)
    os.chdir(ROOT)
    wanted = [(name, [str(ROOT / p) for p in SETS[name][1]]) for name in names]
    wanted += [(name, [str(path)]) for name, path in runs]
    for name, paths in wanted:
        start = time.perf_counter()
        doc = model_score(paths).doc
        kept = {"sources": [_shown(Path(p)) for p in doc["sources"]],
                "notes": doc["notes"], "cases": doc["cases"]}
        write_json(out / f"{name}.json.xz", kept)
        print(f"{name}: {len(kept['cases'])} cases scored in "
              f"{time.perf_counter() - start:.0f} s", file=sys.stderr)


SCORE_SUFFIXES = (".json.xz", ".json.gz")
"""A set's score file: ``.json.xz`` as ``score`` writes it, ``.json.gz`` as it wrote it before."""


def _score_file(folder: Path, name: str) -> Path | None:
    """``folder``'s score file of set ``name``, or None."""
    return next((p for p in (folder / f"{name}{s}" for s in SCORE_SUFFIXES) if p.is_file()),
                None)


def _shown(path: Path) -> str:
    """A results file as the tables name it: relative to the repository where it lies there."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def compare(before: Path, now: Path, argv: list[str], notes: list[str]) -> str:
    """The Markdown of every set found in both folders, ``notes`` said first."""
    lines = ["# The committed runs scored again: the time model before and after", "",
             "<!-- generated by `python scripts/model_rescore.py "
             + shlex.join(argv) + "`; do not edit by hand -->", "",
             *(f"- {n}" for n in notes), *([""] if notes else []),
             f"Before: `{before.relative_to(ROOT) if before.is_relative_to(ROOT) else before}`, "
             f"now: `{now.relative_to(ROOT) if now.is_relative_to(ROOT) else now}` (each made by "
             "`python scripts/model_rescore.py score --out DIR` with that version of the "
             "model; `sparsescope model score RESULTS --by-family --baseline BEFORE.json` "
             "prints one set's table). Errors are (measured - predicted) / measured; the "
             "medians and 90th percentiles of |error| are linear between ranks "
             "(`analyze.score_family`); only cases both versions predicted are counted. "
             "Target: median |error| <= 10 % and p90 <= 25 % for each family.", ""]
    found = {p.name.removesuffix(suffix) for suffix in SCORE_SUFFIXES
             for p in now.glob(f"*{suffix}")}
    others = sorted(found - set(SETS))
    for name in [*SETS, *others]:
        b, n = _score_file(before, name), _score_file(now, name)
        if b is None or n is None:
            continue
        if name in SETS:
            what, paths = SETS[name]
        else:
            paths = tuple(read_json(n).get("sources", ()))
            what = "a run given to `score --run`"
        lines += [f"## {name}: {what}", "",
                  "Runs: " + ", ".join(f"`{p}`" for p in paths) + ".", "",
                  family_comparison_markdown(read_scores(n), read_scores(b)), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("score", help="score every committed set with the model as it is now")
    s.add_argument("--out", required=True, type=Path)
    s.add_argument("--set", dest="sets", action="append", choices=sorted(SETS),
                   help="only this set (repeatable)")
    s.add_argument("--run", dest="runs", action="append", type=parse_run, default=[],
                   metavar="NAME=RESULTS",
                   help="also score this results file as set NAME (repeatable); with --run "
                        "alone, no committed set is scored unless --set names it")
    c = sub.add_parser("compare", help="the before/now Markdown of two score folders")
    c.add_argument("--before", required=True, type=Path)
    c.add_argument("--now", required=True, type=Path)
    c.add_argument("--out", type=Path, help="write the Markdown here (default: print it)")
    c.add_argument("--note", dest="notes", action="append", default=[],
                   help="a line said before the tables (which models the folders hold)")
    args = p.parse_args(argv)
    if args.command == "score":
        names = args.sets or ([] if args.runs else list(SETS))
        score(args.out.resolve(), names, args.runs)
        return 0
    text = compare(args.before.resolve(), args.now.resolve(), argv, args.notes)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
