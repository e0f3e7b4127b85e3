"""The readings ``sparsescope model score`` prints, one call each, as a frozen :class:`Reading`
(a JSON-able document and its text): the CLI parses and prints; scripts and notebooks call the
same functions through ``sparsescope.api``.

- :func:`model_score`: stored runs scored against the model as it is now
  (:mod:`~sparsescope.analyze.score_runs`, summaries in
  :mod:`~sparsescope.analyze.score_summary`);
- :func:`memory_floor_reading`: runs against each format's memory floor (an op's cases that
  have one, ``Op.memory_floor``: SpMV)
  (:mod:`~sparsescope.analyze.floor_runs`);
- :func:`spmm_bounds_reading`: an SpMM run against the best library and the memory bound
  (:mod:`~sparsescope.analyze.spmm_bounds`);
- :func:`l1_check_reading`: the x-gather model's L2 requests against ncu's
  (:mod:`~sparsescope.analyze.l1_check`);
- :func:`profile_check_reading`: the time model's counts against ncu's, case by case, with the
  term each miss feeds (:mod:`~sparsescope.analyze.profile_check`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparsescope.errors import UsageError

Progress = Callable[[str], None] | None


@dataclass(frozen=True)
class Reading:
    """One reading: the document ``--json`` prints, and the text printed otherwise."""

    doc: dict[str, Any]
    text: str


def model_score(results: Sequence[str | Path], *, matrices: Sequence[str] = (),
                from_json: bool = False, baseline: str | Path | None = None,
                by_kind: bool = False, shortlist: bool = False, by_family: bool = False,
                call_probe: str | Path | None = None, regs: str | Path | None = None,
                sass: bool = True, progress: Progress = None) -> Reading:
    """Score the runs at ``results`` (files or folders; with ``from_json``, earlier
    ``model score --json`` files, summarised again) and summarise: per GPU and op the error,
    per variant its median signed error, per matrix the cost of choosing by prediction alone,
    SpMM auto's regret and trials; with ``baseline`` (an earlier score of the same runs) both
    models side by side; ``by_kind``: measured / predicted per variant and matrix kind;
    ``shortlist``: what an auto backend's shortlist would time under these predictions;
    ``by_family``: the error per GPU, timing mode and backend family (our kernels; the
    libraries) and per backend, against issue 36's targets (:mod:`.score_family`; with
    ``baseline``, before and now on the cases both predicted).
    ``call_probe``: ``call_overhead_probe.py --json`` whose call costs stand in for runs that
    predate them; ``regs``: the block kernel's ``regs.txt``."""
    from sparsescope.analyze import score_runs as sr
    from sparsescope.analyze import score_summary as ss

    if from_json:
        cases = tuple(c for path in results for c in sr.read_scores(path))
        score = sr.RunsScore(cases=cases, sources=tuple(map(str, results)))
    else:
        score = sr.score_runs(
            results, matrices=matrices,
            call_costs=sr.probe_call_costs(call_probe) if call_probe else None,
            regs=sr.read_regs(regs) if regs else None, sass=sass, progress=progress)
    cases = score.cases
    regrets, trials = ss.spmm_regrets(cases), ss.spmm_trials(cases)
    sections: dict[str, Any] = {"errors": ss.error_summaries(cases),
                                "choice_regrets": ss.choice_regrets(cases),
                                "spmm_regrets": regrets, "spmm_trials": trials}
    parts = [*(f"note: {n}" for n in score.notes), ss.summary_text(cases),
             ss.spmm_text(regrets, trials)]
    before = sr.read_scores(baseline) if baseline else ()
    if before:
        parts.append(ss.comparison(cases, before))
    if by_kind:
        parts.append(ss.by_kind(cases))
    if by_family:
        from sparsescope.analyze import score_family as sf

        errors = sf.scored_errors(cases)
        sections["families"] = sf.family_summaries(errors)
        parts.append(sf.family_markdown(sections["families"]))
        if before:
            parts.append(sf.family_comparison(errors, sf.scored_errors(before)))
    if shortlist:
        now = ss.shortlist_regrets(cases)
        sections["shortlist"] = now
        parts.append(ss.shortlist_text("now", now))
        if before:
            old = ss.shortlist_regrets(before)
            sections["shortlist_baseline"] = old
            parts += [ss.shortlist_text("before", old), ss.shortlist_changes(now, old)]
    return Reading(sr.as_jsonable(score, **sections), "\n\n".join(p for p in parts if p))


def family_errors(results: Sequence[str | Path]) -> Reading:
    """The predictions the runs at ``results`` (files or folders) stored with their cases,
    per GPU, timing mode and backend family and per backend (:mod:`.score_family`: the
    numbers issue 36's targets are stated in; ``model score --by-family`` gives the same for
    the model as it is now)."""
    from sparsescope.analyze import score_family as sf
    from sparsescope.analyze.score_runs import results_files

    files = results_files(results)
    rows = sf.family_summaries(sf.stored_errors(files))
    return Reading({"sources": [str(p) for p in files], "families": rows},
                   sf.family_markdown(rows))


def memory_floor_reading(results: Sequence[str | Path], *, matrices: Sequence[str] = (),
                         progress: Progress = None) -> Reading:
    """Each matrix of the runs at ``results`` (the cases of an op with a memory floor): its
    fastest own kernel, auto and the best library against their formats' floors (Markdown)."""
    from sparsescope.analyze.floor_runs import floor_markdown, floor_rows
    from sparsescope.analyze.score_runs import results_files

    files = results_files(results)
    rows = [r for path in files for r in floor_rows(path, matrices, progress=progress)]
    return Reading({"sources": [str(p) for p in files], "rows": rows}, floor_markdown(rows))


def spmm_bounds_reading(results: Sequence[str | Path], *, newer: Sequence[str | Path] = (),
                        x_reuse: bool = False, page: bool = False) -> Reading:
    """The SpMM run at ``results`` (one run; ``newer`` runs' triples replace its own): per
    (k, layout) auto against the best library, the lowest ratios, and (``page``: the Markdown
    page) every case against the memory bound."""
    from sparsescope.analyze.score_runs import results_files
    from sparsescope.analyze.spmm_bounds import bounds_markdown, summarise

    first, *rest = results_files(results)
    if rest:
        raise UsageError("the SpMM bounds read one run (later ones go in --newer)")
    s = summarise(first, x_reuse=x_reuse, newer=tuple(newer))
    if page:
        return Reading(s, bounds_markdown(s))
    lines = [f"{s['device']}: {s['cases']} cases, {len(s['rows'])} (matrix, k, layout) compared",
             f"{'k':>4} {'layout':6} {'cases':>5} {'geomean':>8} {'min':>6} {'<0.95':>5}"]
    for t in s["table"]:
        lines.append(f"{t['k']:>4} {t['layout']:6} {t['cases']:5d} {t['geomean']:8.3f} "
                     f"{t['min']:6.3f} {t['below_0_95']:5d}")
    lines.append("lowest ratios:")
    for r in sorted(s["rows"], key=lambda r: r["speedup"])[:12]:
        lines.append(f"  {r['matrix']:11s} k={r['k']:<4d} {r['layout']} {r['speedup']:.3f} "
                     f"(auto {r['auto_ms']:.4f} ms via {r['auto_chose']}; {r['library']} "
                     f"{r['library_ms']:.4f}; fastest own {r['fastest_own']} "
                     f"{r['fastest_own_ms']})")
    return Reading(s, "\n".join(lines))


def l1_check_reading(folders: Sequence[str | Path]) -> Reading:
    """Every tile-kernel profile in ``folders``: ncu's x sectors against the model's, with and
    without the L1 (Markdown table)."""
    from sparsescope.analyze.l1_check import l1_check, l1_table

    rows = l1_check(folders)
    return Reading({"rows": rows}, l1_table(rows))


def profile_check_reading(folders: Sequence[str | Path], *, progress: Progress = None) -> Reading:
    """Every SpMV profile in ``folders`` (and below): the model's counts (warp instructions,
    DRAM bytes read, blocks, loop iterations and instructions, the code outside the loops)
    against ncu's, a verdict naming each count more than 10 % off (Markdown table; the JSON
    document's ``rows`` hold both sides' counts, ``passed_over`` the exports not read)."""
    from sparsescope.analyze.profile_check import profile_check, profile_table

    rows, notes = profile_check(folders, progress=progress)
    return Reading({"sources": [str(f) for f in folders], "rows": rows, "passed_over": notes},
                   profile_table(rows, notes))
