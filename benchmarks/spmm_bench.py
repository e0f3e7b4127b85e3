"""What the benchmarks that time SpMM backends on real matrices share: the case grid of their
command lines, the case a (matrix, k, layout) gives, and a backend checked against float64 and
prepared once (``spmm_interleaved``, ``spmm_latency_probe``, ``timing_after_profiler``,
``timing_placements``, ``timing_state_flips``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

#: Warm-up calls of each timing.
WARMUPS = 3


def add_case_grid(parser, backend_help: str = "a registry name or NAME[opt=value,...]") -> None:
    """``--matrix``, ``--k``, ``--layout`` and ``--backend``, each required and repeatable: the
    grid of cases a benchmark times backend by backend."""
    parser.add_argument("--matrix", action="append", required=True)
    parser.add_argument("--k", action="append", type=int, required=True)
    parser.add_argument("--layout", action="append", choices=("row", "col"), required=True)
    parser.add_argument("--backend", action="append", required=True, help=backend_help)


def case_grid(args) -> Iterator[tuple[str, int, str, str]]:
    """(matrix path, k, layout, backend) of every case of :func:`add_case_grid`'s arguments,
    matrices outermost, backends innermost."""
    for path in args.matrix:
        for k in args.k:
            for layout in args.layout:
                for backend in args.backend:
                    yield path, k, layout, backend


def spmm_case(matrix, k: int, layout: str, value_dtype: str = "float32", index_bytes: int = 4):
    """The SpMM case of ``matrix`` at ``k`` and ``layout``, X seeded by ``k`` (every benchmark
    of this folder that times a case builds it so)."""
    from sparsescope.ops.registry import get_op

    return get_op("spmm").make_case(matrix.csr, {"k": k, "layout": layout},
                                    value_dtype=value_dtype, index_bytes=index_bytes, seed=k)


def checked_and_prepared(matrix, case, text: str, value_dtype: str, index_bytes: int, config):
    """(backend, prepared case, "") of the variant ``text`` once its output passed the float64
    gate, or (None, None, why not)."""
    from sparsescope.backends.base import tell_timing
    from sparsescope.backends.runner import run_case
    from sparsescope.backends.variants import backend_choice

    choice = backend_choice(text)
    checked = run_case(matrix, choice, "spmm", case.params, config=config, case=case,
                       value_dtype=value_dtype, index_bytes=index_bytes, timed=False)
    if checked.outcome != "ok":
        return None, None, f"{checked.outcome}: {checked.reason}"
    backend = choice.create()
    tell_timing(backend, config)
    return backend, backend.prepare(case, value_dtype, index_bytes), ""
