"""SyntheticPoRep and NI-PoRep C1 outputs from the test sealer: the sector is sealed by
:func:`cuzk_plugin.filecoin.seal.seal` under the variant's registered proof (its porep_id feeds
replica_id and the graph), then each partition opens the challenges the variant derives
(porep-variants-facts.md sections 2-5):

- synthetic (ids 10-14): the interactive partition count; challenges selected by the seed among
  the synthetic challenges of replica_id and comm_r (a real sealer copies them from its
  ``syn-porep-vanilla-proofs.dat``; the records are the same proofs);
- NI (ids 15-19): 13 partitions of 2 challenges at test sizes (126 of 18 above), challenges
  from replica_id and comm_r; the seed is carried but not used.

    python -m cuzk_plugin.filecoin.variant_seal --proof StackedDrg2KiBV1_2_Feat_NonInteractivePoRep --out c1.json
"""

from __future__ import annotations

import json

from cuzk_plugin.filecoin.challenges import porep_challenges
from cuzk_plugin.filecoin.params import porep_params
from cuzk_plugin.filecoin.seal import SealedSector, c1_output, challenge_proof, seal
from cuzk_plugin.filecoin.trees import fr_to_bytes

__all__ = ["VARIANT_PROOFS", "seal_variant", "variant_c1_json", "variant_c1_output"]

#: The 2 KiB registered proofs of the two variants (C1 JSON names).
VARIANT_PROOFS = ("StackedDrg2KiBV1_1_Feat_SyntheticPoRep", "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep")


def seal_variant(registered_proof: str, **kwargs) -> SealedSector:
    """Seal a test sector under a variant's registered proof (any seal() keyword)."""
    return seal(registered_proof, **kwargs)


def variant_c1_output(s: SealedSector) -> dict:
    """The C1 output of any registered proof, with its variant's partitions and challenges."""
    proof = s.proof
    params = porep_params(proof.sector_size, non_interactive=not proof.interactive)
    parts = []
    for k in range(params.partitions):
        chs = porep_challenges(proof.challenge_kind, replica_id=s.replica_id, comm_r=fr_to_bytes(s.comm_r),
                               seed=s.seed, nodes=params.nodes,
                               challenges_per_partition=params.challenges_per_partition, partition=k)
        parts.append([challenge_proof(s, c) for c in chs])
    out = c1_output(s)  # header fields as the sealer writes them
    out["vanilla_proofs"] = {proof.v1_name: parts}
    return out


def variant_c1_json(s: SealedSector) -> bytes:
    return json.dumps(variant_c1_output(s)).encode()


def _main(argv: list[str] | None = None) -> int:
    import argparse
    import base64
    import os

    ap = argparse.ArgumentParser(description="Seal a 2 KiB test sector as a PoRep variant and write its C1 JSON")
    ap.add_argument("--out", required=True)
    ap.add_argument("--proof", default=VARIANT_PROOFS[0], help="a registered seal proof name (C1 JSON spelling)")
    ap.add_argument("--envelope", action="store_true", help="wrap it as Curio's {SectorNum, Phase1Out, SectorSize}")
    ap.add_argument("--miner-id", type=int, default=1000)
    ap.add_argument("--sector-id", type=int, default=1)
    ap.add_argument("--data-seed", type=int, default=0)
    args = ap.parse_args(argv)
    s = seal_variant(args.proof, miner_id=args.miner_id, sector_id=args.sector_id, data_seed=args.data_seed)
    raw = variant_c1_json(s)
    if args.envelope:
        raw = json.dumps({"SectorNum": args.sector_id, "Phase1Out": base64.b64encode(raw).decode(),
                          "SectorSize": s.params.sector_size}).encode()
    tmp = f"{args.out}.tmp-{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(raw)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}: {s.proof.name}, {len(variant_c1_output(s)['vanilla_proofs'][s.proof.v1_name])} partitions")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
