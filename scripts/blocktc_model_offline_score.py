"""Score the block tensor-core model (``model.blocktc_predict``) offline on a committed run: every
``spmm-cuda-blocktc`` case, and every ``spmm-cuda-auto`` case that ran it on row-major X, is
predicted again with the model as it is now -- the matrix rebuilt from its suite entry, the
kernel's launch planned as the backend plans it, its registers from the run's ``regs.txt`` (the
shipped kernel's when the run has none), the run's own device rates and the flush it timed
with -- and set against the run's measured median.

    python scripts/blocktc_model_offline_score.py RESULTS [--regs REGS.txt] [--matrix NAME]
        [--suite spmm-population] [--json OUT]

The predictions a run stored were made by the model of its day; this shows what today's model
would have said of the same cases (no device needed).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparsescope.backends.spmm_blocktc import (  # noqa: E402
    block_format,
    blocktc_launch,
    plan_blocktc,
)
from sparsescope.model.blocktc_predict import predict_blocktc  # noqa: E402
from sparsescope.model.predict import device_rates  # noqa: E402
from sparsescope.results.io import read_runset  # noqa: E402

SHIPPED_REGS = (Path(__file__).resolve().parents[1]
                / "results/h200/spmm-tuning/2026-11-25-blocktc-final/regs.txt")


def read_regs(path: Path) -> dict[str, int]:
    """Kernel instance -> registers, from a ``device_spmm_blocktc.sh`` regs.txt."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"(spmm_blocktc<.*>): (\d+) registers", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def ran_blocktc(case) -> bool:
    return case.outcome == "ok" and case.params.layout == "row" and (
        case.backend == "spmm-cuda-blocktc" or (case.backend == "spmm-cuda-auto" and
                                                 case.notes.get("selected") ==
                                                 "spmm-cuda-blocktc"))


def score(results: Path, regs: dict[str, int], suite: str = "spmm-population",
          only: str | None = None) -> list[dict]:
    from sparsescope.matrices.suites import build_entry, find_entry

    rs = read_runset(results)
    rates = device_rates(rs.device, rs.ceilings)
    built: dict[str, object] = {}
    rows = []
    for c in rs.cases:
        if not ran_blocktc(c) or (only and c.matrix != only):
            continue
        if c.matrix not in built:
            m = build_entry(find_entry(suite, c.matrix))
            built[c.matrix] = getattr(m, "csr", m)
        csr = built[c.matrix]
        fmt = block_format(csr.indptr, csr.indices, csr.data, csr.shape)
        k = int(c.params.k)
        plan = plan_blocktc(fmt.block_rows, fmt.blocks, csr.nnz, k, rates.sm_count)
        launch = blocktc_launch(plan, fmt.block_ptr, csr.shape[0], csr.shape[1], k, 3,
                                regs.get(plan.kernel))
        p = predict_blocktc(launch, rates, flushed=bool(c.measurement.flushed))
        measured = statistics.median(c.measurement.samples_ms)
        rows.append({"matrix": c.matrix, "k": k, "backend": c.backend,
                     "measured_ms": measured, "predicted_ms": p.predicted_ms,
                     "limiter": p.limiter,
                     "error_pct": 100 * (measured - p.predicted_ms) / measured})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--regs", type=Path, default=None)
    parser.add_argument("--matrix", default=None)
    parser.add_argument("--suite", default="spmm-population")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    regs_path = args.regs or (args.results.parent / "regs.txt")
    regs = read_regs(regs_path if regs_path.exists() else SHIPPED_REGS)
    rows = score(args.results, regs, args.suite, args.matrix)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    for r in rows:
        print(f"{r['matrix']:11s} k={r['k']:<4d} {r['backend']:18s} measured "
              f"{1e3 * r['measured_ms']:8.1f} us  predicted {1e3 * r['predicted_ms']:8.1f} us  "
              f"{r['error_pct']:+5.0f} %  {r['limiter']}")
    if rows:
        errs = [r["error_pct"] for r in rows]
        print(f"{len(rows)} cases: median |error| {statistics.median(map(abs, errs)):.1f} %, "
              f"median signed {statistics.median(errs):+.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
