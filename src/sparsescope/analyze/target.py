"""The program ncu profiles for ``sparsescope analyze``: one call of a workload.

    python -m sparsescope.analyze.target WORKLOAD.json [--warmups N]

It builds the workload (:func:`sparsescope.analyze.measure.instantiate`), runs ``N`` warm-up
calls (compilation, lazy initialisation and library autotuning stay out of the profile), then
brackets exactly one call with ``cudaProfilerStart`` / ``cudaProfilerStop``; ncu runs with
``--profile-from-start off``, so only that call's kernels are profiled. Exit 0 on success, the
error's exit code otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from sparsescope.errors import SparsescopeError


def _profiler(library: str):
    """(start, stop, synchronize) of the library the workload runs on."""
    if library == "torch":
        import torch

        return torch.cuda.profiler.start, torch.cuda.profiler.stop, torch.cuda.synchronize
    import cupy

    return (cupy.cuda.runtime.profilerStart, cupy.cuda.runtime.profilerStop,
            cupy.cuda.Device().synchronize)


def main(argv: Sequence[str] | None = None) -> int:
    from sparsescope.analyze.measure import instantiate
    from sparsescope.analyze.workload import Workload

    parser = argparse.ArgumentParser(prog="python -m sparsescope.analyze.target")
    parser.add_argument("workload", help="workload JSON written by sparsescope analyze")
    parser.add_argument("--warmups", type=int, default=2)
    args = parser.parse_args(argv)
    try:
        with open(args.workload) as fh:
            workload = Workload.from_dict(json.load(fh))
        inst = instantiate(workload)
        call = inst.timed
        start, stop, sync = _profiler(inst.library)
        for _ in range(args.warmups):
            call()
        sync()
        start()
        call()
        sync()
        stop()
    except SparsescopeError as exc:
        print(f"sparsescope-analyze-target: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"sparsescope-analyze-target: {workload.name} {workload.version}: one call profiled")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
