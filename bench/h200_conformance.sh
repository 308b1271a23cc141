#!/bin/bash
# One device call: the conformance suite on the CUDA backend (full output kept), a direct look
# at G1 MSMs of all-zero scalars, then NVIDIA OpenCL conformance + timings if time is left.
# Usage (device tool `run`, carry [".whl", "cuzk_plugin/backends/cuda/build"]):
#   bash bench/h200_conformance.sh [pytest-args...]
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export CUZK_CUDA_LIBRARY=$PWD/cuzk_plugin/backends/cuda/build/libcuzk_cuda.so
{ date -u; git log -1 --format='commit %H' 2>/dev/null; nvidia-smi -L; } | tee "$OUT/device.txt"
timeout 60 python3 - <<'PY' 2>&1 | tee "$OUT/zero-msm.txt"
import numpy as np
from tests.conformance.pools import PointPool
from cuzk_plugin.backends.cuda.backend import CudaBackend
from cuzk_plugin.backends.cpu.backend import CpuBackend
pool = PointPool(1, 7)
cu, cpu = CudaBackend(), CpuBackend()
for n in (3, 64, 65, 500, 999, 1000, 4103):
    _, b = pool.take(n)
    z = np.zeros((n, 4), dtype=np.uint64)
    g, w = np.asarray(cu.msm_g1(b, z)), np.asarray(cpu.msm_g1(b, z))
    print(n, "cuda", g.ravel()[:3], "cpu", w.ravel()[:3], "equal" if np.array_equal(g, w) else "DIFFER")
PY
timeout ${CONF_TIMEOUT:-420} python3 -m pytest tests/conformance --backend cuda -rfE -p no:cacheprovider -q "$@" \
    >"$OUT/conformance-cuda.txt" 2>&1
echo "conformance rc=$?"; tail -25 "$OUT/conformance-cuda.txt"
