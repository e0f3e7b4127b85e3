"""Stored runs read back: ``sparsescope results show``, ``compare``, ``readme`` and ``compact``.

- :func:`show_results`: one :class:`~sparsescope.results.tables.ResultRow` per case of a
  results file (time, spread, error, the bandwidth by each op's INT32 / y-written byte model
  and its % of the run's copy bandwidth, the stored prediction), and where the run's time
  went (:class:`~sparsescope.results.tables.StageTable`);
- :func:`compare_results`: the same cases of two runs side by side, with the verdict;
- :func:`results_readme`: a results folder's README written (or checked) from its own files;
- :func:`compact_results`: results files made small (floats to 7 significant digits, xz),
  checked against the originals before these are removed.

The rows and the verdict are computed by :mod:`sparsescope.results.tables`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sparsescope.results.compact import CompactedFile, CompactSummary
from sparsescope.results.tables import (
    BYTE_MODEL,
    SPREAD_FORMULA,
    CompareRow,
    CompareSummary,
    ResultRow,
    StageTable,
)

DEFAULT_WITHIN = 0.05
""":func:`compare_results`: spreads up to 5 % count as agreement."""


@dataclass(frozen=True)
class ResultsTable:
    """Every case of one results file (:func:`show_results`)."""

    run_id: str
    device: str
    copy_bw_gb_s: float | None
    """The run's measured copy bandwidth (None when it measured none)."""
    byte_model: str
    """The byte models the bandwidth columns use, one per op of the run (the same for every
    backend of an op), joined by "; "."""
    rows: tuple[ResultRow, ...]
    byte_models: dict[str, str] | None = None
    """Op -> its byte model, for the ops of the run."""
    stages: StageTable | None = None
    """Where the run's time went, in total and per case."""


@dataclass(frozen=True)
class RunInfo:
    """Which run a side of a :class:`Comparison` is."""

    file: str
    run_id: str
    created_utc: str
    device: str
    suite: str
    scale: float


@dataclass(frozen=True)
class Comparison:
    """Two runs side by side (:func:`compare_results`)."""

    a: RunInfo
    b: RunInfo
    same_device: bool
    spread_formula: str
    summary: CompareSummary
    rows: tuple[CompareRow, ...]


@dataclass(frozen=True)
class ReadmeOutput:
    """A results folder's README (:func:`results_readme`)."""

    folder: Path
    readme: Path | None
    """The file written; None when only checked."""
    result: object
    """``sparsescope.report.readme.ReadmeResult``: the runs' facts, the selection, the
    speedups and the generated block."""


def show_results(path: str | Path) -> ResultsTable:
    """Every case of the results file ``path``, in the run's order. A file that leaves out the
    case models gets them computed as the run would (``results.case_models``); a bad file is a
    ``ResultsFormatError``."""
    from sparsescope.results.case_models import with_case_models
    from sparsescope.results.io import read_runset
    from sparsescope.results.tables import byte_model_label, result_rows, stage_table

    runset = with_case_models(read_runset(path))
    models = {op: byte_model_label(op) for op in dict.fromkeys(c.op for c in runset.cases)}
    return ResultsTable(run_id=runset.run_id, device=runset.provenance.device,
                        copy_bw_gb_s=runset.ceilings.copy_bw_gb_s,
                        byte_model="; ".join(models.values()) or BYTE_MODEL,
                        rows=tuple(result_rows(runset)), byte_models=models,
                        stages=stage_table(runset))


def _run_info(runset, path: str | Path) -> RunInfo:
    return RunInfo(file=str(path), run_id=runset.run_id,
                   created_utc=runset.provenance.created_utc,
                   device=runset.provenance.device, suite=runset.suite, scale=runset.scale)


def compare_results(path_a: str | Path, path_b: str | Path, *,
                    within: float = DEFAULT_WITHIN) -> Comparison:
    """The cases of two results files side by side: per (matrix, backend, op) both medians,
    B / A and the spread ``|a - b| / min(a, b)``; a row agrees when its spread is at most
    ``within`` (a finite number >= 0, else a ``UsageError``)."""
    from sparsescope.errors import UsageError
    from sparsescope.results.io import read_runset
    from sparsescope.results.tables import compare_rows, compare_summary

    if not (within >= 0 and math.isfinite(within)):
        raise UsageError(f"--within must be a finite number >= 0, got {within}")
    runset_a, runset_b = read_runset(path_a), read_runset(path_b)
    rows = compare_rows(runset_a, runset_b, within)
    info_a, info_b = _run_info(runset_a, path_a), _run_info(runset_b, path_b)
    return Comparison(a=info_a, b=info_b, same_device=info_a.device == info_b.device,
                      spread_formula=SPREAD_FORMULA, summary=compare_summary(rows, within),
                      rows=tuple(rows))


def results_readme(folder: str | Path, *, title: str = "", note: str = "",
                   out: str | Path | None = None, check: bool = False) -> ReadmeOutput:
    """Write ``folder``'s README generated block from the folder's own files (to ``out`` when
    given, else ``folder/README.md``; a new README gets ``title`` and ``note``). ``check``:
    write nothing, and raise ``ResultsFormatError`` when the committed README is not what the
    files give. A ``folder`` that is not a folder is a ``UsageError``."""
    from sparsescope.errors import ResultsFormatError, UsageError
    from sparsescope.report.readme import readme_for, write_readme

    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    if check:
        result = readme_for(folder)
        committed = folder / "README.md"
        if not committed.is_file() or committed.read_text(encoding="utf-8") != result.text:
            raise ResultsFormatError(f"{committed}: its generated block is not what the "
                                     "folder's files give; run `sparsescope results readme "
                                     f"{folder}`")
        return ReadmeOutput(folder=folder, readme=None, result=result)
    result = write_readme(folder, title=title, note=note, out=out)
    return ReadmeOutput(folder=folder, readme=Path(out) if out else folder / "README.md",
                        result=result)


def compact_results(paths: Sequence[str | Path], *,
                    progress: Callable[[CompactedFile], None] | None = None
                    ) -> CompactSummary:
    """Each results file ``paths`` stand for (``NAME.json`` or ``NAME.json.gz``; a folder: every
    one below it) as ``NAME.json.xz``: every float rounded to 7 significant digits (CUDA event
    times are float32 milliseconds, about 7.2 significant digits; integral floats, which are
    counts, kept exact), compressed with xz, read back and checked (each float within a
    relative 1e-6, everything else equal), and only then the original removed
    (:mod:`sparsescope.results.compact`). ``progress`` is told of each file as it is done. No
    path, a missing one or one of another kind is a ``UsageError``; a file that is not JSON or
    fails the check a ``ResultsFormatError`` naming it."""
    from sparsescope.errors import UsageError
    from sparsescope.results.compact import compact_files

    if not paths:
        raise UsageError("no results file or folder given")
    return compact_files(paths, progress=progress)
