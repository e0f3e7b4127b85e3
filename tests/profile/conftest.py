"""Fixtures of the profile tests: the H200 recordings read once per session, and a fake ``ncu``
shell script on PATH that prints what the real ncu prints in each situation."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sparsescope.profile.read_csv import load_profiles_csv
from sparsescope.profile.read_report import load_profiles


@pytest.fixture(scope="session")
def full_report(h200_fixtures):
    """spmv_full.ncu-rep (3x csrmv_v3_kernel, 1x spmv_csr_scalar) read through ncu_report."""
    return load_profiles(h200_fixtures / "spmv_full.ncu-rep")


@pytest.fixture(scope="session")
def full_csv(h200_fixtures):
    """The same report's raw and details CSV exports."""
    return load_profiles_csv(h200_fixtures / "spmv_full_raw.csv",
                             h200_fixtures / "spmv_full_details.csv")


@pytest.fixture(scope="session")
def cant(h200_fixtures):
    """Metric-group run (raw page) over the cant analog: 51 launches."""
    return load_profiles_csv(h200_fixtures / "ncu_metrics_cant_analog.csv")


# Messages are ncu's own (ERR_NVGPUCTRPERM text as ncu 2024-2025 prints it; the "No kernels were
# profiled" warning with its "Available Kernels:" list; the application error-code line).
FAKE_NCU = r"""#!/bin/sh
printf '%s\n' "$*" >> "$FAKE_NCU_ARGS"
case " $* " in *" --version "*)
  echo "NVIDIA (R) Nsight Compute Command Line Profiler"
  echo "Copyright (c) 2018-2025 NVIDIA Corporation"
  echo "Version 2025.3.1.0 (build 36398880) (public-release)"
  exit 0;;
esac
if [ "$1" = "--import" ]; then
  case " $* " in
    *" --page raw "*) cat "$FAKE_NCU_FIXTURES/spmv_full_raw.csv";;
    *" --page details "*) cat "$FAKE_NCU_FIXTURES/spmv_full_details.csv";;
    *" --page source "*)
      if [ "${FAKE_NCU_MODE}" = "nosource" ]; then
        echo "==ERROR== Source page not available for this report." >&2; exit 1
      fi
      cat "$FAKE_NCU_FIXTURES/scalar_source_sass.csv";;
  esac
  exit 0
fi
out=""; prev=""
for a in "$@"; do
  if [ "$prev" = "--export" ]; then out="$a"; fi
  prev="$a"
done
echo "==PROF== Connected to process 4242 (/usr/bin/python3.12)"
mode="${FAKE_NCU_MODE:-ok}"
# filtermiss: a kernel-name filter matches nothing (the launches are listed); without one, ok
if [ "$mode" = "filtermiss" ]; then
  case " $* " in *" --kernel-name "*) mode=nokernels;; *) mode=ok;; esac
fi
case "$mode" in
  ok|nosource)
    echo '==PROF== Profiling "csrmv_v3_kernel" - 0: 0%....50%....100% - 40 passes'
    echo "sparsescope-target: cant torch spmv: ok"
    cp "$FAKE_NCU_FIXTURES/spmv_full.ncu-rep" "$out"
    echo "==PROF== Disconnected from process 4242"
    echo "==PROF== Report: $out"
    exit 0;;
  perm)
    printf '%s%s%s\n' "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access " \
      "NVIDIA GPU Performance Counters on the target device 0. For instructions on enabling " \
      "permissions and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
    echo "sparsescope-target: cant torch spmv: ok"
    echo "==PROF== Disconnected from process 4242"
    echo "==WARNING== No kernels were profiled."
    exit 1;;
  nokernels)
    echo "sparsescope-target: cant torch spmv: ok"
    echo "==PROF== Disconnected from process 4242"
    echo "==WARNING== No kernels were profiled."
    echo "Available Kernels:"
    echo "1. csr_partition_kernel"
    echo "2. csrmv_v3_kernel"
    exit 0;;
  nokernels-bare)
    echo "sparsescope-target: cant cuda-spmv-sell spmv: ok"
    echo "==PROF== Disconnected from process 4242"
    echo "==WARNING== No kernels were profiled."
    exit 0;;
  appfail)
    echo "Traceback (most recent call last):"
    echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2
    echo "==PROF== Disconnected from process 4242"
    echo "==ERROR== The application returned an error code (1)."
    echo "==WARNING== No kernels were profiled."
    exit 1;;
  crash)
    echo "==ERROR== Failed to profile \"csrmv_v3_kernel\" in process 4242"
    echo "==ERROR== Unknown Error on device 0."
    exit 2;;
  noreport)
    echo "==PROF== Disconnected from process 4242"
    exit 0;;
esac
"""


class FakeNcu:
    """Handle on the fake: choose its behaviour, read the command lines it received."""

    def __init__(self, path: Path, args_file: Path, monkeypatch) -> None:
        self.path = path
        self.args_file = args_file
        self._monkeypatch = monkeypatch

    def mode(self, mode: str) -> None:
        self._monkeypatch.setenv("FAKE_NCU_MODE", mode)

    def calls(self) -> list[str]:
        return self.args_file.read_text().splitlines() if self.args_file.exists() else []


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch, h200_fixtures) -> FakeNcu:
    """A fake ``ncu`` first on PATH (CUDA_HOME, CUDA_PATH and SPARSESCOPE_NCU cleared so
    nothing else is found)."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    script = bin_dir / "ncu"
    script.write_text(FAKE_NCU)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    args_file = tmp_path / "ncu_args.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("SPARSESCOPE_NCU", raising=False)     # it would win over PATH
    monkeypatch.setenv("FAKE_NCU_ARGS", str(args_file))
    monkeypatch.setenv("FAKE_NCU_FIXTURES", str(h200_fixtures))
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    return FakeNcu(script, args_file, monkeypatch)
