# Shared set-up of the device scripts, sourced (not run): `source scripts/device_common.sh`.
#
#   device_wheels        install the wheels the image lacks from .device-wheels/ (carried)
#   device_env FILE      write the date, commit, GPU and library versions to FILE
#
# The device machine cannot reach the network: the wheels travel with the working tree
# (scripts/fetch_device_wheels.sh fills .device-wheels/).

device_wheels() {
    if compgen -G ".device-wheels/*.whl" >/dev/null; then
        python3 -m pip install -q --no-index --no-deps .device-wheels/*.whl 2>&1 | tail -2
    fi
}

device_env() {
    {
        date -u +"date_utc %Y-%m-%dT%H:%M:%SZ"
        echo "commit ${SPARSESCOPE_GIT_COMMIT:-unknown}"
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
        python3 -c 'import sys, torch, cupy, numpy, scipy; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "cupy", cupy.__version__, "numpy", numpy.__version__, "scipy", scipy.__version__)'
    } > "$1" 2>&1
}
