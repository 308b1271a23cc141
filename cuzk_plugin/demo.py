"""The embedded default job: set up, prove and verify a Filecoin-shaped example circuit
(several partitions, batch-verified), printing per-stage timings."""

from __future__ import annotations

import time

from cuzk_plugin.backends.registry import get_backend
from cuzk_plugin.bls12_381.fields import limbs_to_ints
from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.formats.proof import decode_proofs, encode_proofs
from cuzk_plugin.groth16.prover import ProveTimings, prove
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import batch_verify


def run_demo(log2: int = 12, backend_name: str = "auto", partitions: int = 2) -> int:
    backend = get_backend(backend_name)
    print(f"cuzk demo: {partitions} partitions of 2^{log2} constraints on backend '{backend.name}'")
    t = time.perf_counter()
    shape, _, _ = filecoin_like(1 << log2, seed=0).finish()
    key = setup(shape)
    print(f"  setup          {time.perf_counter() - t:8.3f} s  (domain {key.domain_size:,}, key {key.vectors_nbytes / 1e6:.1f} MB)")
    t = time.perf_counter()
    srs = backend.load_srs(key)
    print(f"  srs load       {time.perf_counter() - t:8.3f} s")
    proofs, publics = [], []
    try:
        for k in range(partitions):
            t = time.perf_counter()
            r1cs, inputs, aux = filecoin_like(1 << log2, seed=k + 1).finish_witness()
            part = synthesize(r1cs, inputs, aux)
            t_syn = time.perf_counter() - t
            timings = ProveTimings()
            proofs.append(prove(key, part, backend, srs=srs, timings=timings))
            publics.append(limbs_to_ints(inputs)[1:])
            print(f"  partition {k}    synthesis {t_syn:.3f} s, h+msm {timings.msm:.3f} s, assemble {timings.assemble:.3f} s")
    finally:
        srs.release()
    blob = encode_proofs(proofs)
    t = time.perf_counter()
    ok = batch_verify(key.vk, decode_proofs(blob), publics)
    print(f"  batch verify   {time.perf_counter() - t:8.3f} s  -> {'VALID' if ok else 'INVALID'} ({len(blob)} proof bytes)")
    return 0 if ok else 1
