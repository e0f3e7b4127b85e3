#!/usr/bin/env bash
# device (H100): GPU ceilings test, call-overhead probe, the held-out part 1 at HEAD
set -uo pipefail
mkdir -p .device-wheels && cp .device-wheels-min/*.whl .device-wheels/
python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -1
{ date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"; echo "git_commit $SPARSESCOPE_GIT_COMMIT";
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv;
  python3 -c "import torch, cupy; print('torch', torch.__version__, 'cupy', cupy.__version__)"; } > $OUT/env.txt 2>&1
PYTHONPATH=src python3 -m pytest tests/gpu/test_gpu_ceilings.py -q -p no:cacheprovider -rs -s > $OUT/pytest_ceilings.log 2>&1
tail -2 $OUT/pytest_ceilings.log
PYTHONPATH=src python3 scripts/call_overhead_probe.py --repeats 100 --json $OUT/probe.json > $OUT/probe.txt 2>&1
SUITE='population-held-out#banded-02,banded-05,banded-08,banded-11,banded-14,banded-17,banded-23,powerlaw-02,powerlaw-05,powerlaw-08,powerlaw-11,powerlaw-14,powerlaw-17,powerlaw-23,scattered-02,scattered-05,scattered-08,scattered-11,scattered-14,scattered-17,scattered-23,uniform-02,uniform-05,uniform-08,uniform-11,uniform-14,uniform-17,uniform-23,rmat-02,rmat-05,rmat-08,rmat-11,rmat-14,rmat-17,rmat-23,pruned-02,pruned-05,pruned-08,pruned-11,pruned-14,pruned-17,pruned-20,pruned-23,pruned-26,pruned-29,pruned-32'
OUT=$OUT/part1 bash scripts/device_kernels.sh --set auto-candidates --repeats 20 --suite "$SUITE" > $OUT/kernels.log 2>&1
echo "kernels rc=$?"
tail -3 $OUT/kernels.log
rm -f $OUT/part1/report.html
tar czf $OUT/part1.tgz -C $OUT part1 && rm -rf $OUT/part1
cat $OUT/probe.txt
