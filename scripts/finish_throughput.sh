#!/usr/bin/env bash
# Issue 37 item 1: the tile kernels' split rows finished in the tile (one launch, finish=1)
# against the spmv_fixup launch (finish=0), in the throughput timing mode, on the real
# development set (.real-dev/, scripts/real_matrices.py --format npz), beside auto and every
# planned cuSPARSE algorithm (nvmath-python). Run on the device from the repository root,
# carrying .device-wheels-min, .device-wheels-nvmath and .real-dev:
#   bash scripts/finish_throughput.sh
# Writes to $OUT: env.txt, pytest_finish.log (the tile kernels against float64 first),
# run.log, show.txt, throughput_finish_results.json.gz. The table:
#   python scripts/finish_ab_table.py $OUT/throughput_finish_results.json.gz
set -u
PY=python
mkdir -p .device-wheels && cp .device-wheels-min/*.whl .device-wheels/ && $PY -m pip install -q --no-index --no-deps .device-wheels/*.whl .device-wheels-nvmath/*.whl 2>&1 | grep -v WARNING | tail -1
{ date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"; echo "commit $(git rev-parse --short HEAD 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; } > $OUT/env.txt
PYTHONPATH=src timeout 120 $PY -m pytest tests/gpu/test_spmv_own_kernels.py -q -p no:cacheprovider -k "finish or adaptive or merge" > $OUT/pytest_finish.log 2>&1; tail -2 $OUT/pytest_finish.log
m=(); for f in .real-dev/*.npz; do m+=(--matrix "$f"); done
PYTHONPATH=src timeout -s INT 330 $PY -m sparsescope run "${m[@]}" --backend cuda-spmv-auto --backend cuda-spmv-adaptive --backend cuda-spmv-merge --variant 'cuda-spmv-adaptive[finish=1]' --variant 'cuda-spmv-merge[finish=1]' --variants cusparse-spmv --timing-mode throughput --out /tmp/tp --no-store > $OUT/run.log 2>&1; echo "run rc=$?"
gzip -c /tmp/tp/results.json > $OUT/throughput_finish_results.json.gz
PYTHONPATH=src $PY -m sparsescope results show /tmp/tp/results.json > $OUT/show.txt 2>&1; tail -5 $OUT/run.log
