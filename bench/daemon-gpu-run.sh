#!/usr/bin/env bash
# Run on the H200: cuzk-daemon with the CUDA backend (demo + batch bench). Results in $OUT.
# Wheels the device image lacks go in .device-carry/daemon-whl (pip download --python-version 3.12 ... of
# grpcio, protobuf>=7.35, grpcio-health-checking, pydantic(-core,-settings), annotated-types, typing-inspection,
# python-dotenv, tenacity, typing-extensions); carry [".whl", ".device-carry"].
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .device-carry/daemon-whl/*.whl .whl/py_arkworks_bls12381-*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee $OUT/gpu.txt
nproc | tee -a $OUT/gpu.txt; git log -1 --format=%h 2>/dev/null | tee -a $OUT/gpu.txt
t0=$(date +%s); python3 -m cuzk_plugin.backends.cuda.build -j 16 > $OUT/cuda_build.log 2>&1; echo "build rc=$? in $(( $(date +%s) - t0 ))s"
python3 -c "from cuzk_plugin.backends.registry import probe; print('cuda probe:', probe('cuda'))"
export CUZK_DEMO_PARAM_CACHE=/tmp/params CUZK_BENCH_PARAMS=/tmp/params
python3 -m cuzk_plugin.demo --backend cuda --log2 12 --partitions 4 -c 8 -j 4 2>&1 | tee $OUT/demo.txt
PY=python3 REPEAT=3 SHAPES="${SHAPES:-12:4:24:8 14:2:12:4 6:1:400:32}" timeout 420 bench/daemon-bench.sh cuda > $OUT/bench-cuda.jsonl 2> $OUT/bench-cuda.err
echo "bench rc=$?"; cut -c1-300 $OUT/bench-cuda.jsonl; tail -5 $OUT/bench-cuda.err
