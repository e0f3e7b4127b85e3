"""Command-line options shared by the commands that run cases (``run``, ``sweep``): the op's
parameters (repeatable: every combination runs), kernel variants and ``--plugin`` (also of
``model`` and ``profile``), and the printer of one line per finished case."""

from __future__ import annotations

import argparse
from typing import Any

from sparsescope import registry

#: The op a command runs when ``--op`` is not given.
DEFAULT_OP = "spmv"


def op_param_specs() -> dict[str, tuple[Any, tuple[str, ...]]]:
    """Every parameter a registered op takes (its ``Op.params``, ``ops.base.ParamSpec``) ->
    (its spec, the ops that take it), in the registry's op order: the command line's op
    options, generated, so a parameter added to an op is an option with nothing else to edit."""
    from sparsescope.ops.registry import get_op

    specs: dict[str, tuple[Any, tuple[str, ...]]] = {}
    for op in registry.OPS:
        for spec in get_op(op).params:
            first, takers = specs.get(spec.name, (spec, ()))
            specs[spec.name] = (first, (*takers, op))
    return specs


def option_name(param: str) -> str:
    """``rows_selected`` -> ``--rows-selected``."""
    return "--" + param.replace("_", "-")


def _option_help(spec, ops: tuple[str, ...], repeatable: bool) -> str:
    notes = []
    if spec.minimum is not None or spec.maximum is not None:
        low = "" if spec.minimum is None else f"{spec.minimum}"
        high = "" if spec.maximum is None else f"{spec.maximum}"
        notes.append(f"{low} to {high}" if low and high else
                     (f">= {low}" if low else f"<= {high}"))
    if spec.kind is tuple:
        notes.append("comma-separated")
    if repeatable:
        notes.append("repeatable: every combination runs")
    if spec.default is not None:
        notes.append(f"default {spec.default}")
    extra = f" ({'; '.join(notes)})" if notes else ""
    return f"{', '.join(ops)}: {spec.help or spec.name.replace('_', ' ')}{extra}"


def add_op_options(p, op_help: str, *, repeatable: bool = True,
                   ops: tuple[str, ...] | None = None, plugin: bool = True) -> None:
    """``--op`` and one option per op parameter (:func:`op_param_specs`), each repeatable
    (every combination is a case) unless ``repeatable`` is False (one case: a profile).
    Values stay text here: the op's own parameter table converts and checks them
    (:func:`op_params_given`). ``ops``: only these ops (``--op``'s choices) and their
    parameters (default: every registered op). Also ``--plugin`` (:func:`add_plugin_option`),
    so a case may name a plug-in's backend, unless ``plugin`` is False (the command adds it
    itself)."""
    offered = tuple(op for op in registry.OPS if ops is None or op in ops)
    p.add_argument("--op", choices=offered, default=DEFAULT_OP, help=op_help)
    for name, (spec, takers) in op_param_specs().items():
        takers = tuple(op for op in takers if op in offered)
        if not takers:
            continue
        kwargs: dict[str, Any] = {"dest": name, "help": _option_help(spec, takers, repeatable)}
        if repeatable:
            kwargs["action"] = "append"
        if spec.kind is int:
            kwargs["metavar"] = "N"
        elif spec.kind is tuple:
            kwargs["metavar"] = "I,J,..."
        elif spec.choices:
            kwargs["metavar"] = "|".join(map(str, spec.choices))
        p.add_argument(option_name(name), **kwargs)
    if plugin:
        add_plugin_option(p)


PLUGIN_HELP = ("load backends from a plug-in: a module name or the path of a .py file whose "
               "sparsescope_backends() returns backend classes (repeatable; docs/PLUGINS.md). "
               "Installed plug-ins (entry points of group sparsescope.backends) and those in "
               "SPARSESCOPE_PLUGINS (comma-separated) load without it")


def add_plugin_option(p: argparse.ArgumentParser) -> None:
    """``--plugin MODULE`` (repeatable): a plug-in's backends registered before the command runs
    (:class:`LoadingPlugins`), so ``--backend`` may name them."""
    p.add_argument("--plugin", dest="plugins", action=_PluginAction, metavar="MODULE",
                   help=PLUGIN_HELP)


class _PluginAction(argparse.Action):
    """Collects ``--plugin`` values and has the command's handler load them first: loading
    while parsing would make a bad plug-in argparse's usage message, not the command's one-line
    error."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])
        handler = getattr(namespace, "handler", None)  # the sub-command's default, set already
        if handler is not None and not isinstance(handler, LoadingPlugins):
            namespace.handler = LoadingPlugins(handler)


class LoadingPlugins:
    """A command's handler that first loads its ``--plugin`` modules (and exports them in
    ``SPARSESCOPE_PLUGINS`` to the processes the command starts: the ncu target, local Dask
    workers); a plug-in that fails is a ``PluginError``, one line naming it, exit 2."""

    def __init__(self, handler) -> None:
        self.handler = handler

    def __call__(self, args: argparse.Namespace):
        from sparsescope.backends.plugins import load_plugins

        load_plugins(getattr(args, "plugins", None) or [], export=True)
        return self.handler(args)


def add_variant_options(p: argparse.ArgumentParser) -> None:
    """``--variant 'B[opt=v]'`` (repeatable) and ``--variants SET``."""
    p.add_argument("--variant", dest="variants", action="append", default=[],
                   metavar="'B[opt=v,...]'",
                   help="an own kernel with options, e.g. 'cuda-spmv-sell[unroll=4,minb=6]' "
                        "(repeatable; run after the --backend ones, or alone)")
    p.add_argument("--variants", dest="variant_sets", action="append", default=[],
                   metavar="SET", help="a named set of kernel variants (spmv-own: the seed6 "
                                       "kernel sweep; sparsescope.backends.variants)")


TIMING_MODE_HELP = ("latency (default): each call timed on its own, the L2 flushed where the "
                    "working set fits; throughput: calls back to back in one event pair, the L2 "
                    "warm, time per call = total / calls (as published SpMV results are timed)")


def add_timing_mode_option(p, *, stored: str = "Stored with every case") -> None:
    """``--timing-mode latency|throughput`` (``timing.types.TIMING_MODES``; ``sparsescope
    .timing.modes``), default latency, on ``p`` (a parser or an argument group); ``stored``
    ends the help with what the command does with the mode (``run``: stores it with every
    case; ``model``: predicts every backend in it)."""
    from sparsescope.timing.types import TIMING_MODES

    p.add_argument("--timing-mode", choices=TIMING_MODES, default=TIMING_MODES[0],
                   help=f"{TIMING_MODE_HELP}. {stored}")


def variants_given(args: argparse.Namespace) -> list:
    """The :class:`~sparsescope.backends.runner.BackendChoice` of ``--variant``/``--variants``
    (a bad one is a :class:`UsageError` before anything runs)."""
    from sparsescope.backends.variants import parse_variant, variant_set

    variants = [parse_variant(v) for v in args.variants]
    return variants + [c for name in args.variant_sets for c in variant_set(name)]


def op_params_given(args: argparse.Namespace) -> dict[str, list]:
    """The op parameters given as options (each a list: repeatable), converted and checked by
    the op's ``ParamSpec``; an option of a parameter the chosen op does not take, or a value
    it refuses, is a :class:`UsageError` (naming the ops that take it) before anything runs."""
    from sparsescope.errors import UsageError
    from sparsescope.ops.registry import get_op

    specs = op_param_specs()
    given = {param: (v if isinstance(v, list) else [v])
             for param in specs if (v := getattr(args, param, None)) is not None}
    own = {p.name: p for p in get_op(args.op).params}
    for param in given:
        if param not in own:
            raise UsageError(f"{option_name(param)} applies to --op "
                             f"{', '.join(specs[param][1])}, not --op {args.op}")
    return {param: [own[param].check(v) for v in values] for param, values in given.items()}


def case_line(case) -> str:
    """One finished case: matrix, backend, parameters, outcome, time or reason, error."""
    t = f"{case.time_ms:.4f} ms" if case.time_ms is not None else case.reason
    err = f"  rel_err {case.correctness.rel_err:.1e}" if case.correctness else ""
    return (f"  {case.matrix:<14} {case.backend:<20} {case.params.label():<18} "
            f"{case.outcome:<8} {t}{err}")


def case_printer(args: argparse.Namespace):
    """Print each case's line as it finishes, flushed (none under --json: stdout is JSON).
    A reader of stdout that went away stops the lines, not the run."""
    if getattr(args, "json", False):
        return None
    from sparsescope.cli import stdout_gone

    def emit(case) -> None:
        try:
            print(case_line(case), flush=True)
        except BrokenPipeError:  # `run ... | head`: the run goes on, its results are written
            stdout_gone()

    return emit
