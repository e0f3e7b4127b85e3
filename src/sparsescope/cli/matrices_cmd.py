"""``sparsescope matrices``: list suites and generators, describe a matrix, generate matrices."""

from __future__ import annotations

import argparse
import sys
import textwrap
from dataclasses import asdict

from sparsescope.cli import add_json_flag
from sparsescope.errors import UsageError

FORMATS = ("mtx", "mtx.gz", "smtx", "npz")
LIST_WIDTH = 100
"""`matrices list` wraps generator descriptions at this width (whole, never cut)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "matrices", help="list, describe and generate sparse matrices",
        description="Matrix suites and generators, structure statistics of a matrix file or a "
                    "suite entry, and matrix generation.")
    sub = p.add_subparsers(dest="matrices_command", metavar="SUBCOMMAND")
    sub.required = True

    ls = sub.add_parser("list", help="suites (with their entries) and generators")
    ls.add_argument("--scale", type=float, default=1.0, help="show suite sizes at this scale")
    add_json_flag(ls)
    ls.set_defaults(handler=handle_list)

    st = sub.add_parser(
        "stats", help="structure statistics of a matrix",
        description="FILE is a .mtx/.mtx.gz/.smtx/.npz path, suitesparse:Group/Name, or a suite "
                    "entry suite:NAME#ENTRY[@SCALE] such as suite:seed6#cant@0.05 (generated "
                    "at its @SCALE, else --scale; the old seed6:cant still works, with a "
                    "deprecation note).")
    st.add_argument("file", metavar="FILE")
    st.add_argument("--scale", type=float, default=1.0, help="scale of a suite entry")
    st.add_argument("--seed", type=int, default=0, help="seed of a suite entry")
    st.add_argument("--window-rows", type=int, default=32,
                    help="rows in the x-reuse window (default 32)")
    st.add_argument("--strict", action="store_true",
                    help="refuse duplicates and unsorted rows instead of canonicalizing them")
    add_json_flag(st)
    st.set_defaults(handler=handle_stats)

    gen = sub.add_parser(
        "generate", help="generate one matrix, or every matrix of a suite",
        description="One matrix: KIND --rows R --nnz N --out FILE (format from the extension). "
                    "A suite: --suite NAME --out DIR.")
    gen.add_argument("kind", nargs="?", metavar="KIND", help="generator (see `matrices list`)")
    gen.add_argument("--rows", type=int)
    gen.add_argument("--nnz", type=int)
    gen.add_argument("--cols", type=int, help="default: --rows")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                     help="generator parameter, repeatable (e.g. --param halfwidth=64)")
    gen.add_argument("--suite", help="generate every matrix of this suite into --out DIR")
    gen.add_argument("--scale", type=float, default=1.0, help="suite scale (default 1)")
    gen.add_argument("--format", choices=FORMATS, default="mtx",
                     help="file format of suite matrices (default mtx; npz is fastest)")
    gen.add_argument("--out", required=True, help="output file (one matrix) or folder (suite)")
    add_json_flag(gen)
    gen.set_defaults(handler=handle_generate)


def _progress(iterable, total: int, desc: str, enabled: bool = True):
    """A bar over the matrices on stderr: only on a terminal, never under --json."""
    from sparsescope.api import quiet_tqdm

    tqdm = quiet_tqdm()

    return tqdm(iterable, total=total, desc=desc, unit="matrix", file=sys.stderr,
                disable=not (enabled and sys.stderr.isatty()))


def handle_list(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import api

    catalogue = api.matrix_catalogue(args.scale)
    suites = []
    lines = ["Suites:"]
    for name, suite, entries in catalogue.suites:
        suites.append({"name": name, "description": suite.description,
                       "scalable": suite.scalable,
                       "entries": [_entry_dict(e) for e in entries]})
        lines.append(f"  {name}: {suite.description}")
        for e in entries:
            analog = f"  analog of {e.suitesparse}" if e.suitesparse else ""
            lines.append(f"    {e.name:<14} {e.kind:<10} {e.rows:>10,} x {e.cols:<10,} "
                         f"nnz {e.nnz:>12,}{analog}")
    generators = []
    lines.append("Generators:")
    indent = " " * 13
    for kind, params, summary in catalogue.generators:
        generators.append({"name": kind, "params": params, "summary": summary})
        shown = ", ".join(f"{k}={v}" for k, v in params.items()) or "no parameters"
        lines.extend(textwrap.wrap(summary, LIST_WIDTH, initial_indent=f"  {kind:<10} ",
                                   subsequent_indent=indent, break_on_hyphens=False))
        lines.extend(textwrap.wrap(f"({shown})", LIST_WIDTH, initial_indent=indent,
                                   subsequent_indent=indent + " ", break_on_hyphens=False))
    return {"suites": suites, "generators": generators}, "\n".join(lines)


def _entry_dict(entry) -> dict:
    return {"name": entry.name, "kind": entry.kind, "rows": entry.rows, "cols": entry.cols,
            "nnz": entry.nnz, "params": dict(entry.params), "analog_of": entry.analog_of,
            "suitesparse": entry.suitesparse}


def handle_stats(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import api

    matrix, stats = api.matrix_stats(args.file, window_rows=args.window_rows, scale=args.scale,
                                     seed=args.seed, strict=args.strict)
    info = {"name": matrix.name, "source": matrix.source, "kind": matrix.kind,
            "analog_of": matrix.analog_of, "seed": matrix.seed}
    values = asdict(stats)
    text = [f"{matrix.name} ({matrix.source})"]
    text += [f"  {key:<20} {_fmt(value)}" for key, value in values.items()]
    text.append(f"  (x_reuse_in_window: 128-byte lines re-read within {args.window_rows} rows)")
    return {"matrix": info, "window_rows": args.window_rows, "stats": values}, "\n".join(text)


def _fmt(value) -> str:
    return f"{value:,.4f}" if isinstance(value, float) else f"{value:,}"


def _parse_params(items: list[str]) -> dict[str, float | int]:
    params: dict[str, float | int] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--param expects NAME=VALUE, got {item!r}")
        try:
            params[name] = int(raw)
        except ValueError:
            try:
                params[name] = float(raw)
            except ValueError:
                raise UsageError(f"--param {name}: {raw!r} is not a number") from None
    return params


def handle_generate(args: argparse.Namespace) -> tuple[dict | list, str]:
    if args.suite is not None:
        if args.kind is not None or args.rows is not None or args.nnz is not None or args.param:
            raise UsageError("--suite takes no KIND, --rows, --nnz or --param")
        return _generate_suite(args)
    if args.kind is None:
        raise UsageError("give a generator KIND (with --rows and --nnz) or --suite NAME")
    if args.rows is None or args.nnz is None:
        raise UsageError("generating one matrix needs --rows and --nnz")
    from sparsescope import api

    made = api.generate_matrix(args.kind, args.rows, args.nnz, args.out, cols=args.cols,
                               seed=args.seed, params=_parse_params(args.param))
    result = {"path": str(made.path), "kind": made.kind, "rows": made.rows, "cols": made.cols,
              "nnz": made.nnz, "seed": made.seed, "params": made.params,
              "generate_s": round(made.generate_s, 3)}
    text = (f"wrote {made.path}: {made.kind} {made.rows:,} x {made.cols:,}, nnz {made.nnz:,} "
            f"(generated in {made.generate_s:.2f} s)")
    return result, text


def _generate_suite(args: argparse.Namespace) -> tuple[list, str]:
    from sparsescope import api

    written = []
    lines = []
    for made in api.generate_suite(
            args.suite, args.out, scale=args.scale, seed=args.seed, file_format=args.format,
            progress=lambda entries, total: _progress(entries, total, args.suite,
                                                      enabled=not args.json)):
        written.append({"path": str(made.path), "name": made.name, "kind": made.kind,
                        "analog_of": made.analog_of, "rows": made.rows,
                        "cols": made.cols, "nnz": made.nnz, "seed": made.seed,
                        "generate_s": round(made.generate_s, 3)})
        lines.append(f"wrote {made.path}: {made.rows:,} x {made.cols:,}, nnz {made.nnz:,}")
    return written, "\n".join(lines)
