#!/bin/bash
# NVIDIA OpenCL on the H200 machine (device tool `run`, carry [".whl"]): installs the cp312
# wheels, registers NVIDIA's OpenCL library with the ICD loader through OCL_ICD_VENDORS, runs
# the NTT/MSM conformance tests on the GPU, then the timings. Output: $OUT/opencl-h200.txt.
set -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=$OUT/opencl-h200.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/icd
for f in /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1; do
    [ -e $f ] && echo $f >/tmp/icd/nvidia.icd && break
done
export OCL_ICD_VENDORS=/tmp/icd
(date -u; git log -1 --format=%h; nvidia-smi -L; python3 -c "import pyopencl as cl; [print(p.name, p.version, [d.name for d in p.get_devices()]) for p in cl.get_platforms()]") 2>&1 | tee $R || exit 2
timeout ${OCL_TEST_TIMEOUT:-150} python3 -m pytest tests/conformance/test_ntt.py tests/conformance/test_msm.py --backend opencl -m 'not slow' -x -q -p no:cacheprovider 2>&1 | tail -5 | tee -a $R
for lb in 32 64; do
    timeout ${OCL_BENCH_TIMEOUT:-120} python3 -m cuzk_plugin.backends.opencl.bench --device H200 --limb-bits $lb --ntt 24 26 --msm-g1 20 24 --repeat 5 2>&1 | grep -v Warning | tee -a $R
done
