"""The ``sparsescope`` command line: thin parsing around :mod:`sparsescope.api` and the stages.

Each command group lives in its own module under ``sparsescope.cli`` exposing
``register(subparsers)``; modules are listed here by name and imported only when the parser is
built, and they import their heavy dependencies inside their handlers, so ``sparsescope --help``
loads no GPU library.

Every handler returns a result (printed as one JSON document with ``--json``: records become
objects, paths strings, non-finite numbers null -- ``results show`` keeps a results file's own
``"Infinity"``/``"NaN"`` strings) and a human text (printed otherwise), and may
add an exit code as a third item. Errors derived from
:class:`~sparsescope.errors.SparsescopeError` are printed as ``sparsescope: error: <message>``
with the error's exit code, never a traceback.

Exit codes: the table :data:`sparsescope.errors.EXIT_CODES`, printed in plain text as the
epilog of ``sparsescope --help`` (:func:`exit_codes_text`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import warnings
from collections.abc import Sequence

from sparsescope import __version__, errors
from sparsescope.errors import SparsescopeError

#: Command modules, in the order they appear in ``--help``.
COMMAND_MODULES = (
    "sparsescope.cli.run_cmd",
    "sparsescope.cli.sweep_cmd",
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


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors keep their message on the ``SystemExit`` they raise
    (``argparse_message``), so :func:`main` can answer ``--json`` with an error document.
    Sub-command parsers are of this class too (``add_subparsers`` makes them alike)."""

    def error(self, message: str):  # type: ignore[override]
        try:
            super().error(message)
        except SystemExit as stop:
            stop.argparse_message = message  # type: ignore[attr-defined]
            raise


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sparsescope",
        description="Explain sparse-kernel performance: matrices, timing, models, reports.",
        epilog=f"{NAMING}\n\n{EXIT_CODES}", formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"sparsescope {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


def exit_codes_text() -> str:
    """Every exit code (:data:`sparsescope.errors.EXIT_CODES`) in plain text, one a line
    (``  9    an output path ...``): what ``sparsescope --help`` ends with."""
    from sparsescope.errors import EXIT_CODES as TABLE

    return "\n".join(["Exit codes:", *(f"  {code:<4} {meaning}" for code, meaning in
                                      TABLE.items())])


#: The epilog of ``sparsescope --help``: how a matrix is named, then every exit code.
NAMING = ("A matrix is a file (.mtx, .mtx.gz, .smtx, .npz), suitesparse:Group/Name, or\n"
          "suite:NAME[#ENTRY[,ENTRY]][@SCALE] (e.g. suite:seed6#cant@0.05), in every command.\n"
          "First steps: README.md and docs/FIRST_STEPS.md in the repository.")
EXIT_CODES = exit_codes_text()


def jsonable(value: object) -> object:
    """``value`` as plain JSON data: dataclass records as objects, paths as strings, tuples and
    sets as arrays, NumPy scalars as numbers, non-finite floats as null."""
    import dataclasses
    import math
    import os

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # NumPy scalars
        return jsonable(value.item())
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def emit(result: object, text: str, as_json: bool) -> None:
    """Print ``result`` as one JSON document or ``text`` as it is."""
    if as_json:
        print(json.dumps(jsonable(result), indent=2, allow_nan=False))
    elif text:
        print(text)


#: Exit code when the reader of stdout went away (``| head``): 128 + SIGPIPE, as a shell
#: reports a command killed by it.
EXIT_BROKEN_PIPE = errors.EXIT_BROKEN_PIPE


def stdout_gone() -> None:
    """The reader of stdout went away (``sparsescope ... | head``): send the rest of the
    output to the null device, so neither a later print nor the interpreter's final flush
    raises ``BrokenPipeError``."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is no file (a test's capture)
        pass


def main(argv: Sequence[str] | None = None, modules: Sequence[str] = COMMAND_MODULES) -> int:
    """Run the CLI; ``modules`` limits the command groups (tests of one group use this).

    A closed stdout (``| head``) ends the command quietly with :data:`EXIT_BROKEN_PIPE`.
    An argument error exits 2 through argparse (``SystemExit``), with a JSON error document
    on stdout under ``--json``."""
    try:
        return _main(argv, modules)
    except BrokenPipeError:
        stdout_gone()
        return EXIT_BROKEN_PIPE


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args``; under ``--json`` an argument error prints the error document
    (``{"error", "type", "exit_code"}``) on stdout before argparse's exit 2."""
    try:
        return parser.parse_args(argv)
    except SystemExit as stop:
        message = getattr(stop, "argparse_message", None)
        given = sys.argv[1:] if argv is None else argv
        if message is not None and "--json" in given:
            print(json.dumps({"error": message, "type": "UsageError",
                              "exit_code": stop.code}), flush=True)
        raise


def _print_warnings(caught: list[warnings.WarningMessage]) -> None:
    """Each warning a handler raised, one ``sparsescope: warning:`` line on stderr."""
    for warning in caught:
        print(f"sparsescope: warning: {warning.message}", file=sys.stderr)


def _main(argv: Sequence[str] | None, modules: Sequence[str]) -> int:
    parser = build_parser(modules)
    args = _parse(parser, argv)
    as_json = bool(getattr(args, "json", False))
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result, text, *code = args.handler(args)
        _print_warnings(caught)
    except SparsescopeError as exc:
        _print_warnings(caught)  # a deprecated name's note still reaches a command that fails
        if as_json:
            print(json.dumps({"error": str(exc), "type": type(exc).__name__,
                              "exit_code": exc.exit_code}))
        print(f"sparsescope: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("sparsescope: interrupted", file=sys.stderr)
        return 130
    emit(result, text, as_json)
    sys.stdout.flush()  # a closed pipe shows here, inside main, not at the interpreter's exit
    return code[0] if code else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
