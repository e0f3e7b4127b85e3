"""The ``sparsescope`` command line: thin parsing around :mod:`sparsescope.api` and the stages.

Each command group lives in its own module under ``sparsescope.cli`` exposing
``register(subparsers)``; modules are listed here by name and imported only when the parser is
built, and they import their heavy dependencies inside their handlers, so ``sparsescope --help``
loads no GPU library.

Every handler returns a JSON-serialisable object (printed with ``--json``) and a human text
(printed otherwise). Errors derived from :class:`~sparsescope.errors.SparsescopeError` are printed
as ``sparsescope: error: <message>`` with the error's exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import warnings
from collections.abc import Sequence

from sparsescope import __version__
from sparsescope.errors import SparsescopeError

#: Command modules, in the order they appear in ``--help``.
COMMAND_MODULES = (
    "sparsescope.cli.run_cmd",
    "sparsescope.cli.model_cmd",
    "sparsescope.cli.matrices_cmd",
    "sparsescope.cli.specs_cmd",
    "sparsescope.cli.report_cmd",
    "sparsescope.cli.profile_cmd",
    "sparsescope.cli.sass_cmd",
    "sparsescope.cli.ceilings_cmd",
    "sparsescope.cli.results_cmd",
    "sparsescope.cli.analyze_cmd",
)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """Every command takes ``--json``: print a machine-readable result instead of text."""
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparsescope",
        description="Explain sparse-kernel performance: matrices, timing, models, reports.",
    )
    parser.add_argument("--version", action="version", version=f"sparsescope {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


def emit(result: object, text: str, as_json: bool) -> None:
    """Print ``result`` as JSON or ``text`` as it is."""
    if as_json:
        print(json.dumps(result, indent=2, default=str))
    elif text:
        print(text)


def main(argv: Sequence[str] | None = None, modules: Sequence[str] = COMMAND_MODULES) -> int:
    """Run the CLI; ``modules`` limits the command groups (tests of one group use this)."""
    parser = build_parser(modules)
    args = parser.parse_args(argv)
    as_json = bool(getattr(args, "json", False))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result, text = args.handler(args)
        for warning in caught:
            print(f"sparsescope: warning: {warning.message}", file=sys.stderr)
    except SparsescopeError as exc:
        if as_json:
            print(json.dumps({"error": str(exc), "type": type(exc).__name__}))
        print(f"sparsescope: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("sparsescope: interrupted", file=sys.stderr)
        return 130
    emit(result, text, as_json)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
