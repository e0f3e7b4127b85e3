"""One entry to the time models of the own SpMM kernels: the CSR kernels' (rowwarp, rowgroup,
colmajor: :mod:`.spmm_predict`), the block tensor-core kernels' (:mod:`.blocktc_predict`,
:mod:`.paneltc_predict`) and the row-tile kernel's (X staged in shared memory: :mod:`.rowtile`),
with the device transposes around the kernel (``spmm-cuda-transposed``: :mod:`.transpose`)
added to either::

    predicted = kernel's prediction + transposes      (kernels one after another on a stream)
"""

from __future__ import annotations

from dataclasses import replace

from sparsescope.model.blocktc_predict import BlockTcLaunch, predict_blocktc
from sparsescope.model.paneltc_predict import PanelTcLaunch, predict_paneltc
from sparsescope.model.prediction import ModelPrediction
from sparsescope.model.rowtile import RowTileLaunch, predict_rowtile
from sparsescope.model.spmm_predict import SpmmLaunch, predict_spmm

OWN_SPMM_LAUNCHES = (SpmmLaunch, BlockTcLaunch, PanelTcLaunch, RowTileLaunch)


def predict_own_spmm(indptr, indices, cols: int, k: int, launch, rates, *, flushed: bool,
                     fp64: bool = False) -> ModelPrediction:
    """The model of the launch's type: a :class:`BlockTcLaunch` -> ``predict_blocktc``; a
    :class:`PanelTcLaunch` -> ``predict_paneltc``; a
    :class:`RowTileLaunch` -> ``predict_rowtile``; an :class:`SpmmLaunch` -> ``predict_spmm``;
    then :func:`with_transposes_time` for the launch's ``transposes``."""
    if isinstance(launch, BlockTcLaunch):
        kernel = predict_blocktc(launch, rates, flushed=flushed)
    elif isinstance(launch, PanelTcLaunch):
        kernel = predict_paneltc(launch, rates, flushed=flushed)
    elif isinstance(launch, RowTileLaunch):
        kernel = predict_rowtile(launch, rates, flushed=flushed)
    else:
        kernel = predict_spmm(indptr, indices, cols, k, launch, rates, flushed=flushed,
                              fp64=fp64)
    return with_transposes_time(kernel, launch, rates)


def with_transposes_time(prediction: ModelPrediction, launch, rates) -> ModelPrediction:
    """``prediction`` plus the ``transposes`` term of ``launch.transposes`` (none: unchanged);
    the limiter becomes ``transposes`` when they take longer than the kernel itself (its
    prediction less the call overhead).
    Hand check: a 10 us kernel and 25 us of transposes -> 35 us, limiter ``transposes``."""
    shapes = getattr(launch, "transposes", ())
    if not shapes or prediction.predicted_ms is None:
        return prediction
    from sparsescope.model.transpose import transposes_term

    term, times = transposes_term(shapes, launch.value_bytes, rates)
    overhead = prediction.term("overhead")
    bound = prediction.predicted_ms - (overhead.time_ms if overhead else 0.0)
    limiter = "transposes" if term.time_ms > bound else prediction.limiter
    inputs = {**prediction.inputs, "transposes_ms": term.time_ms,
              "transpose_tiles": float(sum(t.tiles for t in times))}
    return replace(prediction, predicted_ms=prediction.predicted_ms + term.time_ms,
                   limiter=limiter, terms=prediction.terms + (term,), inputs=inputs,
                   assumptions=prediction.assumptions + (
                       "device transposes: their own kernels, added to the SpMM kernel's time "
                       "(model.transpose)",))
