#!/bin/bash
# One device call on the H200: the GPU suite, the conformance suite and the PTX model on the
# cuda backend, then the kernel rows of bench/cuda/README.md (G1 MSM 2^24 and 2^27, G2 MSM 2^27,
# NTT 2^27, prove 2^27 with every proof verified on the CPU) and R1CS evaluation of a synthetic
# Filecoin-shaped circuit of 2^25 rows; everything logged under $OUT.
# The libraries are built here first (the device machine only runs them):
#   .venv/bin/python -m cuzk_plugin.backends.cuda.build --arch 80,90 --out .device-carry/cuda
#   git rev-parse HEAD > .device-carry/commit.txt
# then the device tool's `run` with carry [".whl", ".device-carry"]: bash bench/cuda/h200_run.sh
# (SKIP_TESTS=1 runs the benchmarks alone; BENCH_SPECS="op:log2:repeat[:frac_bits[:flag]] ..."
# chooses the rows, e.g. msm-g2:26:3:0.988:profile;
# CUZK_CUDA_LIBRARY=.device-carry/cuda-base/libcuzk_cuda.so measures another build beside it).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export CUZK_CUDA_LIBRARY=${CUZK_CUDA_LIBRARY:-$PWD/.device-carry/cuda/libcuzk_cuda.so}
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    echo "commit $(cat .device-carry/commit.txt 2>/dev/null)"
    nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.max.sm,memory.total --format=csv
    ls -l .device-carry/cuda/
    python3 -c 'from cuzk_plugin.backends.cuda import CudaBackend as B; print("probe:", B.probe() or "ok"); print(B().devices())'
    # A library whose kernels were built for no architecture this card runs (optional: the
    # production objects with api.cu built for sm_100 only) must be refused by name.
    if [ -e .device-carry/noimg/libcuzk_cuda.so ]; then
        CUZK_CUDA_LIBRARY=$PWD/.device-carry/noimg/libcuzk_cuda.so python3 -c \
            'from cuzk_plugin.backends.cuda import CudaBackend as B; print("sm_100-only api.cu here:", B.probe())'
    fi
} 2>&1 | tee "$OUT/device.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    timeout ${TEST_TIMEOUT:-240} python3 -m pytest tests/gpu tests/conformance tests/test_field_ptx.py --backend cuda \
        -v -rfEs -p no:cacheprovider >"$OUT/tests.txt" 2>&1
    echo "tests rc=$?"; tail -15 "$OUT/tests.txt"
fi
for spec in ${BENCH_SPECS:-msm-g1:24:5 msm-g1:27:3 msm-g2:27:1 ntt:27:10 prove:27:5 r1cs:25:5}; do
    IFS=: read -r op log2 repeat frac extra <<<"$spec"
    echo "# $spec" >>"$OUT/bench.txt"
    timeout 150 python3 -m cuzk_plugin.cli.bench kernels --backend cuda --op "$op" --log2 "$log2" --repeat "$repeat" \
        ${frac:+--frac-bits "$frac"} ${extra:+--$extra} >>"$OUT/bench.txt" 2>&1
done
date -u +%Y-%m-%dT%H:%M:%SZ >>"$OUT/device.txt"
echo "=== bench"; cat "$OUT/bench.txt"
