"""One entry to the time models of the own SpMM kernels: the CSR kernels' (rowwarp, rowgroup:
:mod:`.spmm_predict`) and the block tensor-core kernel's (:mod:`.blocktc_predict`)."""

from __future__ import annotations

from sparsescope.model.blocktc_predict import BlockTcLaunch, predict_blocktc
from sparsescope.model.prediction import ModelPrediction
from sparsescope.model.spmm_predict import SpmmLaunch, predict_spmm

OWN_SPMM_LAUNCHES = (SpmmLaunch, BlockTcLaunch)


def predict_own_spmm(indptr, indices, cols: int, k: int, launch, rates, *, flushed: bool,
                     fp64: bool = False) -> ModelPrediction:
    """Either model, by the launch's type: a :class:`BlockTcLaunch` -> ``predict_blocktc``;
    an :class:`SpmmLaunch` -> ``predict_spmm``."""
    if isinstance(launch, BlockTcLaunch):
        return predict_blocktc(launch, rates, flushed=flushed)
    return predict_spmm(indptr, indices, cols, k, launch, rates, flushed=flushed, fp64=fp64)
