"""``sparsescope analyze``: diagnose any kernel from measured evidence (a live workload, a
recorded profile, SASS, an earlier measurement), rank fixes by predicted gain, score the
predictions of a change afterwards. Each entry writes the analysis report into ``out_dir``
when given (checked before anything is measured)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AnalysisOutput:
    """An analysis and, with an output folder, what was written."""

    result: object
    """``analyze.records.AnalysisResult``."""
    written: object = None
    """What ``report.analyze_render.write_analysis_report`` returned; None without a folder."""


def _checked_out(out_dir) -> None:
    if out_dir:  # before anything is measured or profiled
        from sparsescope._outputs import check_out_dir

        check_out_dir(out_dir)


def _analysed(evidence, addresses, command: str, out_dir) -> AnalysisOutput:
    from sparsescope.analyze.api import analyze_evidence
    from sparsescope.report.analyze_render import write_analysis_report

    result = analyze_evidence(evidence, addresses=tuple(addresses), command=command)
    written = write_analysis_report(result, out_dir) if out_dir else None
    return AnalysisOutput(result, written)


def analyze_offline(*, from_profile: str | None = None, sass: str | None = None,
                    source_csv: str | None = None, kernel: str | None = None,
                    launch: int | None = None, gpu: str | None = None,
                    block_threads: int | None = None, grid_blocks: int | None = None,
                    ideal_bytes: int | None = None, ideal_flops: int | None = None,
                    time_ms: float | None = None, latency_ns: float | None = None,
                    bw_gb_s: float | None = None, label: str = "",
                    workload: str | None = None, addresses: Sequence[str] = (),
                    command: str = "", out_dir: str | Path | None = None) -> AnalysisOutput:
    """The analysis of recorded evidence: a profile (``from_profile``: ``.ncu-rep`` or raw
    CSV, with its source page and SASS when given) or, without one, the SASS alone (the
    kernels ``kernel`` matches)."""
    import re

    from sparsescope.analyze.sources import (
        analyses_from,
        evidence_from_profile_file,
        evidence_from_sass,
    )
    from sparsescope.errors import UsageError

    _checked_out(out_dir)
    if from_profile:
        ev = evidence_from_profile_file(
            from_profile, source_csv=source_csv, sass=sass, kernel=kernel, launch=launch,
            gpu=gpu, ideal_bytes=ideal_bytes, ideal_flops=ideal_flops, time_ms=time_ms,
            time_source="given" if time_ms else "profile", latency_ns=latency_ns,
            bw_gb_s=bw_gb_s, version=label, workload=workload or Path(from_profile).stem)
    else:
        if not sass:
            raise UsageError("give a profile (--from-profile) or SASS (--sass)")
        analyses = analyses_from(sass)
        if kernel:
            analyses = [a for a in analyses if re.search(kernel, a.name)
                        or re.search(kernel, a.demangled)]
        if not analyses:
            raise UsageError(f"{sass}: no kernel" + (f" matching {kernel!r}" if kernel else ""))
        ev = evidence_from_sass(analyses, workload=workload or Path(sass).stem, version=label,
                                gpu=gpu, block_threads=block_threads, grid_blocks=grid_blocks,
                                ideal_bytes=ideal_bytes, ideal_flops=ideal_flops,
                                time_ms=time_ms, latency_ns=latency_ns, bw_gb_s=bw_gb_s)
    return _analysed(ev, addresses, command, out_dir)


def analyze_workload(workload, *, warmups: int = 5, repeats: int = 50, profile: bool = True,
                     ncu: str | None = None, command: str = "",
                     out_dir: str | Path | None = None,
                     progress: bool = False) -> AnalysisOutput:
    """Measure ``workload`` (``analyze.workload.Workload``: ``callable_workload`` or
    ``cuda_workload``) on this machine's GPU, profile it under ncu unless ``profile`` is
    False, and analyse the evidence."""
    from sparsescope.analyze.measure import measure
    from sparsescope.progress import Status
    from sparsescope.timing.types import TimingConfig

    _checked_out(out_dir)
    timing = TimingConfig(warmups=warmups, repeats=repeats, clock="cuda-events")
    with Status(f"measuring {workload.name}" + (" and profiling it under ncu"
                                                if profile else ""), progress):
        ev = measure(workload, timing=timing, profile=profile, out_dir=out_dir, ncu=ncu)
    return _analysed(ev, workload.addresses, command, out_dir)


def analyze_measurement(folder: str | Path, *, addresses: Sequence[str] = (),
                        command: str = "", out_dir: str | Path | None = None
                        ) -> AnalysisOutput:
    """Analyse an earlier measurement folder again (its ``measurement.json`` and profile
    exports) under today's rules; ``addresses`` default to the workload's recorded ones."""
    from sparsescope._compressed import read_json
    from sparsescope.analyze.measure import evidence_from_measurement, measurement_file

    _checked_out(out_dir)
    ev = evidence_from_measurement(folder)
    if not addresses:
        data = read_json(measurement_file(folder))
        addresses = tuple(data.get("workload", {}).get("addresses", ()))
    return _analysed(ev, addresses, command, out_dir)


@dataclass(frozen=True)
class Comparison:
    """The scores of a series of analyses (each change's predicted against its measured
    gain)."""

    scores: tuple
    """``analyze.records.Score`` of each step."""
    results: tuple
    """The analyses compared, in order."""
    mae: float | None
    history_mae: float | None = None
    """The workload's mean absolute error over every score in the store (``store``)."""
    reference: object = None
    reference_speedup: float | None = None
    written: object = None


def compare_analyses(paths: Sequence[str | Path], *, applied: Sequence[str] = (),
                     reference: str | Path | None = None, store: bool = True,
                     out_dir: str | Path | None = None) -> Comparison:
    """Score a series of analyses (``analysis.json`` files, oldest first): each step's
    predicted gain against its measured one; ``applied``: the rules one change applied (two
    analyses only); ``store``: keep the scores in the results store; ``reference``: an
    analysis the last one is set against (its speedup)."""
    from sparsescope.analyze.api import read_analysis
    from sparsescope.analyze.score import (
        ScoreHistory,
        compare,
        compare_series,
        mean_absolute_error,
    )
    from sparsescope.errors import UsageError
    from sparsescope.report.analyze_render import write_series_report

    _checked_out(out_dir)
    if len(paths) < 2:
        raise UsageError("--compare needs BEFORE.json AFTER.json (and optionally more)")
    results = [read_analysis(p) for p in paths]
    applied = tuple(applied)
    if applied and len(results) > 2:
        raise UsageError("--applied names the rules of one change: give exactly two analyses")
    scores = (compare(results[0], results[1], applied),) if applied else \
        tuple(compare_series(results))
    ref = read_analysis(reference) if reference else None
    history_mae = None
    if store:
        history = ScoreHistory()
        for s in scores:
            history.record(s)
        history_mae = history.mean_absolute_error(results[0].workload)
    speedup = None
    if ref is not None and ref.evidence.time_ms and results[-1].evidence.time_ms:
        speedup = ref.evidence.time_ms / results[-1].evidence.time_ms
    written = (write_series_report(scores, results, out_dir, reference=ref,
                                   history_mae=history_mae) if out_dir else None)
    return Comparison(scores, tuple(results), mean_absolute_error(scores), history_mae, ref,
                      speedup, written)
