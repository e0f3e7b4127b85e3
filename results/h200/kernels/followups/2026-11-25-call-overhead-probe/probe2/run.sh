#!/usr/bin/env bash
set -uo pipefail
mkdir -p .device-wheels && cp .device-wheels-min/*.whl .device-wheels/
python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -1
{ date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"; echo "git_commit $SPARSESCOPE_GIT_COMMIT";
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv;
  python3 -c "import torch, cupy; print('torch', torch.__version__, 'cupy', cupy.__version__)"; } > $OUT/env.txt 2>&1
PYTHONPATH=src python3 scripts/call_overhead_probe.py --repeats 100 --json $OUT/probe.json > $OUT/probe.txt 2>&1
PYTHONPATH=src python3 scripts/call_overhead_probe.py --repeats 100 --matrix 'population-held-out#powerlaw-14' --json $OUT/probe_powerlaw14.json > $OUT/probe_powerlaw14.txt 2>&1
cat $OUT/probe.txt; tail -6 $OUT/probe_powerlaw14.txt
