#!/bin/bash
# One short device call (carry .whl and the CUDA build): the mapped-gather probe
# (bench/cuda/mapped_gather.py: whether reading only the kept points through the page-locked key's
# mapped address beats copying chunks), then the GPU suite with the device held to LIMIT_GIB
# (default 24; empty: the whole device), the suite sizing itself from what it sees.
# Everything lands in $OUT: mapped-gather.txt, tests.txt, device.txt.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[ -d /tmp/site/grpc ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD CUZK_CUDA_LIBRARY=$PWD/cuzk_plugin/backends/cuda/build/libcuzk_cuda.so PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current \
    --format=csv,noheader; nproc; } | tee "$OUT/device.txt"
timeout "${PROBE_TIMEOUT:-150}" python3 bench/cuda/mapped_gather.py 24 5 1000 740 490 30 2>&1 | tee "$OUT/mapped-gather.txt"
source bench/device_memory_hold.sh
[ -n "${LIMIT_GIB-24}" ] && hold "${LIMIT_GIB-24}"
timeout "${TEST_TIMEOUT:-300}" python3 -m pytest tests/gpu -q -rfEs -p no:cacheprovider --backend cuda \
    ${TEST_K:+-k "$TEST_K"} >"$OUT/tests.txt" 2>&1
echo "gpu tests rc=$? (${LIMIT_GIB-24} GiB held to)"; tail -8 "$OUT/tests.txt"
unhold
