"""What ``cuda-spmv-auto`` would have chosen under another model, from offline scores alone.

``scripts/model_offline_score.py --json`` writes every (matrix, variant) of a committed run with
its measured median and the model's prediction. Auto times the candidates its shortlist holds
(``backends.select_predicted.shortlist``: predicted within ``TRIAL_MARGIN`` of the fastest, at
most ``TRIAL_MAX``, the fastest of each kernel family first) and keeps the fastest of them. Here
the run's own medians stand in for auto's trial, so a model change can be judged by the choice
it leads to, not only by its error::

    python scripts/shortlist_offline.py SCORE.json [SCORE.json ...] [--baseline OLD.json ...]

Printed per GPU: the geomean and largest regret of the shortlist's fastest against the fastest
variant of the run (0 when the shortlist holds it), how many matrices the shortlist misses the
fastest on, and with ``--baseline`` the same for the other model, matrix by matrix where the
two differ. Meaningful on runs whose variant set is auto's candidates (``--variants
auto-candidates``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparsescope.backends.select_predicted import (  # noqa: E402
    Candidate,
    CandidatePrediction,
    shortlist,
)
from sparsescope.report.collection_data import geomean  # noqa: E402


def _rows(paths: list[Path]) -> list[dict]:
    return [r for p in paths for r in json.loads(p.read_text())]


def regrets(rows: list[dict]) -> dict[tuple[str, str], tuple[float, str, int]]:
    """(gpu, matrix) -> (regret of the shortlist's fastest, its variant, shortlist size)."""
    by_matrix: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        by_matrix[(r["gpu"], r["matrix"])].append(r)
    out = {}
    for key, cases in by_matrix.items():
        measured = {c["backend"]: c["measured_ms"] for c in cases}
        preds = [CandidatePrediction(Candidate(c["backend"].partition("[")[0],
                                               {"variant": i}), c["predicted_ms"])
                 for i, c in enumerate(cases)]
        short = shortlist(preds)
        picked = min(short, key=lambda p: measured[cases[p.candidate.params["variant"]]
                                                   ["backend"]])
        name = cases[picked.candidate.params["variant"]]["backend"]
        out[key] = (measured[name] / min(measured.values()) - 1.0, name, len(short))
    return out


def summary(label: str, res: dict) -> str:
    by_gpu: dict[str, list[float]] = defaultdict(list)
    for (gpu, _), (regret, _, _) in res.items():
        by_gpu[gpu].append(regret)
    lines = []
    for gpu, values in sorted(by_gpu.items()):
        geo = geomean(1.0 + v for v in values) - 1.0
        missed = sum(v > 0 for v in values)
        lines.append(f"{label} {gpu}: shortlist regret {100 * geo:+.1f} % geomean, largest "
                     f"{100 * max(values):+.1f} %, fastest not shortlisted on {missed} of "
                     f"{len(values)} matrices")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scores", nargs="+", type=Path)
    ap.add_argument("--baseline", nargs="+", type=Path, default=[])
    args = ap.parse_args(argv)
    now = regrets(_rows(args.scores))
    print(summary("now", now))
    if args.baseline:
        before = regrets(_rows(args.baseline))
        print(summary("before", before))
        print("\n| GPU | matrix | regret before | now | picked before | now |")
        print("| --- | --- | ---: | ---: | --- | --- |")
        for key in sorted(set(now) & set(before)):
            (rn, pn, _), (rb, pb, _) = now[key], before[key]
            if abs(rn - rb) > 1e-9:
                print(f"| {key[0]} | {key[1]} | {100 * rb:+.1f} % | {100 * rn:+.1f} % | "
                      f"{pb} | {pn} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
