"""Write a results folder for a run of scripts/device_spmm_blocktc.sh from its returned files
alone (no number typed by hand): the files are copied and README.md quotes them.

    python scripts/spmm_blocktc_readme.py FETCHED DEST --title T [--note N] [--carry C]

FETCHED holds env.txt, command.txt, regs.txt, pytest_blocktc.log, results.json.gz, sweep.log
and table.md (scripts/spmm_backend_table.py's table of that run).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

FILES = ("env.txt", "command.txt", "regs.txt", "pytest_blocktc.log", "results.json.gz",
         "sweep.log", "table.md")


def readme(fetched: Path, title: str, note: str, carry: str) -> str:
    def text(name: str) -> str:
        path = fetched / name
        return path.read_text().strip() if path.exists() else f"({name} did not come back)"

    tests = text("pytest_blocktc.log").splitlines()
    parts = [f"# {title}", ""]
    if note:
        parts += [note, ""]
    parts += ["## How it was made", "",
              f"On the lent GPU (device tool), from the repository root, carry `{carry}`:", "",
              "```", "bash scripts/device_spmm_blocktc.sh", text("command.txt"), "```", "",
              "```", text("env.txt"), "```", "",
              "## Every backend side by side (median ms; x = best cuSPARSE / that backend)", "",
              text("table.md"), "",
              "## Registers of the kernel's instances (CuPy function attributes)", "",
              "```", text("regs.txt"), "```", "",
              "## GPU tests (`tests/gpu/test_spmm_blocktc.py`)", "",
              "```", tests[-1] if tests else "(no output)", "```", "",
              "Files: `results.json.gz` (every case, `sparsescope results show` reads it), "
              "`table.md`, `regs.txt`, `pytest_blocktc.log`, `sweep.log`, `env.txt`, "
              "`command.txt`.", ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fetched", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--title", required=True)
    parser.add_argument("--note", default="")
    parser.add_argument("--carry", default='[".device-wheels-min"]')
    args = parser.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        if (args.fetched / name).exists():
            shutil.copy(args.fetched / name, args.dest / name)
    (args.dest / "README.md").write_text(readme(args.fetched, args.title, args.note, args.carry))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
