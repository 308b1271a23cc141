#!/bin/bash
# One 32 GiB PoRep partition on the H200 machine (device tool `run`, carry [".whl", ".whl-pce"]):
# extract the pre-compiled circuit (time, size, peak RSS), seal a sparse 32 GiB C1, compute
# partition 0's witness, evaluate a, b, c on the GPU through NVIDIA OpenCL, and check
# a_j * b_j = c_j on every row (numpy, Montgomery products). Output: $OUT/pce-32g-h200.txt.
set -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=$OUT/pce-32g-h200.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl $(ls .whl-pce/*.whl 2>/dev/null) || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/icd
for f in /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1; do
    [ -e $f ] && echo $f >/tmp/icd/nvidia.icd && break
done
export OCL_ICD_VENDORS=/tmp/icd CUZK_OPENCL_DEVICE=${CUZK_OPENCL_DEVICE:-H200}
(date -u; git log -1 --format=%h; nvidia-smi -L; nproc; lscpu | grep 'Model name'; df -h /tmp | tail -1) 2>&1 | tee $R
/usr/bin/time -v timeout ${EXTRACT_TIMEOUT:-330} python3 -m cuzk_plugin.cli.main pce extract --circuit porep-32g --param-cache /tmp/pc 2>&1 \
    | grep -E "pce|porep|Elapsed|Maximum resident" | tee -a $R
timeout ${SEAL_TIMEOUT:-60} python3 -m cuzk_plugin.filecoin.seal --sector-size 32GiB --sparse --out /tmp/c1-32g.json 2>&1 | tail -2 | tee -a $R
timeout ${EVAL_TIMEOUT:-200} python3 - <<'PY' 2>&1 | grep -v Warning | tee -a $R
import time, numpy as np
from cuzk_plugin.adapters.curio.porep import porep_partitions
from cuzk_plugin.formats.pce import load_pce
from cuzk_plugin.backends.opencl.backend import OpenclBackend
from cuzk_plugin.backends.cpu.r1cs_eval import mont_mul, to_limbs32
def to_limbs32_stack(x): return np.stack(to_limbs32(x), axis=1)
t0 = time.perf_counter(); pce = load_pce("/tmp/pc/pce-porep-32g.pce"); print(f"load_pce {time.perf_counter()-t0:.2f} s")
t0 = time.perf_counter(); job = porep_partitions(open("/tmp/c1-32g.json", "rb").read()); print(f"parse C1 {time.perf_counter()-t0:.1f} s")
t0 = time.perf_counter(); inputs, aux = job.assignment(0); print(f"witness partition 0: {time.perf_counter()-t0:.1f} s")
z = np.concatenate([inputs, aux]); del aux
be = OpenclBackend()
t0 = time.perf_counter(); h = be.load_circuit(pce); print(f"opencl load_circuit {time.perf_counter()-t0:.1f} s, {h.nbytes/1e9:.2f} GB")
for i in range(3):
    t0 = time.perf_counter(); a, b, c = be.evaluate_r1cs(h, z); print(f"opencl a, b, c (z up, a/b/c down): {time.perf_counter()-t0:.3f} s")
from cuzk_plugin.bls12_381.fields import R
r2 = np.array([[((1 << 512) % R >> (64 * i)) & (2**64 - 1) for i in range(4)]], dtype=np.uint64)
t0 = time.perf_counter(); bad = 0; first = None
for lo in range(0, a.shape[0], 1 << 24):
    aa, bb, cc = a[lo:lo + (1 << 24)], b[lo:lo + (1 << 24)], c[lo:lo + (1 << 24)]
    high = (bb[:, 1] | bb[:, 2] | bb[:, 3]) != 0
    zero = ~high & (bb[:, 0] == 0)
    unit = ~high & (bb[:, 0] == 1)
    ok = np.zeros(aa.shape[0], bool)
    ok[zero] = ~(cc[zero] != 0).any(axis=1)  # a * 0 = c
    ok[unit] = ~(cc[unit] != aa[unit]).any(axis=1)  # a * 1 = c
    g = np.flatnonzero(~(zero | unit))
    if g.size:  # a * b * R^-1 * R^2 * R^-1 = a * b, canonical
        ab = mont_mul(mont_mul(to_limbs32(aa[g]), to_limbs32(bb[g])), to_limbs32(np.repeat(r2, g.size, axis=0)))
        ok[g] = ~(np.stack(ab, axis=1) != to_limbs32_stack(cc[g])).any(axis=1)
    miss = np.flatnonzero(~ok)
    bad += miss.size
    if miss.size and first is None: first = lo + int(miss[0])
print(f"rows {a.shape[0]:,}: a*b != c in {bad} rows (first {first}); check {time.perf_counter()-t0:.1f} s")
PY
