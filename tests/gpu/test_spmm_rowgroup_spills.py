"""The rowgroup instances the host rules pick, compiled by the compiler that runs them (CuPy's
NVRTC on the device): none that runs a grid of one wave spills (a store and a load to local
memory in the gather loop, which a cold call pays: the k = 64 float32 instance under MINB 4
spilled 16 bytes a thread, 6,543 local requests on bcspwr06 under ncu, H200), and the float32
MINB 4 instances that grids over a wave take (:func:`wave_minb`) spill little, and not at all
at auto's spill-free BATCH."""

from __future__ import annotations

import pytest

from sparsescope.backends import _gpu
from sparsescope.backends.spmm_rowgroup import (
    BLOCK_SUM_MINB,
    DEFAULT_MINB,
    ELL_MINB,
    SOURCE,
    SPILL_FREE_BATCH,
    WAVE_MINB,
    rowgroup_kernel_name,
    rowgroup_layout,
)

pytestmark = pytest.mark.gpu
#: Local memory a thread the float32 MINB 4 instances may take: 8-48 bytes measured (H200,
#: CuPy's NVRTC, 2026-11-28), a trade for 32 warps an SM that wave_minb makes only over a wave.
MINB4_LOCAL_BYTES = 64
#: The MINB 4 instances at BATCH SPILL_FREE_BATCH, named apart: they must not spill at all.
SPILL_FREE = -4


def picked_instances() -> dict[str, int]:
    """Each instance the host rules can name (default DEPTH and BATCH) for k = 1 .. 600, both
    value types, both index widths, VEC by the rule and narrowed (auto's vec=2 and vec=1
    candidates), block-summed or not, at each MINB :func:`wave_minb` can give, on ELL rows
    (auto's ell=1, at ELL_MINB), and auto's spill-free candidate (MINB 4 at BATCH 4): name ->
    MINB (SPILL_FREE for the last)."""
    names = {}
    for value_dtype in ("float32", "float64"):
        for index_bytes in (4, 8):
            for k in (1, 2, 3, 4, 6, 8, 16, 32, 33, 64, 128, 256, 512, 600):
                for vec in (None, 2, 1):
                    try:
                        _, shape, stages = rowgroup_layout(k, value_dtype, vec=vec)
                    except ValueError:
                        continue
                    for minb in {WAVE_MINB, DEFAULT_MINB[value_dtype]}:
                        names[rowgroup_kernel_name(value_dtype, index_bytes, shape, stages,
                                                   minb)] = minb
                    # on ELL rows (auto's ell=1): always ELL_MINB
                    names[rowgroup_kernel_name(value_dtype, index_bytes, shape, stages,
                                               ELL_MINB, ell=True)] = ELL_MINB
                    if value_dtype == "float32" and stages[1] > SPILL_FREE_BATCH:
                        # auto's spill-free candidate over a wave: MINB 4 at BATCH 4 (with
                        # int64 indices nvrtc 13.5 spills <float, long long, 4, 4, 1, 4, 4, 4>:
                        # those only within the MINB 4 bound)
                        spill_free = (stages[0], SPILL_FREE_BATCH)
                        names[rowgroup_kernel_name(value_dtype, index_bytes, shape,
                                                   spill_free, 4)] = (SPILL_FREE if index_bytes
                                                                      == 4 else 4)
                    names[rowgroup_kernel_name(value_dtype, index_bytes, shape, stages,
                                               None, True)] = BLOCK_SUM_MINB
    return names


def test_picked_rowgroup_instances_spill_only_over_a_wave():
    picked = picked_instances()
    module = _gpu.raw_module(SOURCE, tuple(sorted(picked)))
    local = {name: module.get_function(name).attributes["local_size_bytes"] for name in picked}
    one_wave = {name: b for name, b in local.items()
                if picked[name] in (WAVE_MINB, SPILL_FREE) and b}
    assert not one_wave, (f"local memory (bytes a thread) under MINB {WAVE_MINB} or at BATCH "
                          f"{SPILL_FREE_BATCH}: {one_wave}")
    over = {name: b for name, b in local.items() if b > MINB4_LOCAL_BYTES}
    assert not over, f"local memory (bytes a thread) over {MINB4_LOCAL_BYTES}: {over}"
