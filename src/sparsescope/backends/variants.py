"""Named variants of our own kernels: a backend with constructor options, and sets of them.

A variant is how a kernel sweep names one configuration of an own backend (unroll, minimum
blocks per SM, threads per row, staging): ``sparsescope run --variant
'cuda-spmv-sell[unroll=4,minb=6]'`` runs one, ``--variants spmv-own`` the whole set below. Each
variant runs through the one runner like any backend; its label is what results call it.
"""

from __future__ import annotations

import re

from sparsescope.backends.runner import BackendChoice
from sparsescope.backends.select_predicted import (
    SHORT_PIECE_CUTS,
    SHORT_PIECE_LAUNCH,
    candidates,
    kernel_classes,
)
from sparsescope.errors import UsageError

#: label -> (backend, options): every own SpMV kernel variant of the seed6 kernel sweep.
SPMV_OWN: dict[str, tuple[str, dict[str, int]]] = {
    "adaptive-i1-h1": ("cuda-spmv-adaptive", {"iters": 1, "hint": 1}),
    "adaptive-i1-h0": ("cuda-spmv-adaptive", {"iters": 1, "hint": 0}),
    "adaptive-i2-h1": ("cuda-spmv-adaptive", {"iters": 2, "hint": 1}),
    "adaptive-i1-hub8k": ("cuda-spmv-adaptive", {"iters": 1, "hint": 1, "hub": 8192}),
    # split rows finished by their last tile: one launch, no spmv_fixup
    "adaptive-i1-fin": ("cuda-spmv-adaptive", {"iters": 1, "hint": 1, "finish": 1}),
    "adaptive-i2-fin": ("cuda-spmv-adaptive", {"iters": 2, "hint": 1, "finish": 1}),
    "merge-i1-fin": ("cuda-spmv-merge", {"iters": 1, "hint": 1, "finish": 1}),
    "merge-i1-h1": ("cuda-spmv-merge", {"iters": 1, "hint": 1}),
    "merge-i2-h1": ("cuda-spmv-merge", {"iters": 2, "hint": 1}),
    "tiles16-i2-h1": ("cuda-spmv-delta16-tiles", {"iters": 2, "hint": 1}),
    "sell-u4-m6-h1": ("cuda-spmv-sell", {"unroll": 4, "minb": 6, "hint": 1}),
    "sell-u4-m6-h0": ("cuda-spmv-sell", {"unroll": 4, "minb": 6, "hint": 0}),
    "sell-u2-m8-h1": ("cuda-spmv-sell", {"unroll": 2, "minb": 8, "hint": 1}),
    "sell-t2-u4-m6-h1": ("cuda-spmv-sell", {"tpr": 2, "unroll": 4, "minb": 6, "hint": 1}),
    "sell-t2-u2-m8-h1": ("cuda-spmv-sell", {"tpr": 2, "unroll": 2, "minb": 8, "hint": 1}),
    "delta16-u4-m6-h1": ("cuda-spmv-delta16", {"unroll": 4, "minb": 6, "hint": 1}),
    "delta16-u2-m8-h1": ("cuda-spmv-delta16", {"unroll": 2, "minb": 8, "hint": 1}),
    "delta16-t2-u4-m6-h1": ("cuda-spmv-delta16", {"tpr": 2, "unroll": 4, "minb": 6, "hint": 1}),
    "delta16-t2-u2-m8-h1": ("cuda-spmv-delta16", {"tpr": 2, "unroll": 2, "minb": 8, "hint": 1}),
    # targets follow-up (the `kernels` device recipe's targets): more threads per row for pwtk,
    # L1 kept for the hot columns x[0, 16k / 32k) for circuit5M
    "delta16-t4-u2-m8-h1": ("cuda-spmv-delta16", {"tpr": 4, "unroll": 2, "minb": 8, "hint": 1}),
    "delta16-t4-u4-m6-h1": ("cuda-spmv-delta16", {"tpr": 4, "unroll": 4, "minb": 6, "hint": 1}),
    "delta16-t8-u2-m8-h1": ("cuda-spmv-delta16", {"tpr": 8, "unroll": 2, "minb": 8, "hint": 1}),
    "sell-t4-u2-m8-h1": ("cuda-spmv-sell", {"tpr": 4, "unroll": 2, "minb": 8, "hint": 1}),
    "adaptive-i1-l1h16k": ("cuda-spmv-adaptive", {"iters": 1, "hint": 1, "hub": -16384}),
    "adaptive-i1-l1h32k": ("cuda-spmv-adaptive", {"iters": 1, "hint": 1, "hub": -32768}),
    "adaptive-i2-l1h32k": ("cuda-spmv-adaptive", {"iters": 2, "hint": 1, "hub": -32768}),
    # 1 x 3 blocks, one 16-bit offset per block (FEM rows of 3-column runs: pwtk, ldoor)
    "blocked3-u2-m8-h1": ("cuda-spmv-blocked16", {"block": 3, "unroll": 2, "minb": 8, "hint": 1}),
    "blocked3-u4-m6-h1": ("cuda-spmv-blocked16", {"block": 3, "unroll": 4, "minb": 6, "hint": 1}),
    "blocked3-t2-u2-m8-h1": ("cuda-spmv-blocked16", {"block": 3, "tpr": 2, "unroll": 2, "minb": 8,
                                                 "hint": 1}),
    "blocked3-t2-u4-m6-h1": ("cuda-spmv-blocked16", {"block": 3, "tpr": 2, "unroll": 4, "minb": 6,
                                                 "hint": 1}),
    "blocked3-t4-u2-m8-h1": ("cuda-spmv-blocked16", {"block": 3, "tpr": 4, "unroll": 2, "minb": 8,
                                                 "hint": 1}),
    "blocked3-u3-m6-h1": ("cuda-spmv-blocked16", {"block": 3, "unroll": 3, "minb": 6, "hint": 1}),
    # decoupled access / execute: streams staged in shared memory by cp.async (stage = steps
    # per chunk, double-buffered)
    "blocked3-dae4-m6-h1": ("cuda-spmv-blocked16", {"block": 3, "stage": 4, "minb": 6, "hint": 1}),
    "blocked3-t2-dae4-m6-h1": ("cuda-spmv-blocked16", {"block": 3, "tpr": 2, "stage": 4, "minb": 6,
                                                   "hint": 1}),
    "blocked3-t2-dae2-m6-h1": ("cuda-spmv-blocked16", {"block": 3, "tpr": 2, "stage": 2, "minb": 6,
                                                   "hint": 1}),
    "blocked3-t4-dae4-m6-h1": ("cuda-spmv-blocked16", {"block": 3, "tpr": 4, "stage": 4, "minb": 6,
                                                   "hint": 1}),
    "delta16-t2-dae4-m6-h1": ("cuda-spmv-delta16", {"tpr": 2, "stage": 4, "minb": 6, "hint": 1}),
    "sell-t2-dae4-m6-h1": ("cuda-spmv-sell", {"tpr": 2, "stage": 4, "minb": 6, "hint": 1}),
}
#: Short pieces: SELL with rows cut at l = steps x tpr nonzeros, every (tpr, l) auto can plan
#: (``select_predicted.SHORT_PIECE_CUTS``; auto plans those that cut some row shorter than the
#: default cut).
_SHORT_LAUNCH = f"u{SHORT_PIECE_LAUNCH['unroll']}-m{SHORT_PIECE_LAUNCH['minb']}"
_SHORT = {f"sell-t{tpr}-{_SHORT_LAUNCH}-l{cut}-h1": (
    "cuda-spmv-sell", {"tpr": tpr, **SHORT_PIECE_LAUNCH, "long_row": cut, "hint": 1})
    for tpr, cut in SHORT_PIECE_CUTS}
SPMV_OWN.update(_SHORT)
SHORT_PIECES = tuple(_SHORT)

#: The 21 variants of the 2026-11-22 seed6 sweep (results/h200/kernels): the best of each
#: family on the six analogs, what the product path re-makes that folder with.
SEED6_SWEEP = (
    "adaptive-i1-h1", "adaptive-i1-h0", "adaptive-i2-h1", "adaptive-i1-hub8k", "merge-i1-h1",
    "merge-i2-h1", "tiles16-i2-h1", "sell-u4-m6-h1", "sell-u4-m6-h0", "sell-u2-m8-h1",
    "sell-t2-u4-m6-h1", "sell-t2-u2-m8-h1", "delta16-u4-m6-h1", "delta16-u2-m8-h1",
    "delta16-t2-u4-m6-h1", "delta16-t2-u2-m8-h1", "blocked3-u2-m8-h1", "blocked3-t2-u2-m8-h1",
    "blocked3-dae4-m6-h1", "delta16-t2-dae4-m6-h1", "sell-t2-dae4-m6-h1")

def _auto_candidates() -> tuple[str, ...]:
    """The labels of exactly the candidates ``cuda-spmv-auto`` predicts
    (``select_predicted.candidates``) for a matrix whose blocks are 1 x 3 and whose longest
    row is longer than every short piece: each the variant of :data:`SPMV_OWN` with the same
    backend and resolved options, a variant named here (``<family>-<opt><value>...``) where
    the table has none."""
    from sparsescope.backends.select import MatrixStatistics

    skewed = MatrixStatistics(
        rows=100_000, cols=100_000, nnz=1_000_000, mean_nnz_per_row=10.0, max_nnz_per_row=5000,
        cv_nnz_per_row=2.0, empty_row_fraction=0.0, escape_fraction=0.0,
        delta16_byte_ratio=0.8, sell_padding_ratio=1.5, block_width=3, sell_long_row=800)
    classes = kernel_classes()

    def key(backend: str, options: dict) -> tuple:
        return backend, tuple(sorted({**classes[backend].defaults, **options}.items()))

    labels: dict[tuple, str] = {}
    for label, (backend, options) in SPMV_OWN.items():
        if backend in classes:
            labels.setdefault(key(backend, options), label)
    found = []
    for cand in candidates(skewed):
        label = labels.get(key(cand.backend, cand.params))
        if label is None:
            label = "-".join([cand.backend.removeprefix("cuda-spmv-"),
                              *(f"{k}{v}" for k, v in sorted(cand.params.items()))])
            SPMV_OWN[label] = (cand.backend, dict(cand.params))
        found.append(label)
    return tuple(found)


#: Exactly the candidates ``cuda-spmv-auto`` predicts for a matrix whose blocks are 1 x 3 and
#: whose longest row is longer than every short piece, derived from
#: ``select_predicted.candidates`` (the one declaration): the smallest set auto's regret can be
#: scored against on a population too large for the whole sweep.
AUTO_CANDIDATES = _auto_candidates()

#: The seed6 sweep plus every candidate of ``cuda-spmv-auto`` it lacks, so that auto's regret
#: is scored against every kernel it could have chosen.
SELECTION_SWEEP = (*SEED6_SWEEP, *(c for c in AUTO_CANDIDATES if c not in SEED6_SWEEP))

def _library_variants(backend: str, algorithms: tuple[int, ...],
                      unprocessed: tuple[int, ...]) -> dict[str, tuple[str, dict[str, int]]]:
    """A planned cuSPARSE backend's algorithms (preprocessed where the library offers it) and,
    for ``unprocessed``, the same without the preprocessing; each labelled by its options, so
    ``BACKEND[label]`` reads as ``--variant`` would write it (``nvmath-cusparse-i32[alg=2]``)."""
    out = {f"alg={a}": (backend, {"alg": a}) for a in algorithms}
    out.update({f"alg={a},preprocess=0": (backend, {"alg": a, "preprocess": 0})
                for a in unprocessed})
    return out


#: The best cuSPARSE: every SpMV algorithm of the planned backend (default, CSR_ALG1, CSR_ALG2),
#: with and without cusparseSpMV_preprocess (``backends.nvmath_cusparse``).
CUSPARSE_SPMV = _library_variants("nvmath-cusparse-i32", (0, 1, 2), (0, 1, 2))
#: The same for SpMM: default and CSR_ALG1-3, and ALG1 / ALG3 (the two the preprocessing
#: helps, cuSPARSE's documentation says) without it (``backends.spmm_nvmath``).
CUSPARSE_SPMM = _library_variants("spmm-nvmath-i32", (0, 1, 2, 3), (1, 3))

#: The dense peer of SpMM in both math modes (``backends.spmm_dense``): FP32 and TF32.
DENSE_SPMM = {f"math={m}": ("spmm-cublas-dense", {"math": m}) for m in ("fp32", "tf32")}

#: Set name -> variants.
VARIANT_SETS = {"cusparse-spmv": CUSPARSE_SPMV, "cusparse-spmm": CUSPARSE_SPMM,
                "dense-spmm": DENSE_SPMM,
                "spmv-own": SPMV_OWN,
                "seed6-sweep": {label: SPMV_OWN[label] for label in SEED6_SWEEP},
                "selection": {label: SPMV_OWN[label] for label in SELECTION_SWEEP},
                "auto-candidates": {label: SPMV_OWN[label] for label in AUTO_CANDIDATES}}

_SPEC = re.compile(r"^(?P<name>[a-z0-9-]+)\[(?P<opts>[^\]]*)\]$")


def parse_variant(text: str) -> BackendChoice:
    """``BACKEND[opt=value,opt=value]`` -> a :class:`BackendChoice` labelled with ``text``;
    a :class:`UsageError` for any other shape. Values are integers, or one of the words the
    backend's class declares for that option (``TEXT_OPTIONS``: ``math`` of
    ``spmm-cublas-dense[math=tf32]``)."""
    match = _SPEC.match(text.strip())
    if match is None:
        raise UsageError(f"--variant wants BACKEND[opt=value,...], got {text!r}")
    options = []
    for part in filter(None, (p.strip() for p in match["opts"].split(","))):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep:
            raise UsageError(f"--variant {text!r}: {part!r} is not opt=integer")
        try:
            options.append((key, int(value)))
            continue
        except ValueError:
            pass
        words = _text_options(match["name"]).get(key)
        if not words:
            raise UsageError(f"--variant {text!r}: {part!r} is not opt=integer")
        if value not in words:
            raise UsageError(f"--variant {text!r}: {key} must be one of {', '.join(words)}, "
                             f"got {value!r}")
        options.append((key, value))
    return BackendChoice(match["name"], tuple(options), text.strip())


def _text_options(backend: str) -> dict[str, tuple[str, ...]]:
    """Option -> the words backend ``backend``'s class accepts for it (its ``TEXT_OPTIONS``);
    empty for a backend that declares none or is not known (its integers still parse)."""
    from sparsescope.registry import load_backend_factory

    try:
        factory = load_backend_factory(backend)
    except Exception:  # an unknown name is reported where the backend is built
        return {}
    return dict(getattr(factory, "TEXT_OPTIONS", {}) or {})


def backend_choice(text: str) -> BackendChoice:
    """A registry name, or ``BACKEND[opt=value,...]`` (:func:`parse_variant`), as the backend
    to run; the options are checked by building the backend, so a bad one is a
    :class:`UsageError` before anything runs (or is profiled)."""
    choice = parse_variant(text) if "[" in text else BackendChoice(text.strip())
    if choice.options:
        try:
            choice.create()
        except (TypeError, ValueError) as exc:
            raise UsageError(f"backend {text!r}: {exc}") from None
    return choice


def variant_set(name: str) -> list[BackendChoice]:
    """The variants of set ``name``, each labelled ``BACKEND[label]``."""
    if name not in VARIANT_SETS:
        raise UsageError(f"no variant set {name!r}; known: {', '.join(VARIANT_SETS)}")
    return [BackendChoice(backend, tuple(options.items()), f"{backend}[{label}]")
            for label, (backend, options) in VARIANT_SETS[name].items()]
