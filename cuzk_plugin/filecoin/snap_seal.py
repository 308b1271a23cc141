"""SnapDeals test data: update a sealed test sector with new data (EmptySectorUpdate encoding)
and write its vanilla PartitionProofs as Curio sends them (bincode, one blob per partition;
/work/shared/specs/snap-facts.md sections 3, 4 and 9).

    u = snap_update(seal("StackedDrg2KiBV1_1"), data_seed=5)
    blobs = vanilla_proofs(u)            # request.vanilla_proofs, partition k at index k
    u.comm_r_old, u.comm_d_new, u.comm_r_new   # request fields (32 bytes LE each)

Pure Python over every node: for the 2 KiB test sector (the sealer's size).
"""

from __future__ import annotations

import base64
import json
import os
import random
import struct
from dataclasses import dataclass

from cuzk_plugin.filecoin.poseidon import poseidon_hash
from cuzk_plugin.filecoin.seal import SealedSector, seal
from cuzk_plugin.filecoin.snap.params import UpdateParams, update_params
from cuzk_plugin.filecoin.snap.vanilla import (
    ChallengeProof,
    PartitionProof,
    encode,
    partition_challenges,
    phi,
)
from cuzk_plugin.filecoin.trees import MerklePath, MerkleTree, fr_to_bytes

__all__ = [
    "UPDATE_PROOF_IDS",
    "SnapUpdate",
    "encode_merkle_proof",
    "encode_partition_proof",
    "partition_proof",
    "snap_update",
    "snap_vproof_json",
    "vanilla_proofs",
]

#: sector size -> RegisteredUpdateProof number
UPDATE_PROOF_IDS = {2 << 10: 0, 8 << 20: 1, 512 << 20: 2, 32 << 30: 3, 64 << 30: 4}


@dataclass
class SnapUpdate:
    """A sealed sector updated with new data: the trees and commitments of both replicas."""

    params: UpdateParams
    sector: SealedSector
    staged: list[int]  #: the new data, one field element per node
    h: int
    tree_d_new: MerkleTree
    tree_r_new: MerkleTree

    @property
    def registered_proof(self) -> int:
        return UPDATE_PROOF_IDS[self.params.sector_size]

    @property
    def comm_c(self) -> int:
        return self.sector.tree_c.root

    @property
    def comm_r_old(self) -> bytes:
        return fr_to_bytes(self.sector.comm_r)

    @property
    def comm_d_new(self) -> bytes:
        return fr_to_bytes(self.tree_d_new.root)

    @property
    def comm_r_new(self) -> bytes:
        return fr_to_bytes(poseidon_hash([self.comm_c, self.tree_r_new.root]))


def snap_update(sector: SealedSector | None = None, *, data_seed: int = 0, h: int | None = None,
                params: UpdateParams | None = None) -> SnapUpdate:
    """Encode random (fr32-valid) new data into ``sector``'s replica (its sector key).
    ``params`` replaces the size's own (tests: more partitions over a small sector)."""
    sector = sector if sector is not None else seal()
    p = params or update_params(sector.params.sector_size)
    rng = random.Random(data_seed)
    staged = [rng.getrandbits(254) for _ in range(p.nodes)]
    h = p.h_default if h is None else h
    tree_d_new = MerkleTree(staged, [2] * p.challenge_bit_len, "sha256")
    sector_key = sector.tree_r_last.layers[0]
    replica = encode(p, sector_key, staged, phi(tree_d_new.root, sector.comm_r), h)
    tree_r_new = MerkleTree(replica, p.tree_r_arities, "poseidon")
    return SnapUpdate(p, sector, staged, h, tree_d_new, tree_r_new)


def partition_proof(u: SnapUpdate, k: int) -> PartitionProof:
    """The vanilla PartitionProof of partition k (what GenerateUpdateVanillaProofs returns)."""
    p = u.params
    comm_r_new = int.from_bytes(u.comm_r_new, "little")
    challenges = partition_challenges(p, comm_r_new, k)
    apex_row = u.tree_d_new.layers[p.apex_start]
    apex = apex_row[k * p.apex_leaves:(k + 1) * p.apex_leaves]
    proofs = [ChallengeProof(u.sector.tree_r_last.path(c), u.tree_d_new.path(c), u.tree_r_new.path(c)) for c in challenges]
    return PartitionProof(u.comm_c, apex, proofs)


def _inclusion_path(levels: list[tuple[list[int], int]]) -> bytes:
    out = [struct.pack("<Q", len(levels))]
    for siblings, pos in levels:
        out.append(struct.pack("<Q", len(siblings)))
        out.extend(fr_to_bytes(s) for s in siblings)
        out.append(struct.pack("<Q", pos))
    return b"".join(out)


def encode_merkle_proof(path: MerklePath, upper_levels: int) -> bytes:
    """Bincode MerkleProof: u32 tag 0 Single {root, leaf, path}; 1 Sub {base, sub, root, leaf};
    2 Top {base, sub, top, root, leaf}. ``upper_levels`` = 0, 1 or 2 (sub/top levels)."""
    levels = list(path.levels)
    root, leaf = fr_to_bytes(path.root), fr_to_bytes(path.leaf)
    if upper_levels == 0:
        return struct.pack("<I", 0) + root + leaf + _inclusion_path(levels)
    n_base = len(levels) - upper_levels
    parts = [_inclusion_path(levels[:n_base])] + [_inclusion_path([lv]) for lv in levels[n_base:]]
    return struct.pack("<I", upper_levels) + b"".join(parts) + root + leaf


def encode_partition_proof(p: UpdateParams, proof: PartitionProof) -> bytes:
    """Bincode PartitionProof {comm_c, apex_leafs, challenge_proofs} as proofs-api serializes it."""
    upper = (1 if p.porep.sub_arity else 0) + (1 if p.porep.top_arity else 0)
    out = [fr_to_bytes(proof.comm_c), struct.pack("<Q", len(proof.apex_leafs))]
    out.extend(fr_to_bytes(x) for x in proof.apex_leafs)
    out.append(struct.pack("<Q", len(proof.challenge_proofs)))
    for cp in proof.challenge_proofs:
        out.append(encode_merkle_proof(cp.proof_r_old, upper))
        out.append(encode_merkle_proof(cp.proof_d_new, 0))
        out.append(encode_merkle_proof(cp.proof_r_new, upper))
    return b"".join(out)


def vanilla_proofs(u: SnapUpdate) -> list[bytes]:
    """One bincode PartitionProof per partition, in k order (the request's vanilla_proofs)."""
    return [encode_partition_proof(u.params, partition_proof(u, k)) for k in range(u.params.partitions)]


def snap_vproof_json(u: SnapUpdate) -> bytes:
    """Curio's update cache file snap-vproof.json: a JSON list of base64 blobs."""
    return json.dumps([base64.b64encode(b).decode() for b in vanilla_proofs(u)]).encode()


def _write_atomically(path: str, raw: bytes) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(raw)
    os.replace(tmp, path)


def _main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Seal a 2 KiB test sector, update it with new data and write its "
                                             "SnapDeals vanilla proofs as Curio's snap-vproof.json")
    ap.add_argument("--out", required=True, help="a folder: snap-vproof.json and snap-request.json go there")
    ap.add_argument("--miner-id", type=int, default=1000)
    ap.add_argument("--sector-id", type=int, default=1)
    ap.add_argument("--data-seed", type=int, default=0)
    args = ap.parse_args(argv)
    sector = seal("StackedDrg2KiBV1_1", miner_id=args.miner_id, sector_id=args.sector_id, data_seed=args.data_seed)
    u = snap_update(sector, data_seed=args.data_seed + 1)
    os.makedirs(args.out, exist_ok=True)
    vproof = os.path.join(args.out, "snap-vproof.json")
    _write_atomically(vproof, snap_vproof_json(u))
    fields = {"registered_proof": u.registered_proof, "sector_number": args.sector_id, "miner_id": args.miner_id,
              "comm_r_old": u.comm_r_old.hex(), "comm_r_new": u.comm_r_new.hex(), "comm_d_new": u.comm_d_new.hex()}
    _write_atomically(os.path.join(args.out, "snap-request.json"), json.dumps(fields, indent=1).encode())
    print(f"cuzk-bench single -t snap --vanilla {vproof} --registered-proof {u.registered_proof} "
          f"--sector-num {args.sector_id} --miner-id {args.miner_id} --comm-r-old {fields['comm_r_old']} "
          f"--comm-r-new {fields['comm_r_new']} --comm-d-new {fields['comm_d_new']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
