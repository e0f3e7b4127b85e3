"""Command-line options shared by the commands that run cases (``run``, ``sweep``): the op's
parameters (repeatable: every combination runs) and kernel variants, and the printer of one
line per finished case."""

from __future__ import annotations

import argparse

from sparsescope import registry

#: Command-line options that set an op parameter: option dest -> parameter name.
OP_OPTIONS = {"k": "k", "layout": "layout", "rows_selected": "rows_selected",
              "weights": "weights", "out_of_range": "out_of_range"}


def add_op_options(p: argparse.ArgumentParser, op_help: str) -> None:
    """``--op`` and its parameters, each repeatable (every combination is a case)."""
    p.add_argument("--op", choices=tuple(registry.OPS), default="spmv", help=op_help)
    p.add_argument("--k", type=int, action="append", metavar="K",
                   help="spmm: columns of X, 1 to 4096 (ops.spmm.MAX_K; repeatable; default 8)")
    p.add_argument("--layout", choices=("row", "col"), action="append",
                   help="spmm: X row- or column-major (repeatable; default row)")
    p.add_argument("--rows-selected", type=int, action="append", metavar="N",
                   help="slice: rows drawn with repeats (repeatable; default: the suite's "
                        "workloads, else 64)")
    p.add_argument("--weights", choices=("scalar", "per-nnz"), action="append",
                   help="slice: one value for every nonzero, or A's values (repeatable)")
    p.add_argument("--out-of-range", choices=("error", "zero"),
                   help="slice: an index outside the matrix is an error (default) or a zero row")


def add_variant_options(p: argparse.ArgumentParser) -> None:
    """``--variant 'B[opt=v]'`` (repeatable) and ``--variants SET``."""
    p.add_argument("--variant", dest="variants", action="append", default=[],
                   metavar="'B[opt=v,...]'",
                   help="an own kernel with options, e.g. 'cuda-spmv-sell[unroll=4,minb=6]' "
                        "(repeatable; run after the --backend ones, or alone)")
    p.add_argument("--variants", dest="variant_sets", action="append", default=[],
                   metavar="SET", help="a named set of kernel variants (spmv-own: the seed6 "
                                       "kernel sweep; sparsescope.backends.variants)")


def variants_given(args: argparse.Namespace) -> list:
    """The :class:`~sparsescope.backends.runner.BackendChoice` of ``--variant``/``--variants``
    (a bad one is a :class:`UsageError` before anything runs)."""
    from sparsescope.backends.variants import parse_variant, variant_set

    variants = [parse_variant(v) for v in args.variants]
    return variants + [c for name in args.variant_sets for c in variant_set(name)]


def op_params_given(args: argparse.Namespace) -> dict[str, list]:
    """The op parameters given as options (each a list: repeatable); an option of a parameter
    the chosen op does not take is a :class:`UsageError` naming the ops that do."""
    from sparsescope.errors import UsageError
    from sparsescope.ops.registry import get_op

    given = {param: (v if isinstance(v, list) else [v])
             for dest, param in OP_OPTIONS.items() if (v := getattr(args, dest)) is not None}
    known = {p.name for p in get_op(args.op).params}
    for param in given:
        if param not in known:
            takers = [op for op in registry.OPS if param in {p.name for p in get_op(op).params}]
            raise UsageError(f"--{param.replace('_', '-')} applies to --op "
                             f"{', '.join(takers)}, not --op {args.op}")
    return given


def case_line(case) -> str:
    """One finished case: matrix, backend, parameters, outcome, time or reason, error."""
    t = f"{case.time_ms:.4f} ms" if case.time_ms is not None else case.reason
    err = f"  rel_err {case.correctness.rel_err:.1e}" if case.correctness else ""
    return (f"  {case.matrix:<14} {case.backend:<20} {case.params.label():<18} "
            f"{case.outcome:<8} {t}{err}")


def case_printer(args: argparse.Namespace):
    """Print each case's line as it finishes, flushed (none under --json: stdout is JSON)."""
    if getattr(args, "json", False):
        return None

    def emit(case) -> None:
        print(case_line(case), flush=True)

    return emit
