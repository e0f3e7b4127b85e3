"""The program ``sparsescope profile`` runs under ncu: one case (suite, matrix, backend, op).

    python -m sparsescope.profile.target --suite S --matrix M --backend B [--op spmv]

It loads the suite's matrix, runs the case through the same runner as ``sparsescope run`` (few
repeats: ncu replays each profiled launch many times anyway), prints one summary line and exits
0 when the case ran and matched the reference, 1 when it failed, 3 when the backend skipped it, 2
on bad arguments. ncu reports a non-zero exit as "The application returned an error code".
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sparsescope.backends.runner import report_case_exit
from sparsescope.errors import SparsescopeError, UsageError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sparsescope.profile.target",
                                     description="Run one case, to be profiled by ncu.")
    parser.add_argument("--suite", required=True)
    parser.add_argument("--matrix", required=True, help="matrix name within the suite")
    parser.add_argument("--backend", required=True)
    parser.add_argument("--op", default="spmv")
    parser.add_argument("--scale", type=float, default=1.0, help="suite scale factor")
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    return parser


def run_target(suite: str, matrix: str, backend: str, *, op: str = "spmv", scale: float = 1.0,
               warmups: int = 1, repeats: int = 3):
    """Load ``matrix`` from ``suite`` and run the case; returns the runner's CaseResult."""
    from sparsescope.backends.runner import run_case
    from sparsescope.matrices.suites import build_entry, find_entry
    from sparsescope.timing.types import TimingConfig

    # Build only the profiled matrix (find_entry names the known ones when it is missing).
    chosen = build_entry(find_entry(suite, matrix, scale=scale))
    # One timing protocol: the same TimingConfig fields as `run`, with few repeats (ncu replays).
    timing = TimingConfig(warmups=warmups, repeats=repeats)
    if op != "spmv":
        raise UsageError(f"op {op!r} cannot be profiled yet; known: spmv")
    return run_case(chosen, backend, config=timing)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        case = run_target(args.suite, args.matrix, args.backend, op=args.op, scale=args.scale,
                          warmups=args.warmups, repeats=args.repeats)
    except SparsescopeError as exc:
        print(f"sparsescope-target: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return report_case_exit(case, f"sparsescope-target: {args.matrix} {args.backend} {args.op}")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
