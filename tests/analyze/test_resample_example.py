"""The worked example (examples/resample, seed 002) on the CPU: its inputs and float64
reference, and what static analysis of its six kernels finds (one nvcc call for all)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from sparsescope.analyze.api import analyze_evidence
from sparsescope.analyze.evidence import static_evidence
from sparsescope.analyze.sources import evidence_from_sass
from sparsescope.analyze.workload import bf16_bits_to_float, callable_workload

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "resample"
VERSIONS = ("naive", "smem", "vec", "warp", "ours", "ours2")


@pytest.fixture(scope="module")
def module():
    spec = importlib.util.spec_from_file_location("resample_workload_test",
                                                  EXAMPLE / "resample_workload.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    del sys.modules[spec.name]


@pytest.fixture(scope="module")
def kernels(module, tmp_path_factory):
    """name -> KernelAnalysis of the six versions, compiled together (each file in its own
    namespace so their helpers do not clash)."""
    from sparsescope._tools import find_tool
    from sparsescope.sass.analysis import analyse_source

    if find_tool("nvcc") is None:
        pytest.skip("nvcc not found")
    text = "\n".join(f"namespace v_{v} {{\n{(EXAMPLE / 'kernels' / f'resample_{v}.cu').read_text()}"
                     f"\n}}" for v in VERSIONS)
    out = tmp_path_factory.mktemp("resample")
    src = out / "resample_all.cu"
    src.write_text(text)
    return {a.name: a for a in analyse_source(src, arch="sm_90", out_dir=out)}


def test_ideal_bytes_and_inputs(module):
    # 64 x 1024 targets: two 64-byte bf16 rows read, one written, a target time; 64 x 4096
    # source times
    assert module.IDEAL_BYTES == 64 * 1024 * (128 + 64 + 4) + 64 * 4096 * 4 == 13_893_632
    h = module.host_inputs()
    assert h["src_t"].shape == (64, 4096) and h["data_bits"].dtype == np.uint16
    assert np.all(np.diff(h["src_t"], axis=1) > 0) and np.all(np.diff(h["tgt_t"], axis=1) >= 0)
    assert np.all(h["tgt_t"] >= h["src_t"][:, :1]) and np.all(h["tgt_t"] <= h["src_t"][:, -1:])


def test_exact_matches_a_scalar_emulation(module):
    h, ref = module.host_inputs(), module.exact()
    assert ref.shape == (64, 1024, 32)
    for b, t, d in ((0, 0, 0), (5, 511, 17), (63, 1023, 31)):
        src, x = h["src_t"][b], h["tgt_t"][b, t]
        lo, hi = 0, 4096
        while lo < hi:  # the naive kernel's search
            mid = (lo + hi) // 2
            lo, hi = (mid + 1, hi) if src[mid] <= x else (lo, mid)
        r = min(max(lo, 1), 4095)
        w = min(max((float(x) - float(src[r - 1])) / (float(src[r]) - float(src[r - 1])), 0), 1)
        v = [float(bf16_bits_to_float(h["data_bits"][b, k, d:d + 1])[0]) for k in (r - 1, r)]
        assert ref[b, t, d] == pytest.approx(v[0] + w * (v[1] - v[0]), rel=1e-12, abs=1e-12)


def test_versions_are_described_workloads(module):
    for v in (*VERSIONS, "reference"):
        w = callable_workload(f"{EXAMPLE / 'resample_workload.py'}:{v}")
        assert w.ideal_bytes == module.IDEAL_BYTES and w.library == "torch"
        assert w.reference.endswith(":exact") and w.name == "resample"
    w = callable_workload(f"{EXAMPLE / 'resample_workload.py'}:vec")
    assert w.addresses == ("narrow_loads",) and w.cuda_source.name == "resample_vec.cu"
    assert w.kernel == "resample_vec"


def test_static_findings_of_each_version(kernels):
    found = {}
    for v in VERSIONS:
        a = kernels[f"resample_{v}"]
        ev = evidence_from_sass([a], workload="resample", version=v, block_threads=256)
        found[v] = {f.rule: f for f in analyze_evidence(ev).findings}
    # naive: the per-thread search in global memory, and 2-byte bf16 loads
    assert found["naive"]["dependent_load_chain"].numbers["searches"] == 1
    assert found["naive"]["narrow_loads"].numbers["widths_bytes"] == "2"
    # smem: the search moved to shared memory; the bf16 loads are still 2 bytes
    assert "dependent_load_chain" not in found["smem"] and "narrow_loads" in found["smem"]
    # vec, warp, ours, ours2: 16-byte vectors
    for v in ("vec", "warp", "ours", "ours2"):
        assert "narrow_loads" not in found[v]
        widths = {x.width_bytes for x in static_evidence(kernels[f"resample_{v}"]).accesses
                  if x.space == "global" and x.op == "store"}
        assert widths == {16}
    # ours and ours2 keep a global search only on their fallback path (profile counts show it
    # cold)
    for v in ("ours", "ours2"):
        assert found[v]["dependent_load_chain"].numbers["searches"] == 1
