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
timeout ${SEAL_TIMEOUT:-60} python3 -m cuzk_plugin.filecoin.fixtures.seal --sector-size 32GiB --sparse --out /tmp/c1-32g.json 2>&1 | tail -2 | tee -a $R
timeout ${EVAL_TIMEOUT:-200} python3 - <<'PY' 2>&1 | grep -v Warning | tee -a $R
import time, numpy as np
from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.formats.pce import load_pce
from cuzk_plugin.backends.opencl.backend import OpenclBackend
t0 = time.perf_counter(); pce = load_pce("/tmp/pc/pce-porep-32g.pce"); print(f"load_pce {time.perf_counter()-t0:.2f} s")
t0 = time.perf_counter(); job = porep_partitions(open("/tmp/c1-32g.json", "rb").read()); print(f"parse C1 {time.perf_counter()-t0:.1f} s")
t0 = time.perf_counter(); inputs, aux = job.assignment(0); print(f"witness partition 0: {time.perf_counter()-t0:.1f} s")
z = np.concatenate([inputs, aux]); del aux
be = OpenclBackend()
t0 = time.perf_counter(); h = be.load_circuit(pce); print(f"opencl load_circuit {time.perf_counter()-t0:.1f} s, {h.nbytes/1e9:.2f} GB")
for i in range(3):
    t0 = time.perf_counter(); a, b, c = be.evaluate_r1cs(h, z); print(f"opencl a, b, c (z up, a/b/c down): {time.perf_counter()-t0:.3f} s")
from cuzk_plugin.backends.cpu.r1cs_eval import unsatisfied_rows
t0 = time.perf_counter(); rows = unsatisfied_rows(a, b, c); bad = rows.size; first = int(rows[0]) if bad else None
print(f"rows {a.shape[0]:,}: a*b != c in {bad} rows (first {first}); check {time.perf_counter()-t0:.1f} s")
PY
