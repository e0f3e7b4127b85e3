"""Seed 002's workload for ``sparsescope analyze``: resample bf16 trajectories to new times.

``B = 64`` trajectories of ``S = 4096`` source steps and ``D = 32`` bf16 channels are
interpolated linearly at ``T = 1024`` sorted target times each::

    r = clamp(searchsorted(src_t[b], tgt_t[b, t], right=True), 1, S - 1),  l = r - 1
    w = clamp((tgt - src_t[b, l]) / (src_t[b, r] - src_t[b, l]), 0, 1)
    out[b, t, :] = lerp(data[b, l, :], data[b, r, :], w)

Every version below is a ``module:function`` workload: a call launches the work on PyTorch's
current stream and returns the output (a bf16 tensor). ``exact`` is the float64 NumPy result
every version (the PyTorch reference included) is checked against.

    sparsescope analyze examples/resample/resample_workload.py:naive --out results/naive

Versions (``addresses`` names the findings of the previous version's roadmap each one acts on):

* ``naive``     -- seed 002's kernel: a thread per output element, binary search in global memory;
* ``smem``      -- seed phase 1: timestamps cached in shared memory;
* ``vec``       -- seed phase 2: + 16-byte vector loads and stores (8 bf16 channels a thread);
* ``warp``      -- seed phase 3: + warp-cooperative 32-ary search;
* ``ours``      -- search only the window of source times a tile of sorted targets can hit;
* ``ours2``     -- find that window in one block-wide round of pivots: 3 dependent round trips
  per block instead of 6;
* ``reference`` -- PyTorch: ``searchsorted`` + ``gather`` + ``lerp``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from sparsescope.analyze.workload import describe

B, S, T, D = 64, 4096, 1024, 32
TILE = 64
BLOCK = 256
SEED = 2
KERNELS = Path(__file__).resolve().parent / "kernels"

#: Compulsory traffic: the two bracketing rows of every target (S = 4 T, so rows are rarely
#: shared), the output, the target times and the source times, each moved once.
IDEAL_BYTES = B * T * (2 * D * 2) + B * T * D * 2 + B * T * 4 + B * S * 4
#: lerp = a subtract and a fused multiply-add per channel, plus the weight per target.
IDEAL_FLOPS = B * T * D * 3 + B * T * 3

_host: dict | None = None
_dev: dict | None = None
_mods: dict = {}


def host_inputs() -> dict:
    """Sorted source and target times (float32) and bf16 data (as uint16 bits), seeded."""
    global _host
    if _host is None:
        rng = np.random.default_rng(SEED)
        src = np.cumsum(0.5 + rng.random((B, S)), axis=1).astype(np.float32)
        src -= src[:, :1] - rng.random((B, 1)).astype(np.float32) * 10
        tgt = np.sort(rng.uniform(src[:, :1], src[:, -1:], (B, T)), axis=1).astype(np.float32)
        values = rng.standard_normal((B, S, D)).astype(np.float32)
        bits = values.view(np.uint32)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        _host = {"src_t": src, "tgt_t": tgt, "data_bits": bits}
    return _host


def exact() -> np.ndarray:
    """The float64 result (the correctness reference of every version)."""
    h = host_inputs()
    data = (h["data_bits"].astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    out = np.empty((B, T, D))
    for b in range(B):
        src = h["src_t"][b].astype(np.float64)
        x = h["tgt_t"][b].astype(np.float64)
        r = np.clip(np.searchsorted(h["src_t"][b], h["tgt_t"][b], side="right"), 1, S - 1)
        t0, t1 = src[r - 1], src[r]
        w = np.clip((x - t0) / (t1 - t0), 0.0, 1.0)[:, None]
        out[b] = data[b, r - 1] + w * (data[b, r] - data[b, r - 1])
    return out


def device_inputs() -> dict:
    """The inputs as torch tensors on the GPU (bf16 data), and the bf16 output buffer."""
    global _dev
    if _dev is None:
        import torch

        h = host_inputs()
        _dev = {"src_t": torch.from_numpy(h["src_t"]).cuda(),
                "tgt_t": torch.from_numpy(h["tgt_t"]).cuda(),
                "data": torch.from_numpy(h["data_bits"].view(np.int16)).cuda()
                .view(torch.bfloat16),
                "out": torch.empty((B, T, D), dtype=torch.bfloat16, device="cuda")}
    return _dev


def _inputs_list():
    d = device_inputs()
    return [d["src_t"], d["tgt_t"], d["data"]]


def _launch(name: str, grid, block, shared: int = 0):
    """Launch kernel ``name`` (compiled once from kernels/<name>.cu) on torch's stream."""
    import cupy
    import torch

    if name not in _mods:
        code = (KERNELS / f"{name}.cu").read_text()
        _mods[name] = cupy.RawModule(code=code, options=("-std=c++17",)).get_function(name)
    d = device_inputs()
    args = (cupy.asarray(d["src_t"]), cupy.asarray(d["tgt_t"]),
            cupy.asarray(d["data"].view(torch.int16)), cupy.asarray(d["out"].view(torch.int16)),
            np.int32(B), np.int32(S), np.int32(T), np.int32(D))
    stream = torch.cuda.current_stream().cuda_stream
    # torch's stream, so torch's events time the kernel (0: the legacy default stream, which
    # is CuPy's default too)
    with cupy.cuda.ExternalStream(stream) if stream else contextlib.nullcontext():
        _mods[name](grid, block, args, shared_mem=shared)
    return d["out"]


_COMMON = dict(ideal_bytes=IDEAL_BYTES, ideal_flops=IDEAL_FLOPS, reference=f"{__name__}:exact",
               inputs=_inputs_list, library="torch", tolerance=2e-2)


@describe(**_COMMON, cuda_source="kernels/resample_naive.cu", kernel="resample_naive",
          name="resample", version="naive")
def naive():
    return _launch("resample_naive", (-(-B * T * D // BLOCK),), (BLOCK,))


@describe(**_COMMON, cuda_source="kernels/resample_smem.cu", kernel="resample_smem",
          name="resample", version="smem", addresses=("dependent_load_chain",))
def smem():
    return _launch("resample_smem", (-(-T // TILE), B), (BLOCK,), S * 4)


@describe(**_COMMON, cuda_source="kernels/resample_vec.cu", kernel="resample_vec",
          name="resample", version="vec", addresses=("narrow_loads",))
def vec():
    return _launch("resample_vec", (-(-T // TILE), B), (BLOCK,), S * 4)


@describe(**_COMMON, cuda_source="kernels/resample_warp.cu", kernel="resample_warp",
          name="resample", version="warp",
          addresses=("dependent_load_chain", "warp_divergence"))
def warp():
    return _launch("resample_warp", (-(-T // TILE), B), (BLOCK,), S * 4)


@describe(**_COMMON, cuda_source="kernels/resample_ours.cu", kernel="resample_ours",
          name="resample", version="ours",
          addresses=("dependent_load_chain", "overfetch", "uncoalesced_access", "bank_conflicts"))
def ours():
    return _launch("resample_ours", (-(-T // TILE), B), (TILE * D // 8,))


@describe(**_COMMON, cuda_source="kernels/resample_ours2.cu", kernel="resample_ours2",
          name="resample", version="ours2", addresses=("dependent_load_chain",))
def ours2():
    return _launch("resample_ours2", (-(-T // TILE), B), (TILE * D // 8,))


@describe(ideal_bytes=IDEAL_BYTES, ideal_flops=IDEAL_FLOPS, reference=f"{__name__}:exact",
          inputs=_inputs_list, library="torch", tolerance=2e-2, name="resample",
          version="pytorch")
def reference():
    """PyTorch: searchsorted + gather + lerp, in bf16 like the kernels' storage."""
    import torch

    d = device_inputs()
    src, tgt, data = d["src_t"], d["tgt_t"], d["data"]
    r = torch.searchsorted(src, tgt, right=True).clamp_(1, S - 1)
    left = r - 1
    t0, t1 = src.gather(1, left), src.gather(1, r)
    w = ((tgt - t0) / (t1 - t0)).clamp_(0, 1)
    d0 = data.gather(1, left.unsqueeze(-1).expand(-1, -1, D))
    d1 = data.gather(1, r.unsqueeze(-1).expand(-1, -1, D))
    return torch.lerp(d0, d1, w.unsqueeze(-1).to(data.dtype))


VERSIONS = ("naive", "smem", "vec", "warp", "ours", "ours2")
