"""Operations: what an op computes, its input, its float64 reference and its correctness check.

Each op's class lives in its own module (``ops.spmv``, ``ops.spmm``, ``ops.slice_rows``), its
typed parameters in :mod:`sparsescope.ops.params`, and the table naming them in
:mod:`sparsescope.registry`. Byte and flop models of the ops live in ``sparsescope.model``.
This package imports nothing on import: the records stage imports its parameter records.
"""
