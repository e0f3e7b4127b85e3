"""The A/B table of `scripts/device.sh ab-kernel`: per case, the medians of runs A1, A2 (the
kernel file as given) and B1, B2 (the working tree), and B/A = median(B) / median(A).

    python scripts/ab_table.py FOLDER   (A1.json, B1.json, A2.json, B2.json, or .json.xz /
                                         .json.gz)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from sparsescope.api import read_json

RUNS = ("A1", "A2", "B1", "B2")


def medians(folder: Path) -> dict[tuple, dict[str, float]]:
    """(matrix, backend, params) -> {run: median ms} over the runs present."""
    out: dict[tuple, dict[str, float]] = {}
    for run in RUNS:
        names = (folder / f"{run}{suffix}" for suffix in (".json", ".json.xz", ".json.gz"))
        path = next((p for p in names if p.exists()), None)
        if path is None:
            continue
        data = read_json(path)
        for c in data["cases"]:
            if c["outcome"] == "ok":
                key = (c["matrix"], c["backend"], json.dumps(c.get("params", {}), sort_keys=True))
                out.setdefault(key, {})[run] = statistics.median(c["measurement"]["samples_ms"])
    return out


def table(runs: dict[tuple, dict[str, float]]) -> str:
    lines = [f"{'matrix':16} {'backend':44} {'A1 us':>9} {'A2 us':>9} {'B1 us':>9} "
             f"{'B2 us':>9} {'B/A':>6}"]
    for (matrix, backend, _), t in sorted(runs.items()):
        a = [t[r] for r in ("A1", "A2") if r in t]
        b = [t[r] for r in ("B1", "B2") if r in t]
        ratio = statistics.median(b) / statistics.median(a) if a and b else float("nan")
        cells = " ".join(f"{1e3 * t[r]:9.2f}" if r in t else f"{'-':>9}" for r in RUNS)
        lines.append(f"{matrix:16} {backend:44} {cells} {ratio:6.3f}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(medians(Path(sys.argv[1]))))
