#!/usr/bin/env bash
# device: tile tests, then A/B of the phase-2 long-row change
set -uo pipefail
mkdir -p .device-wheels && cp .device-wheels-min/*.whl .device-wheels/
python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -1
export SPARSESCOPE_GIT_COMMIT="6c23e97+warp-rows-host-rule"
PYTHONPATH=src timeout 200 python3 -m pytest tests/gpu/test_spmv_own_kernels.py -q -p no:cacheprovider -k "adaptive or merge or tiles16 or auto or split or finished or 2_pow_24 or poison or warp_rows" > $OUT/pytest_tiles.log 2>&1
tail -2 $OUT/pytest_tiles.log
V="--backend cuda-spmv-merge --variant cuda-spmv-adaptive[iters=1] --variant cuda-spmv-adaptive[iters=2] --variant cuda-spmv-delta16-tiles[iters=2] --repeats 20"
OUT=$OUT/held timeout 240 bash scripts/device_ab_kernel.sh ab/spmv_own_a.cu spmv_own.cu -- --suite 'population-held-out#rmat-20,rmat-26,rmat-29,powerlaw-29,powerlaw-14,uniform-05' $V | tail -30
OUT=$OUT/seed6 timeout 150 bash scripts/device_ab_kernel.sh ab/spmv_own_a.cu spmv_own.cu -- --suite 'seed6#webbase-1M,cant' $V | tail -14
cd $OUT && cp held/ab.txt ab_held.txt; cp seed6/ab.txt ab_seed6.txt; cp held/env.txt env.txt; tar czf ab_runs.tgz held seed6 && rm -rf held seed6
