"""Prove and verify the test sealer's 2 KiB SyntheticPoRep and NI-PoRep C1s partition by
partition with our own porep-2k test key (made first if KEY.params is missing). Run from the
repository root:

    python bench/snap/porep_variants_2kib.py KEY.params [PARTITIONS [BACKEND]]

PARTITIONS: comma-separated partition numbers (default all); BACKEND: cpu (default) or opencl.
Each proof is verified against the key with the public inputs the adapter computes, and again
with its first challenge input changed (must fail).
"""

import logging
import sys
import time
from pathlib import Path

from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.adapters.curio.porep.provider import PorepKeyGenerator
from cuzk_plugin.backends.registry import get_backend
from cuzk_plugin.filecoin.fixtures.variant_seal import VARIANT_PROOFS, seal_variant, variant_c1_json
from cuzk_plugin.formats.params import ProvingKey
from cuzk_plugin.groth16.prover import prove
from cuzk_plugin.groth16.verifier import verify


def main(key_path: Path, wanted: list[int] | None, backend_name: str) -> None:
    if not key_path.is_file():
        t = time.perf_counter()
        PorepKeyGenerator("2KiB", key_path)()
        print(f"porep-2k key made in {time.perf_counter() - t:.1f} s", flush=True)
    key = ProvingKey.open(key_path)
    backend = get_backend(backend_name)
    srs = backend.load_srs(key)
    for name in VARIANT_PROOFS:
        job = porep_partitions(variant_c1_json(seal_variant(name, miner_id=1000, sector_id=7, data_seed=1)))
        print(f"{name}: {job.num_partitions} partitions, {len(job.public_inputs(0)) + 1} inputs each (ONE included)",
              flush=True)
        for k in [k for k in (wanted or range(job.num_partitions)) if k < job.num_partitions]:
            t0 = time.perf_counter()
            part, inputs = job.synthesize(k)
            t1 = time.perf_counter()
            proof = prove(key, part, backend, srs=srs)
            t2 = time.perf_counter()
            ok = verify(key.vk, proof, inputs)
            tampered = verify(key.vk, proof, [*inputs[:3], inputs[3] + 1, *inputs[4:]])
            print(f"  partition {k}: synthesis {t1 - t0:.1f} s, prove {t2 - t1:.1f} s, verify {ok}, "
                  f"tampered challenge input verifies {tampered}", flush=True)
            assert ok and not tampered


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    main(Path(sys.argv[1]), [int(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else None,
         sys.argv[3] if len(sys.argv) > 3 else "cpu")
