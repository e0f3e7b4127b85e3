"""The worked example's H200 run (results/h200/resample) read back on the CPU: re-analysis from a
live run's files (--from-measurement), multi-kernel launch accounting (the PyTorch reference:
template instances sharing a function name, a source page that repeats blocks), and what the
series report says moved between versions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparsescope._compressed import compress, read_bytes, read_json, without_compression
from sparsescope.analyze.api import analyze_evidence, read_analysis
from sparsescope.analyze.measure import evidence_from_measurement
from sparsescope.analyze.score import evidence_changes
from sparsescope.analyze.sources import assign_samples
from sparsescope.cli import main
from sparsescope.errors import ResultsFormatError
from sparsescope.profile.records import InstructionSample

RUN = Path(__file__).resolve().parents[2] / "results" / "h200" / "resample"
MODULES = ["sparsescope.cli.analyze_cmd"]



def test_the_recorded_run_is_committed():
    """The run these tests read is part of the repository (its records compacted to
    ``.json.xz``): a missing one fails here, by name, instead of skipping the module."""
    for version in ("naive", "ours2", "spmv", "vec"):
        assert (RUN / version / "measurement.json.xz").is_file(), f"{RUN / version}"


@pytest.mark.parametrize("version", ["naive", "ours2", "spmv"])
def test_reanalysis_reproduces_the_live_analysis(version):
    ev = evidence_from_measurement(RUN / version)
    again = analyze_evidence(ev)
    live = read_analysis(RUN / version / "analysis.json.xz")
    assert ev.time_ms == live.evidence.time_ms and ev.time_source == "cuda-events"
    assert ev.correctness == live.evidence.correctness
    assert [f.rule for f in again.findings] == [f.rule for f in live.findings]
    # the stored analysis keeps 7 significant digits (results compact): within 1e-6
    assert [it.rule for it in again.roadmap] == [it.rule for it in live.roadmap]
    assert [it.predicted_speedup for it in again.roadmap] == pytest.approx(
        [it.predicted_speedup for it in live.roadmap], rel=1e-6)
    assert ev.notes[-1].startswith("re-analysed from measurement.json")


def test_reference_launches_counted_per_template_instance():
    # 13 launches of 10 distinct kernels; 3 function names are shared by template instances,
    # the source page (kept xz-compressed) printed 22 blocks for the 13 launches
    ev = evidence_from_measurement(RUN / "pytorch")
    names = [k.name for k in ev.kernels]
    assert len(names) == 10 and len(set(names)) == 10
    assert sum(k.launches for k in ev.kernels) == 13
    assert {k.name: k.launches for k in ev.kernels}["_scatter_gather_elementwise_kernel#10"] == 2
    assert sum(k.time_share for k in ev.kernels) == pytest.approx(1.0)
    assert all(k.profile.instructions for k in ev.kernels)
    search = next(k for k in ev.kernels if k.name == "searchsorted_cuda_kernel")
    assert sum(i.executed for i in search.profile.instructions) == 665_840


def _sample(kernel: str, executed: int, samples: int) -> InstructionSample:
    return InstructionSample(kernel, 0x100, "LDC R1, c[0x0][0x28]", samples, 0, executed,
                             32 * executed, 32 * executed, {"wait": samples} if samples else {})


def _launch(index: int, name: str, demangled: str):
    return SimpleNamespace(index=index, name=name, demangled_name=demangled, block_size=128,
                           grid_size=64)


def test_assign_samples_merges_repeated_blocks_and_keeps_launch_order():
    full = "void at::native::vectorized_elementwise_kernel<(int)4, Add<float>>(int, T2, T3)"
    other = "void at::native::elementwise_kernel<(int)128, Lerp>(int, T3)"
    launches = [_launch(0, "vectorized_elementwise_kernel", "vectorized_elementwise_kernel<4>"),
                _launch(1, "vectorized_elementwise_kernel", "vectorized_elementwise_kernel<4>"),
                _launch(2, "elementwise_kernel", "elementwise_kernel<128>")]
    first, second = (_sample(full, 200, 44),), (_sample(full, 200, 47),)
    blocks = {0: first, 1: first, 2: second, 3: second, 4: (_sample(other, 9, 1),)}
    got = assign_samples(launches, blocks)
    assert got[0] == first and got[1] == second and got[2][0].kernel == other
    # one block per launch, keyed by launch index: taken as they are
    assert assign_samples(launches[:1], {0: second}) == {0: second}
    # a launch with no block naming its kernel gets none
    assert assign_samples([_launch(7, "searchsorted_cuda_kernel", "s")], blocks) == {}


def test_what_moved_between_versions():
    naive, smem = (read_analysis(RUN / v / "analysis.json.xz") for v in ("naive", "smem"))
    changes = {label: (a, b) for label, a, b in evidence_changes(naive, smem)}
    # the profiles' own counters: DRAM read + write bytes, warp instructions of the source page
    assert changes["DRAM bytes"] == (7_860_992 + 4_352, 7_862_784 + 6_144)
    assert changes["warp instructions"] == (19_268_284, 15_852_178)
    assert changes["CPI"] == (pytest.approx(27.5, abs=0.01), pytest.approx(20.91, abs=0.01))


def test_cli_from_measurement(tmp_path, capsys):
    out = tmp_path / "again"
    rc = main(["analyze", "--from-measurement", str(RUN / "vec"), "--out", str(out), "--json"],
              modules=MODULES)
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["analysis"]["addresses"] == ["narrow_loads"]
    assert read_analysis(out / "analysis.json").version == "vec"


def test_from_measurement_needs_the_record(tmp_path):
    with pytest.raises(ResultsFormatError, match="measurement.json: no such file"):
        evidence_from_measurement(tmp_path)


def test_from_measurement_reads_xz_exports_as_gzipped_ones(tmp_path):
    """Results folders keep the profile's exports as xz (``*_raw.csv.xz``, before as ``.gz``):
    ours2's run laid out both ways re-analyses the same; a damaged xz export is an error
    naming it."""
    folders = {kind: tmp_path / kind for kind in ("gz", "xz")}
    for kind, folder in folders.items():
        folder.mkdir()
        for path in (RUN / "ours2").iterdir():
            name = without_compression(path.name)
            if name.endswith(".csv"):      # the exports, compressed the one way
                (folder / f"{name}.{kind}").write_bytes(compress(read_bytes(path), f"x.{kind}"))
            else:
                shutil.copy(path, folder / path.name)

    def seen(ev):
        return (ev.time_ms, [(k.name, k.launches, k.time_share) for k in ev.kernels],
                [f.rule for f in analyze_evidence(ev).findings])

    assert seen(evidence_from_measurement(folders["xz"])) == \
        seen(evidence_from_measurement(folders["gz"]))
    raw = folders["xz"] / "profile_resample_ours2_raw.csv.xz"
    raw.write_bytes(raw.read_bytes()[:-40])
    with pytest.raises(ResultsFormatError, match="damaged xz data") as err:
        evidence_from_measurement(folders["xz"])
    assert str(err.value).startswith(f"{raw}: ")


def test_live_measure_assembles_the_evidence_without_a_gpu(tmp_path, monkeypatch):
    """measure() with the GPU steps replaced by the run's own outputs: the timing (fixed
    samples), the check (exact), and the ncu exports of ours2."""
    import numpy as np

    from sparsescope.analyze import measure as M
    from sparsescope.analyze.workload import Workload
    from sparsescope.profile.collect import ProfileRun
    from sparsescope.timing.types import Measurement, TimingConfig

    recorded = read_json(RUN / "ours2" / "measurement.json.xz")
    workload = Workload.from_dict({**recorded["workload"], "cuda_source": None})
    live = read_analysis(RUN / "ours2" / "analysis.json.xz")
    monkeypatch.setattr(M, "_device", lambda: (live.evidence.device, None))
    monkeypatch.setattr(M, "instantiate", lambda w: M.Instance(
        lambda: np.ones(4), "torch", lambda: np.ones(4), None, ("bfloat16",)))
    samples = (0.0105, 0.0106, 0.0110)
    monkeypatch.setattr("sparsescope.timing.cuda.time_cuda", lambda fn, cfg, **kw: Measurement(
        samples, cfg, True, "cuda-events", ()))
    stem = RUN / "ours2" / "profile_resample_ours2"
    monkeypatch.setattr(M, "profile_once", lambda w, out, ncu=None: ProfileRun(
        Path(f"{stem}.ncu-rep"), Path(f"{stem}_raw.csv.xz"), Path(f"{stem}_details.csv.xz"),
        Path(f"{stem}_source.csv.xz"), Path(f"{stem}.ncu.log"), (), "ncu 2025.3"))
    ev = M.measure(workload, timing=TimingConfig(warmups=1, repeats=3), out_dir=tmp_path)
    assert ev.time_ms == 0.0106 and ev.correctness["passed"] and ev.correctness["rel_err"] == 0
    assert ev.floor_ms == pytest.approx(13_893_632 / 4.8e12 * 1e3)
    k = ev.kernels[0]
    assert k.name == "resample_ours2" and k.launches == 1 and k.profile.instructions
    written = json.loads((tmp_path / "measurement.json").read_text())
    assert written["time_ms"] == 0.0106 and written["timing"]["samples_ms"] == list(samples)
    assert written["device_evidence"]["name"] == live.evidence.device.name
    assert [f.rule for f in analyze_evidence(ev).findings] == [f.rule for f in live.findings]
