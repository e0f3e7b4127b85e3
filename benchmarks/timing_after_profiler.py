"""One backend timed again and again, as the CUDA protocol times it: does a timing depend on
the profiler sessions before it?

After each latency timing the protocol profiles three calls for the kernel breakdown (a PyTorch
profiler session, CUPTI attached and detached). On an H200 the timing after such a session ran
3.5-6 % off, one way after an odd count of sessions and the other way after an even one, so a
backend's time in a run depended on its position among the case's backends
(``sparsescope.timing.cuda``, its step 4). This times one case ``--timings`` times in a row in
each mode and reads the sequence by parity::

    protocol   as sparsescope times: the breakdown, then the library's settle launches
    unsettled  the breakdown and a synchronise, no settle launches (the protocol before
               2026-11-28, but for the synchronise)
    none       no breakdown and no settle launches (the reference)

    odd / even = median of the timings 2, 4, 6, ... / median of the timings 1, 3, 5, ...

A mode without the effect reads 1.00 within the noise; its median should match ``none``'s::

    python benchmarks/timing_after_profiler.py --matrix .real-dev/bcspwr06.npz --k 64 \\
        --layout row --backend spmm-cuda-auto --backend 'spmm-nvmath-i32[alg=3]' \\
        --json /tmp/after_profiler.json

The table is printed last; ``--json`` keeps every timing's median (us).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

MODES = ("protocol", "unsettled", "none")


def parity(seq_us: list[float]) -> dict:
    """The sequence's median, its odd / even ratio (timings 2, 4, ... over 1, 3, ...; 1-based),
    lowest and highest. (6, 5, 6, 5) -> median 5.5, odd / even 5 / 6 = 0.833."""
    even = statistics.median(seq_us[0::2])
    odd = statistics.median(seq_us[1::2]) if len(seq_us) > 1 else even
    return {"median_us": statistics.median(seq_us), "odd_over_even": odd / even,
            "low_us": min(seq_us), "high_us": max(seq_us)}


@contextlib.contextmanager
def breakdown_mode(mode: str):
    """The CUDA protocol's step after the samples as ``mode`` has it, for the block's length:
    ``unsettled`` sets ``SETTLE_LAUNCHES`` to 0 (the settle only synchronises, which does not
    remove the effect); ``none`` also makes ``kernel_breakdown`` profile nothing. (The settle
    launches alone, without a session, make the timings alternate as a session alone does.)"""
    from sparsescope.timing import cuda as cuda_timing

    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    saved = cuda_timing.SETTLE_LAUNCHES, cuda_timing.kernel_breakdown
    if mode in ("unsettled", "none"):
        cuda_timing.SETTLE_LAUNCHES = 0
    if mode == "none":
        cuda_timing.kernel_breakdown = lambda call, *, synchronize: ()
    try:
        yield
    finally:
        cuda_timing.SETTLE_LAUNCHES, cuda_timing.kernel_breakdown = saved


def measure(matrix, k: int, layout: str, text: str, *, timings: int, repeats: int,
            modes=MODES) -> list[dict]:
    """One row a mode: ``timings`` timings of the checked, prepared backend in a row, each
    the latency protocol's median of ``repeats`` samples (us), and :func:`parity`."""
    from spmm_bench import WARMUPS, checked_and_prepared, spmm_case

    from sparsescope.timing.types import TimingConfig

    config = TimingConfig(warmups=WARMUPS, repeats=repeats)
    case = spmm_case(matrix, k, layout)
    row = {"matrix": matrix.name, "k": k, "layout": layout, "backend": text}
    backend, prepared, why = checked_and_prepared(matrix, case, text, "float32", 4, config)
    if backend is None:
        return [{**row, "outcome": why}]
    rows = []
    for mode in modes:
        with breakdown_mode(mode):
            seq = [1e3 * backend.time(prepared, config).median_ms for _ in range(timings)]
        rows.append({**row, "mode": mode, "outcome": "ok", "timings_us": seq, **parity(seq)})
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| matrix | k | layout | backend | mode | median us | odd / even | lowest | highest |",
             "|---|---:|---|---|---|---:|---:|---:|---:|"]
    for r in rows:
        head = f"| {r['matrix']} | {r['k']} | {r['layout']} | `{r['backend']}` |"
        if r["outcome"] != "ok":
            lines.append(f"{head} {r['outcome'][:60]} | | | | |")
            continue
        lines.append(f"{head} {r['mode']} | {r['median_us']:.2f} | {r['odd_over_even']:.3f} | "
                     f"{r['low_us']:.2f} | {r['high_us']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from spmm_bench import add_case_grid, case_grid

    from sparsescope.matrices.io import read_matrix

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_case_grid(parser)
    parser.add_argument("--timings", type=int, default=16, help="timings in a row a mode")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = [r for path, k, layout, text in case_grid(args)
            for r in measure(read_matrix(path), k, layout, text, timings=args.timings,
                             repeats=args.repeats)]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(f"{args.timings} timings in a row a mode, {args.repeats} samples a timing\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
