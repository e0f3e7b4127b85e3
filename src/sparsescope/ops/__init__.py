"""Operations: what an op computes, its input, its float64 reference and its correctness check.

Byte and flop models of the ops live in ``sparsescope.model``.
"""

from sparsescope.ops.spmv import DEFAULT_TOLERANCE, check_output, make_x, reference_spmv

__all__ = ["DEFAULT_TOLERANCE", "check_output", "make_x", "reference_spmv"]
