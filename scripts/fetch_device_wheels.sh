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
ls .device-wheels
