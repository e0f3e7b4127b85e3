"""The kernels ``cuda-spmv-auto`` chooses among are declared once
(``select_predicted.AUTO_KERNELS``, with ``NOT_CHOSEN`` for the own kernels it leaves out and
why); its class table, its candidates, the ``auto-candidates`` variant set and the README
follow from it."""

from __future__ import annotations

import re
from pathlib import Path

from test_spmv_select import stats  # hand-made statistics, shared with the rules' tests

from sparsescope import registry
from sparsescope.backends import spmv_auto, variants
from sparsescope.backends.select_predicted import AUTO_KERNELS, NOT_CHOSEN, candidates

README = Path(__file__).resolve().parents[2] / "README.md"


def _own_spmv_kernels() -> set[str]:
    """Own SpMV backends that are kernels (not a chooser among them)."""
    return {name for name in registry.backend_names("spmv") if registry.is_own(name)
            and not issubclass(registry.load_backend_factory(name), spmv_auto.CudaSpmvAuto)}


def test_every_own_kernel_is_chosen_among_or_left_out_with_a_reason():
    assert set(AUTO_KERNELS) | set(NOT_CHOSEN) == _own_spmv_kernels()
    assert not set(AUTO_KERNELS) & set(NOT_CHOSEN)
    assert all(len(why) > 20 for why in NOT_CHOSEN.values())


def test_the_class_table_and_the_candidates_follow_the_declaration():
    assert list(spmv_auto.CHOICES) == list(AUTO_KERNELS)
    rich = stats(block_width=3, max_nnz_per_row=5000, sell_long_row=800)
    assert {c.backend for c in candidates(rich)} == set(AUTO_KERNELS)
    for cand in candidates(rich):  # every candidate builds with its own class's options
        spmv_auto.CHOICES[cand.backend](breakdown=False, **cand.params)


def test_the_auto_candidates_variant_set_is_derived():
    rich = stats(block_width=3, max_nnz_per_row=5000, sell_long_row=800)
    chosen = variants.VARIANT_SETS["auto-candidates"]
    assert len(chosen) == len(candidates(rich))
    assert {backend for backend, _ in chosen.values()} == set(AUTO_KERNELS)
    assert set(variants.AUTO_CANDIDATES) <= set(variants.SELECTION_SWEEP)


def test_the_readme_names_what_auto_chooses_among():
    text = " ".join(README.read_text(encoding="utf-8").split())
    sentence = re.search(r"`cuda-spmv-auto` choosing among ([^;]*);", text)
    assert sentence, "the README's sentence on what cuda-spmv-auto chooses among"
    named = set(re.findall(r"[a-z0-9]+", sentence.group(1)))
    assert {name.removeprefix("cuda-spmv-") for name in AUTO_KERNELS} <= named
    assert "AUTO_KERNELS" in sentence.group(1)
    for left_out in NOT_CHOSEN:
        if left_out.startswith("cuda-spmv-"):   # the tuned ones the README lists
            assert f"leaves `{left_out.removeprefix('cuda-spmv')}` out" in text
