#!/usr/bin/env bash
# Download the wheels the GPU machine's image lacks (it has no network) into .device-wheels/,
# for Python 3.12 on x86_64; pass carry=[".device-wheels"] to the device tool and install them
# there with: python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device-wheels
pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    -d .device-wheels fast_matrix_market platformdirs markdown-it-py mdurl
# Dask for `sparsescope sweep --cluster local` (with its dependencies; the device's own
# packages win where they satisfy them: install with --find-links, not --no-deps)
pip download -q --only-binary=:all: --python-version 3.12 \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform any \
    -d .device-wheels distributed
# dask-cuda for `sweep --cluster cuda`, with what the image may lack, unpacked into one tar.xz
# (about half the wheels' size; the carried tree is limited to 64 MiB); the device script puts
# each on PYTHONPATH only where the image lacks it
tmp=$(mktemp -d)
pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 -d "$tmp/whl" dask-cuda nvidia-ml-py "cuda-core<2" \
    cuda-bindings cuda-pathfinder
for w in "$tmp"/whl/*.whl; do mkdir -p "$tmp/x/$(basename "$w")"; \
    (cd "$tmp/x/$(basename "$w")" && python3 -m zipfile -e "$w" .); done
tar cJf .device-wheels/sweep-extra.tar.xz -C "$tmp/x" .
rm -rf "$tmp"
ls .device-wheels
# The wheels the in-process runs need, alone (about 1.2 MB): the tracked tree plus every wheel
# above passed the device tool's 64 MiB in November 2026. Carry [".device-wheels-min"] and
# install them there with: python3 -m pip install -q --no-index --no-deps .device-wheels-min/*.whl
mkdir -p .device-wheels-min
cp .device-wheels/fast_matrix_market-*.whl .device-wheels/platformdirs-*.whl \
    .device-wheels/markdown_it_py-*.whl .device-wheels/mdurl-*.whl .device-wheels-min/
pip download -q --no-deps --only-binary=:all: -d .device-wheels-min pytest-timeout pytest-xdist execnet
ls .device-wheels-min
# nvmath-python for the planned cuSPARSE baselines (nvmath-cusparse-i32, spmm-nvmath-i32), with
# the CUDA 13 Python bindings it needs (the device's driver and PyTorch are CUDA 13; about 20 MB).
# Carry [".device-wheels-nvmath"] and install them there with:
# python3 -m pip install -q --no-index --no-deps .device-wheels-nvmath/*.whl
mkdir -p .device-wheels-nvmath
pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
    -d .device-wheels-nvmath nvmath-python "cuda-bindings>=13,<14" "cuda-core<2" \
    "cuda-pathfinder>=1.5.1,<2"
ls .device-wheels-nvmath
