#!/bin/bash
# The R1CS evaluation on the H200 machine through NVIDIA OpenCL (device tool `run`, carry
# [".whl", ".whl-pce"]; .whl-pce holds pyopencl, pytools, platformdirs, siphash24 as cp312
# wheels): the r1cs conformance tests (random Filecoin-like circuits and the recorded 2 KiB
# PoRep circuit), then pce_bench.py (extraction, witness, a, b, c on cpu and the GPU).
set -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=$OUT/pce-h200.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl $(ls .whl-pce/*.whl 2>/dev/null) || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/icd
for f in /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1; do
    [ -e $f ] && echo $f >/tmp/icd/nvidia.icd && break
done
export OCL_ICD_VENDORS=/tmp/icd CUZK_OPENCL_DEVICE=${CUZK_OPENCL_DEVICE:-H200}
(date -u; git log -1 --format=%h; nvidia-smi -L; nproc; lscpu | grep 'Model name') 2>&1 | tee $R
timeout ${TEST_TIMEOUT:-200} python3 -m pytest tests/conformance/test_r1cs_eval.py --backend opencl -q -rfE -p no:cacheprovider 2>&1 | tail -8 | tee -a $R
timeout ${BENCH_TIMEOUT:-240} python3 bench/synthesis/pce_bench.py --param-cache /tmp/pce --backends cpu opencl \
    --extract porep-2k porep-8m --runs 5 2>&1 | grep -v Warning | tee -a $R
