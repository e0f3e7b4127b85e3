"""The row-tile SpMM kernel compiled for sm_90 (no GPU needed; skipped without a compiler and
cuobjdump), through the SASS cache the time model reads (``sass.kernel_shape.kernel_mlps_of``,
one compile for every instance): the instances the host rules pick build without spilling,
within the registers their ``__launch_bounds__`` allow, and stage through cp.async."""

from __future__ import annotations

import pytest

from sparsescope.backends.spmm_rowtile import SOURCE, launch_stages, rowtile_kernel_name

pytestmark = pytest.mark.slow   # one compile of the instances: 3-4 s on two cores

#: (value dtype, index bytes, R, VEC, C, warps, column-major): the defaults of a 1,024-square
#: 80 % weight at k 256 (both layouts) and k 32, the widest accumulators of each value type and
#: the largest stages (192 KB a block). (Every instance the rules can pick -- R, VEC, C, warps,
#: layout and value type, 330 -- built without spills with nvcc 13.0 when this was written; a
#: test compiles these few.)
SHAPES = [("float32", 4, 32, 2, 32, 8, False), ("float32", 4, 32, 2, 32, 8, True),
          ("float32", 4, 8, 1, 32, 8, False), ("float32", 8, 64, 4, 32, 8, False),
          ("float64", 8, 32, 2, 32, 8, False), ("float64", 8, 64, 2, 64, 8, True)]


def _name(dtype, ib, r, vec, c, warps, col):
    stages, minb = launch_stages(4 if dtype == "float32" else 8, r, vec, c, warps, col)
    return rowtile_kernel_name(dtype, ib, r, vec, c, warps, stages, col, minb), warps


@pytest.fixture(scope="module")
def compiled(session_cache):
    from sparsescope.sass.kernel_shape import kernel_mlps_of, sass_tools_available

    if not sass_tools_available():
        pytest.skip("no CUDA compiler or cuobjdump")
    names = [_name(*shape)[0] for shape in SHAPES]
    with pytest.MonkeyPatch.context() as patch:   # the session's cache, not the user's (a
        # module fixture runs before conftest's per-test one sets it)
        patch.setenv("SPARSESCOPE_CACHE", str(session_cache))
        found = kernel_mlps_of(SOURCE, names)
    assert all(found[n] is not None for n in names), [n for n in names if found[n] is None]
    return found


@pytest.mark.parametrize("shape", SHAPES, ids=[_name(*s)[0] for s in SHAPES])
def test_instance_builds_without_spills_within_its_bound(compiled, shape):
    name, warps = _name(*shape)
    mlp = compiled[name]
    minb = int(name.rstrip(">").rsplit(",", 1)[1])
    assert 0 < mlp.registers <= 65536 // (32 * warps * minb)
    assert mlp.local_frame_bytes == 0 and mlp.local_bytes_per_iteration == 0   # no spills
    assert mlp.staged   # X, entries and offsets travel by cp.async (LDGSTS)
    assert mlp.shared_bytes <= 1024   # static: only what sm_90 reserves; the stages are dynamic
