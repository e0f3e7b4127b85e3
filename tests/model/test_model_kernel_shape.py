"""The declared kernel shape (``model.kernel_shape``): validation, warps per block, the label that
pairs staged kernels with their siblings, and the resident blocks per SM.

(Named apart from ``tests/sass/test_kernel_shape.py``, which checks the SASS refinement.)"""

from __future__ import annotations

import dataclasses

import pytest

from sparsescope.model.kernel_shape import KernelShape, resident_blocks


def shape(**kw) -> KernelShape:
    base = dict(kernel="csr_scalar<float, int>", decomposition="rows", block_threads=256,
                grid_blocks=10)
    return KernelShape(**{**base, **kw})


@pytest.mark.parametrize("bad, message", [
    (dict(decomposition="cols"), "decomposition must be one of"),
    (dict(threads_per_row=3), "threads_per_row must divide 32, got 3"),
    (dict(threads_per_row=0), "threads_per_row must divide 32, got 0"),
    (dict(block_threads=0), "block_threads must be positive"),
    (dict(grid_blocks=-1), "grid_blocks non-negative"),
])
def test_a_bad_shape_is_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        shape(**bad)


def test_replace_validates_too():
    with pytest.raises(ValueError, match="threads_per_row"):
        dataclasses.replace(shape(), threads_per_row=6)


@pytest.mark.parametrize("threads, warps", [(256, 8), (32, 1), (1, 1), (33, 2), (100, 4)])
def test_warps_per_block_is_ceil_threads_over_32(threads, warps):
    assert shape(block_threads=threads).warps_per_block == warps


def test_label_names_the_split_not_the_unroll_or_the_staging():
    assert shape().label == "1 thread per row"
    assert shape(threads_per_row=8, nnz_per_iteration=4).label == "8 threads per row"
    assert shape(decomposition="nnz", nnz_per_iteration=8).label == "nonzeros split evenly"
    # a staged kernel and its unstaged sibling (another unroll) share the label: a DAE pair
    assert shape(staged=True, nnz_per_iteration=12).label == shape(staged=False).label


def test_resident_blocks_hand_checks():
    # 256-thread blocks, 2,048 threads per SM, 32 blocks max, occupancy unknown: 2048 / 256 = 8
    assert resident_blocks(shape(block_threads=256), 2048, 32) == 8
    # occupancy (registers, shared memory) allows 3: min(8, 32, 3) = 3
    assert resident_blocks(shape(block_threads=256, resident_blocks_per_sm=3), 2048, 32) == 3
    # 1,024-thread blocks: 2048 / 1024 = 2
    assert resident_blocks(shape(block_threads=1024), 2048, 32) == 2
    # 32-thread blocks: the block limit binds, min(64, 16) = 16
    assert resident_blocks(shape(block_threads=32), 2048, 16) == 16
    # a declared occupancy above the thread limit does not raise it: min(8, 32, 12) = 8
    assert resident_blocks(shape(block_threads=256, resident_blocks_per_sm=12), 2048, 32) == 8
    # a block larger than the SM's thread limit still counts one block
    assert resident_blocks(shape(block_threads=1024), 512, 32) == 1


def test_resident_blocks_from_the_sass_registers():
    from sparsescope.model.kernel_shape import blocks_per_sm

    # 40 registers a thread, 256 threads: 65536 / (40 x 256) = 6.4 -> 6 (minb 6's budget)
    assert resident_blocks(shape(block_threads=256, registers=40), 2048, 32) == 6
    # 37 registers are allocated as 40: still 6; 32: 65536 / 8192 = 8, the thread limit too
    assert resident_blocks(shape(block_threads=256, registers=37), 2048, 32) == 6
    assert resident_blocks(shape(block_threads=256, registers=32), 2048, 32) == 8
    # static shared memory: (228 KB) / (40 KB + 1 KB) = 5
    assert resident_blocks(shape(block_threads=256, registers=32, shared_bytes=40 * 1024),
                           2048, 32) == 5
    # an SM of 100 KB of shared memory (A100-class spec): 102400 / 41984 = 2
    assert resident_blocks(shape(block_threads=256, registers=32, shared_bytes=40 * 1024),
                           2048, 32, smem_per_sm=100 * 1024) == 2
    # the device's own answer wins over the registers
    assert resident_blocks(shape(block_threads=256, registers=40, resident_blocks_per_sm=7),
                           2048, 32) == 7
    # the formula's hand check: 47 registers, 512 threads -> 65536 / (48 x 512) = 2
    assert blocks_per_sm(47, 512) == 2
