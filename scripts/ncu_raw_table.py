"""Named metrics of several ncu profiles side by side, as Markdown: each file a column, each
metric a row (its words and its ncu name).

    python scripts/ncu_raw_table.py LABEL=FILE [LABEL=FILE ...] [--metric NAME=WORDS ...]
        [--title TEXT]

FILE is the text of ``ncu --import REPORT --page raw --print-units base`` (``.gz`` read as
gzip): one profiled launch, a metric a line (``name unit value``). Without ``--metric`` the
rows are :data:`METRICS`: the launch, the warps a scheduler holds and the stall reasons of a
latency-bound kernel, in cycles a warp spent in each per issued instruction. A metric a file
lacks shows as ``-``.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path

STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
METRICS: tuple[tuple[str, str], ...] = (
    ("gpu__time_duration.sum", "duration ns"),
    ("launch__grid_size", "blocks"),
    ("launch__block_size", "threads"),
    ("smsp__warps_active.avg.per_cycle_active", "warps active a scheduler"),
    ("smsp__inst_executed.sum", "instructions"),
    (STALL.format("long_scoreboard"), "long scoreboard"),
    (STALL.format("short_scoreboard"), "short scoreboard"),
    (STALL.format("wait"), "wait"),
    (STALL.format("imc_miss"), "imc miss"),
    (STALL.format("no_instruction"), "no instruction"),
    (STALL.format("mio_throttle"), "mio throttle"),
    (STALL.format("not_selected"), "not selected"),
)


def read_raw(path: Path) -> dict[str, str]:
    """Metric name -> its value as printed (``4,512``), from a ``--page raw`` text export."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        text = fh.read()
    values = {}
    for line in text.splitlines():
        m = re.match(r"^\s+([a-z][\w.]*__[\w.]+)\s+(?:\S+\s+)?([-\d,.]+)\s*$", line)
        if m:
            values.setdefault(m.group(1), m.group(2))
    return values


def table(columns: list[tuple[str, dict[str, str]]],
          metrics: tuple[tuple[str, str], ...] = METRICS) -> str:
    """The Markdown table: a row a metric (``words (`name`)``), a column a profile."""
    lines = ["| metric | " + " | ".join(label for label, _ in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for name, words in metrics:
        cells = [values.get(name, "-") for _, values in columns]
        lines.append(f"| {words} (`{name}`) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profiles", nargs="+", metavar="LABEL=FILE")
    parser.add_argument("--metric", action="append", default=[], metavar="NAME=WORDS")
    parser.add_argument("--title", default="")
    args = parser.parse_args(argv)
    columns = []
    for spec in args.profiles:
        label, _, file = spec.partition("=")
        path = Path(file)
        if not file or not path.is_file():
            print(f"ncu_raw_table: {spec}: give LABEL=FILE, an existing file", file=sys.stderr)
            return 2
        columns.append((label, read_raw(path)))
    metrics = tuple(tuple(m.split("=", 1)) if "=" in m else (m, m) for m in args.metric)
    head = f"{args.title}\n\n" if args.title else ""
    sys.stdout.write(head + table(columns, metrics or METRICS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
