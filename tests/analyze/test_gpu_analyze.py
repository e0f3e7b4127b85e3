"""``sparsescope analyze`` on a real GPU: a CUDA-source workload, the worked example's
versions (correct against float64), and a profiled analysis when ncu is there."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "resample" / "resample_workload.py"

SAXPY = r"""
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x,
                                 float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
"""


@pytest.fixture
def saxpy_workload(tmp_path):
    from sparsescope.analyze.workload import cuda_workload

    (tmp_path / "saxpy.cu").write_text(SAXPY)
    (tmp_path / "saxpy_ref.py").write_text(
        "import numpy as np\ndef ref(h):\n    return (h['a'] * h['x'].astype(np.float64),)\n")
    return cuda_workload(tmp_path / "saxpy.cu", "saxpy", "(n+255)//256", "256",
                         "n:i32=1048576; a:f32=2.5; x:f32[n]=rand; y:f32[n]=zeros!out",
                         reference=f"{tmp_path / 'saxpy_ref.py'}:ref")


def test_cuda_workload_timed_and_checked(saxpy_workload):
    from sparsescope.analyze.api import analyze_evidence
    from sparsescope.analyze.measure import measure
    from sparsescope.timing.types import TimingConfig

    ev = measure(saxpy_workload, timing=TimingConfig(warmups=2, repeats=10), profile=False)
    assert ev.time_ms and ev.time_ms > 0 and ev.time_source == "cuda-events"
    assert ev.correctness["passed"] and ev.correctness["rel_err"] < 1e-6
    assert ev.ideal_bytes == 8 * 1048576 and ev.floor_ms > 0
    assert len(ev.timing["samples_ms"]) >= 10
    result = analyze_evidence(ev)
    assert result.bottlenecks[0].bound in ("bandwidth", "latency")


@pytest.mark.parametrize("version", ["naive", "smem", "vec", "warp", "ours", "ours2", "reference"])
def test_resample_versions_match_float64(version):
    from sparsescope.analyze.measure import check_correctness, instantiate
    from sparsescope.analyze.workload import callable_workload

    w = callable_workload(f"{EXAMPLE}:{version}")
    result = check_correctness(instantiate(w), w.tolerance)
    assert result["passed"], result


def test_profiled_analysis_of_naive(tmp_path):
    from sparsescope.profile.collect import find_ncu

    if find_ncu() is None:
        pytest.skip("ncu not found")
    from sparsescope.cli import main

    rc = main(["analyze", f"{EXAMPLE}:naive", "--repeats", "10", "--out", str(tmp_path)],
              modules=["sparsescope.cli.analyze_cmd"])
    assert rc == 0
    from sparsescope.analyze.api import read_analysis

    result = read_analysis(tmp_path / "analysis.json")
    k = result.evidence.kernels[0]
    assert k.name == "resample_naive" and k.profile is not None and k.profile.instructions
    assert "dependent_load_chain" in {f.rule for f in result.findings}
    assert result.roadmap and (tmp_path / "report.html").is_file()
