"""ncu command construction and error interpretation, run against a fake ncu on PATH that prints
the real ncu's messages (see conftest.FAKE_NCU)."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

from sparsescope import _tools
from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.profile import metrics as M
from sparsescope.profile.collect import (
    CollectOptions,
    NcuResult,
    build_ncu_command,
    check_backend_op,
    export_command,
    find_ncu,
    interpret_ncu_output,
    profile_stem,
    run_profile,
    target_command,
)
from sparsescope.profile.errors import ProfileError

TARGET = target_command("seed", "cant", "torch-cusparse-i64")
CASE = [sys.executable, "-m", "sparsescope.target", "case"]


def test_target_command():
    # SpMV runs through the one target too, checked once and not timed (no warmups/repeats)
    assert TARGET == CASE + ["--op", "spmv", "--suite", "seed", "--matrix", "cant",
                             "--backend", "torch-cusparse-i64", "--scale", "1.0",
                             "--check-only"]


def test_target_command_spmm_runs_the_target_with_every_parameter():
    assert target_command("dlmc3", "dlmc-512x1024", "spmm-cuda-rowwarp", op="spmm",
                          scale=0.5, params={"k": 64}) == CASE + [
        "--op", "spmm", "--suite", "dlmc3", "--matrix", "dlmc-512x1024",
        "--backend", "spmm-cuda-rowwarp", "--scale", "0.5",
        "--param", "k=64", "--param", "layout=row", "--check-only"]
    assert target_command("dlmc3", "dlmc-128x256", "spmm-torch-i32", op="spmm",
                          params={"layout": "col", "k": 1}) == CASE + [
        "--op", "spmm", "--suite", "dlmc3", "--matrix", "dlmc-128x256",
        "--backend", "spmm-torch-i32", "--scale", "1.0",
        "--param", "k=1", "--param", "layout=col", "--check-only"]
    # warmups/repeats are no parameter of target_command any more
    with pytest.raises(TypeError):
        target_command("dlmc3", "dlmc-128x256", "spmm-torch-i32", op="spmm", warmups=9)


def test_target_command_slice_runs_the_target_with_every_parameter():
    assert target_command("slice003", "slice-1000", "slice-cuda-gather", op="slice") == (
        CASE + ["--op", "slice", "--suite", "slice003", "--matrix", "slice-1000",
                "--backend", "slice-cuda-gather", "--scale", "1.0",
                "--param", "rows_selected=64", "--param", "weights=per-nnz",
                "--param", "out_of_range=error", "--check-only"])
    assert target_command("slice003", "slice-10000", "slice-torch", op="slice",
                          params={"rows": (3, 1, 3), "weights": "scalar",
                                  "out_of_range": "zero"})[-9:] == [
        "--param", "rows_selected=64", "--param", "rows=3,1,3", "--param", "weights=scalar",
        "--param", "out_of_range=zero", "--check-only"]


@pytest.mark.parametrize("backend, op, error, message", [
    ("spmm-cuda-rowwarp", "slice", UsageError,
     "backend 'spmm-cuda-rowwarp' does not support op 'slice' (it implements spmm); "
     "backends for slice: slice-brainevent, slice-cuda-gather, slice-cuda-scatter, "
     "slice-cupy-i32, slice-scipy-cpu, slice-torch"),
    ("torch-cusparse-i64", "spmm", UsageError,
     "backend 'torch-cusparse-i64' does not support op 'spmm' (it implements spmv); "
     "backends for spmm: spmm-cublas-dense, spmm-cuda-auto, spmm-cuda-auto-rules, "
     "spmm-cuda-blocktc, spmm-cuda-colmajor, spmm-cuda-ell, spmm-cuda-paneltc, "
     "spmm-cuda-rowgroup, spmm-cuda-rowtile, "
     "spmm-cuda-rowwarp, spmm-cuda-transposed, spmm-cupy-i32, spmm-ginkgo, spmm-nvmath-i32, "
     "spmm-scipy-cpu, spmm-torch-i32, spmm-torch-i64"),
    ("slice-torch", "spmv", UsageError,
     "backend 'slice-torch' does not support op 'spmv' (it implements slice); "
     "backends for spmv: "),
    ("torch", "spmm", UnknownNameError,
     "unknown spmm backend 'torch'; known: spmm-cublas-dense, spmm-cuda-auto,"),
])
def test_backend_must_implement_the_op(backend, op, error, message):
    with pytest.raises(error) as err:
        target_command("s", "m", backend, op=op)
    assert str(err.value).startswith(message)
    assert isinstance(err.value, UsageError) and err.value.exit_code == 2
    check_backend_op("scipy-cpu", "spmv")            # each op's own backends pass
    check_backend_op("spmm-scipy-cpu", "spmm")
    check_backend_op("slice-scipy-cpu", "slice")


def test_op_parameters_are_checked_before_ncu():
    with pytest.raises(UsageError, match="k must be >= 1, got 0"):
        target_command("dlmc3", "m", "spmm-scipy-cpu", op="spmm", params={"k": 0})
    with pytest.raises(UsageError, match="op 'spmm' has no parameter weights"):
        target_command("dlmc3", "m", "spmm-scipy-cpu", op="spmm", params={"weights": "scalar"})
    with pytest.raises(UsageError, match="op 'spmv' has no parameter k"):
        target_command("seed6", "m", "scipy-cpu", params={"k": 8})


def test_command_with_groups_filter_and_launch_window():
    options = CollectOptions(groups=("stalls", "memory"), kernel_filter="regex:csrmv",
                             launch_skip=2, launch_count=1, clock_control="none",
                             cache_control="none")
    cmd = build_ncu_command("/opt/ncu", "/out/r.ncu-rep", TARGET, options)
    assert cmd[:3] == ["/opt/ncu", "--export", "/out/r.ncu-rep"]
    assert cmd[-len(TARGET):] == TARGET
    joined = " ".join(cmd)
    for part in ("--clock-control none", "--cache-control none", "--kernel-name-base function",
                 "--kernel-name regex:csrmv", "--launch-skip 2", "--launch-count 1",
                 "--section WarpStateStats", "--section SchedulerStats", "--import-source yes",
                 "--force-overwrite", "--target-processes all"):
        assert part in joined
    # the memory group is metrics only now: ncu's memory tables and the source counters are
    # groups of their own
    assert "--section SourceCounters" not in joined
    assert "MemoryWorkloadAnalysis_Tables" not in joined
    assert "--profile-from-start" not in cmd
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert M.CPI in metrics and M.stall_metric("long_scoreboard") in metrics
    assert "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio" in metrics
    assert len(metrics) == len(set(metrics))
    assert "--set" not in cmd


def test_command_with_full_set_and_defaults():
    cmd = build_ncu_command("ncu", "r.ncu-rep", TARGET, CollectOptions(section_set="full"))
    assert cmd[cmd.index("--set") + 1] == "full"
    assert "--metrics" not in cmd and "--kernel-name" not in cmd and "--launch-skip" not in cmd
    assert cmd[cmd.index("--clock-control") + 1] == "base"
    assert cmd[cmd.index("--cache-control") + 1] == "all"


def test_export_commands():
    assert export_command("ncu", "r.ncu-rep", "raw") == [
        "ncu", "--import", "r.ncu-rep", "--csv", "--page", "raw", "--print-units", "base",
        "--print-fp"]
    assert export_command("ncu", "r.ncu-rep", "source")[-2:] == ["--print-source", "sass"]
    with pytest.raises(UsageError):
        export_command("ncu", "r.ncu-rep", "summary")


@pytest.mark.parametrize("kwargs, error", [
    ({"groups": ("stall",)}, UnknownNameError), ({"clock_control": "locked"}, UnknownNameError),
    ({"cache_control": "some"}, UnknownNameError),
    ({"section_set": "everything"}, UnknownNameError),
    ({"launch_skip": -1}, UsageError), ({"launch_count": 0}, UsageError),
    ({"groups": ()}, UsageError),
])
def test_options_are_validated(kwargs, error):
    with pytest.raises(error):
        CollectOptions(**kwargs)


def test_collects_source_only_with_source_counters():
    assert CollectOptions(section_set="full").collects_source
    assert CollectOptions(groups=("source",)).collects_source
    assert CollectOptions().collects_source                  # a default group
    assert not CollectOptions(groups=("stalls", "launch", "memory")).collects_source


def test_find_ncu_is_the_tool_finder(tmp_path, monkeypatch):
    # the search itself is tested in tests/test_tools.py; here: find_ncu goes through it
    exe = tmp_path / "ncu"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SPARSESCOPE_NCU", raising=False)
    assert find_ncu() == exe
    monkeypatch.setenv("SPARSESCOPE_NCU", "/opt/elsewhere/ncu")
    assert find_ncu() == Path("/opt/elsewhere/ncu")


def test_profile_stem():
    assert profile_stem("seed", "webbase-1M", "torch/int64") == (
        "profile_seed_webbase-1M_torch-int64")
    assert profile_stem("dlmc3", "dlmc-512x1024", "spmm-cuda-rowwarp",
                        {"k": 64, "layout": "row"}) == (
        "profile_dlmc3_dlmc-512x1024_spmm-cuda-rowwarp_k-64_layout-row")
    # a row list by its count and the first 12 hex digits of sha1("3,1,3")
    assert profile_stem("slice003", "slice-1000", "slice-torch", {"rows": (3, 1, 3)}) == (
        "profile_slice003_slice-1000_slice-torch_rows-3-"
        + hashlib.sha1(b"3,1,3").hexdigest()[:12])


def test_run_profile_writes_report_and_exports(fake_ncu, tmp_path, h200_fixtures):
    options = CollectOptions(section_set="full", kernel_filter="csrmv_v3_kernel", launch_count=3)
    run = run_profile(TARGET, tmp_path / "out", "profile_seed_cant_torch", options)
    assert run.report_path == tmp_path / "out" / "profile_seed_cant_torch.ncu-rep"
    assert run.report_path.read_bytes() == (h200_fixtures / "spmv_full.ncu-rep").read_bytes()
    assert run.raw_csv.read_text() == (h200_fixtures / "spmv_full_raw.csv").read_text()
    assert run.details_csv.name == "profile_seed_cant_torch_details.csv"
    assert run.source_csv.read_text() == (h200_fixtures / "scalar_source_sass.csv").read_text()
    assert run.ncu_version.startswith("Version 2025.3.1")
    assert "==PROF== Report:" in run.log_path.read_text()
    assert run.passes == (("csrmv_v3_kernel", 40),)      # the fake's one ==PROF== line
    assert run.profile_wall_s > 0 and run.export_wall_s > 0
    calls = fake_ncu.calls()
    assert calls[0].startswith("--export ") and calls[0].endswith(" ".join(TARGET))
    assert "--kernel-name csrmv_v3_kernel" in calls[0] and "--launch-count 3" in calls[0]
    pages = [c.split("--page ")[1].split()[0] for c in calls if c.startswith("--import")]
    assert sorted(pages) == ["details", "raw", "source"]     # side by side: any order
    assert sum(c.strip() == "--version" for c in calls) == 1


def test_source_export_failure_keeps_the_report(fake_ncu, tmp_path):
    fake_ncu.mode("nosource")
    with pytest.warns(UserWarning, match="source page not exported"):
        run = run_profile(TARGET, tmp_path, "p", CollectOptions(section_set="full"))
    assert run.source_csv is None and "Source page not available" in run.notes["source"]
    assert run.report_path.is_file() and run.raw_csv.is_file()


def test_no_source_export_without_source_counters(fake_ncu, tmp_path):
    run = run_profile(TARGET, tmp_path, "p", CollectOptions(groups=("stalls",)))
    assert run.source_csv is None
    assert not any("--page source" in c for c in fake_ncu.calls())


@pytest.mark.parametrize("mode, reason, fragments", [
    ("perm", "permission", ["ERR_NVGPUCTRPERM - The user does not have permission",
                            "NVreg_RestrictProfilingToAdminUsers=0", "--cap-add=SYS_ADMIN"]),
    ("nokernels", "no_kernels", ["no kernel launch matched the filter 'spmv_nope'",
                                 "kernels the program launched: csr_partition_kernel, "
                                 "csrmv_v3_kernel"]),
    ("appfail", "target_failed", ["the profiled program failed (exit code 1)",
                                  "torch.OutOfMemoryError: CUDA out of memory"]),
    ("crash", "ncu_failed", ["ncu exited with code 2", "==ERROR== Unknown Error on device 0."]),
    ("noreport", "ncu_failed", ["wrote no report"]),
])
def test_collect_errors(fake_ncu, tmp_path, mode, reason, fragments):
    fake_ncu.mode(mode)
    options = CollectOptions(groups=("stalls",), kernel_filter="spmv_nope")
    with pytest.raises(ProfileError) as err:
        run_profile(TARGET, tmp_path, "p", options)
    assert err.value.reason == reason
    assert err.value.exit_code == 8
    for fragment in fragments:
        assert fragment in str(err.value)
    assert (tmp_path / "p.ncu.log").is_file()              # ncu's output is kept for the user
    assert not (tmp_path / "p_raw.csv").exists()           # nothing exported from a failed run


def test_no_kernels_without_filter(fake_ncu, tmp_path):
    fake_ncu.mode("nokernels")
    with pytest.raises(ProfileError, match="the program launched none") as err:
        run_profile(TARGET, tmp_path, "p", CollectOptions(groups=("launch",)))
    assert err.value.reason == "no_kernels"


def test_ncu_not_found(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("SPARSESCOPE_NCU", raising=False)
    monkeypatch.setattr(_tools, "TOOLKIT_GLOBS", ())
    monkeypatch.setattr(_tools, "TOOL_DIR_GLOBS", {})
    monkeypatch.setattr(_tools, "_site_dirs", list)
    with pytest.raises(ProfileError, match="ncu \\(Nsight Compute\\) not found") as err:
        run_profile(TARGET, tmp_path, "p", CollectOptions())
    assert err.value.reason == "ncu_not_found"
    assert "($SPARSESCOPE_NCU, PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, the nvidia-cuda-* " \
        "wheels)" in str(err.value)
    with pytest.raises(ProfileError) as err:
        run_profile(TARGET, tmp_path, "p", CollectOptions(), ncu=tmp_path / "missing" / "ncu")
    assert err.value.reason == "ncu_not_found"


def test_interpret_precedence(tmp_path):
    # the permission error comes with the no-kernels warning: the cause is the permission
    both = NcuResult(("ncu",), 1, "==ERROR== ERR_NVGPUCTRPERM - no\n"
                     "==WARNING== No kernels were profiled.\n", "")
    with pytest.raises(ProfileError) as err:
        interpret_ncu_output(both, tmp_path / "r.ncu-rep")
    assert err.value.reason == "permission"
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"NVR\x00")
    interpret_ncu_output(NcuResult(("ncu",), 0, "==PROF== Report: r\n", ""), report)
    assert os.path.exists(report)


def test_a_kernel_variant_is_profiled_by_its_options_and_checked_before_ncu():
    # the target runs the variant itself; the base name must implement the op
    assert target_command("seed6", "circuit5M", "cuda-spmv-adaptive[hub=8192]") == CASE + [
        "--op", "spmv", "--suite", "seed6", "--matrix", "circuit5M",
        "--backend", "cuda-spmv-adaptive[hub=8192]", "--scale", "1.0", "--check-only"]
    assert profile_stem("seed6", "circuit5M", "cuda-spmv-adaptive[hub=8192]") == (
        "profile_seed6_circuit5M_cuda-spmv-adaptive-hub-8192-")
    with pytest.raises(UsageError, match=r"backend 'cuda-spmv-adaptive\[hub=7\]': .*hub one of"):
        target_command("seed6", "m", "cuda-spmv-adaptive[hub=7]")
    with pytest.raises(UsageError, match="is not opt=integer"):
        target_command("seed6", "m", "cuda-spmv-adaptive[hub=big]")
    with pytest.raises(UsageError, match="does not support op 'spmm'"):
        target_command("seed6", "m", "cuda-spmv-adaptive[hub=8192]", op="spmm")
