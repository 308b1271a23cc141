"""SnapDeals test data: update a sealed test sector with new data (EmptySectorUpdate encoding)
and write its vanilla PartitionProofs as Curio sends them (bincode, one blob per partition;
/work/shared/specs/snap-facts.md sections 3, 4 and 9).

    u = snap_update(seal("StackedDrg2KiBV1_1"), data_seed=5)
    blobs = vanilla_proofs(u)            # request.vanilla_proofs, partition k at index k
    u.comm_r_old, u.comm_d_new, u.comm_r_new   # request fields (32 bytes LE each)

:func:`snap_update` is pure Python over every node: for the 2 KiB test sector (the sealer's
size). :func:`sparse_snap_update` updates a sparse test sector of any size
(:mod:`cuzk_plugin.filecoin.sparse_seal`) without visiting its nodes; a TEST FIXTURE like that
sector: the new data repeats a 64-node block, so TreeD new is periodic, and the new replica is
periodic within each h-region (rho depends on the region only), so TreeR new is built region by
region (an h whose region is a whole sub-tree of TreeR is chosen) from sparse sub-trees under a
dense top. Every opened value is real: the vanilla verifier and the circuit accept its proofs.
"""

from __future__ import annotations

import base64
import json
import os
import random
import struct
from dataclasses import dataclass
from math import prod

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.filecoin.poseidon import poseidon_hash
from cuzk_plugin.filecoin.seal import SealedSector, seal
from cuzk_plugin.filecoin.snap.params import UpdateParams, update_params
from cuzk_plugin.filecoin.snap.vanilla import (
    ChallengeProof,
    PartitionProof,
    encode,
    partition_challenges,
    phi,
    rho,
)
from cuzk_plugin.filecoin.sparse_seal import BLOCK_NODES, SparseSector
from cuzk_plugin.filecoin.sparse_tree import SparseMerkleTree
from cuzk_plugin.filecoin.trees import MerklePath, MerkleTree, fr_to_bytes

__all__ = [
    "UPDATE_PROOF_IDS",
    "SnapUpdate",
    "encode_merkle_proof",
    "encode_partition_proof",
    "partition_proof",
    "snap_update",
    "snap_vproof_json",
    "sparse_snap_update",
    "SparseSnapUpdate",
    "vanilla_proofs",
]

#: sector size -> RegisteredUpdateProof number
UPDATE_PROOF_IDS = {2 << 10: 0, 8 << 20: 1, 512 << 20: 2, 32 << 30: 3, 64 << 30: 4}


class _UpdateCommitments:
    """What Curio's request carries of an update, from its trees (dense or sparse)."""

    params: UpdateParams
    sector: SealedSector | SparseSector
    tree_d_new: MerkleTree | SparseMerkleTree
    tree_r_new: MerkleTree | _RegionTree

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


@dataclass
class SnapUpdate(_UpdateCommitments):
    """A sealed sector updated with new data: the trees and commitments of both replicas."""

    params: UpdateParams
    sector: SealedSector
    staged: list[int]  #: the new data, one field element per node
    h: int
    tree_d_new: MerkleTree
    tree_r_new: MerkleTree


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


class _RegionTree:
    """TreeR new of a sparse update: sparse sub-trees (each within one h-region, so its leaves
    are periodic but for the sector key's overrides) under a dense top over their roots."""

    def __init__(self, subtrees: list[SparseMerkleTree], top_arities: list[int]):
        self.subtrees = subtrees
        self.top = MerkleTree([t.root for t in subtrees], top_arities, "poseidon")
        self.span = subtrees[0].leaves

    @property
    def root(self) -> int:
        return self.top.root

    def path(self, index: int) -> MerklePath:
        t, j = divmod(index, self.span)
        low, high = self.subtrees[t].path(j), self.top.path(t)
        return MerklePath(low.leaf, high.root, low.levels + high.levels, low.arities + high.arities)


@dataclass
class SparseSnapUpdate(_UpdateCommitments):
    """A sparse test sector updated with block-periodic new data (module doc)."""

    params: UpdateParams
    sector: SparseSector
    block_staged: list[int]  #: staged(n) = block_staged[n % BLOCK_NODES]
    h: int
    tree_d_new: SparseMerkleTree
    tree_r_new: _RegionTree


def sparse_snap_update(sector: SparseSector, *, data_seed: int = 0, h: int | None = None) -> SparseSnapUpdate:
    """Update a sparse test sector with block-periodic new data (module doc). TreeR new's
    sub-trees are the largest that fit in an h-region: one per region is built, plus one per
    sub-tree holding a sector-key override (32 GiB, h = 10: 1,024 regions of 4 sub-trees)."""
    p = update_params(sector.params.sector_size)
    h = p.h_default if h is None else h
    rng = random.Random(data_seed)
    block = [rng.getrandbits(254) for _ in range(BLOCK_NODES)]
    tree_d_new = SparseMerkleTree(p.nodes, [2] * p.challenge_bit_len, "sha256", block)
    phi_ = phi(tree_d_new.root, sector.comm_r)
    key = sector.tree_r_last
    key_bg, key_over = key.background[0], key.materialized[0]
    region = p.nodes >> h
    arities = p.tree_r_arities
    levels = max(n for n in range(1, len(arities)) if region % prod(arities[:n]) == 0)
    span = prod(arities[:levels])
    if span % BLOCK_NODES and BLOCK_NODES % span:
        raise ValueError(f"a sub-tree of {span} leaves does not tile the {BLOCK_NODES}-node block")
    per_region = region // span
    subtrees: list[SparseMerkleTree] = []
    for r in range(1 << h):
        rho_r = rho(phi_, r)
        bg = [(key_bg[j % len(key_bg)] + block[j] * rho_r) % R for j in range(BLOCK_NODES)]
        plain = None
        for t in range(r * per_region, (r + 1) * per_region):
            lo = t * span
            over = {i - lo: (v + block[i % BLOCK_NODES] * rho_r) % R for i, v in key_over.items() if lo <= i < lo + span}
            if over or span < BLOCK_NODES:  # a sub-tree smaller than the block is a slice of it
                leaves = bg if span >= BLOCK_NODES else [bg[(lo + j) % BLOCK_NODES] for j in range(span)]
                subtrees.append(SparseMerkleTree(span, arities[:levels], "poseidon", leaves, over))
            else:
                plain = plain or SparseMerkleTree(span, arities[:levels], "poseidon", bg)
                subtrees.append(plain)
    return SparseSnapUpdate(p, sector, block, h, tree_d_new, _RegionTree(subtrees, arities[levels:]))


def _tree_node(tree: MerkleTree | SparseMerkleTree, level: int, index: int) -> int:
    return tree.layers[level][index] if isinstance(tree, MerkleTree) else tree.node(level, index)


def partition_proof(u: SnapUpdate | SparseSnapUpdate, k: int) -> PartitionProof:
    """The vanilla PartitionProof of partition k (what GenerateUpdateVanillaProofs returns)."""
    p = u.params
    comm_r_new = int.from_bytes(u.comm_r_new, "little")
    challenges = partition_challenges(p, comm_r_new, k)
    apex = [_tree_node(u.tree_d_new, p.apex_start, k * p.apex_leaves + i) for i in range(p.apex_leaves)]
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
    upper = p.porep.upper_levels
    out = [fr_to_bytes(proof.comm_c), struct.pack("<Q", len(proof.apex_leafs))]
    out.extend(fr_to_bytes(x) for x in proof.apex_leafs)
    out.append(struct.pack("<Q", len(proof.challenge_proofs)))
    for cp in proof.challenge_proofs:
        out.append(encode_merkle_proof(cp.proof_r_old, upper))
        out.append(encode_merkle_proof(cp.proof_d_new, 0))
        out.append(encode_merkle_proof(cp.proof_r_new, upper))
    return b"".join(out)


def vanilla_proofs(u: SnapUpdate | SparseSnapUpdate) -> list[bytes]:
    """One bincode PartitionProof per partition, in k order (the request's vanilla_proofs)."""
    return [encode_partition_proof(u.params, partition_proof(u, k)) for k in range(u.params.partitions)]


def snap_vproof_json(u: SnapUpdate | SparseSnapUpdate) -> bytes:
    """Curio's update cache file snap-vproof.json: a JSON list of base64 blobs."""
    return json.dumps([base64.b64encode(b).decode() for b in vanilla_proofs(u)]).encode()


def _write_atomically(path: str, raw: bytes) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(raw)
    os.replace(tmp, path)


def _main(argv: list[str] | None = None) -> int:
    import argparse

    from cuzk_plugin.filecoin.post_seal import parse_sector_size

    ap = argparse.ArgumentParser(description="Seal a test sector, update it with new data and write its SnapDeals "
                                             "vanilla proofs as Curio's snap-vproof.json (--sparse: a TEST FIXTURE "
                                             "at any size, built from a sparse sector and block-periodic data)")
    ap.add_argument("--out", required=True, help="a folder: snap-vproof.json and snap-request.json go there")
    ap.add_argument("--sector-size", default="2KiB", help="2KiB (default), 8MiB, 512MiB, 32GiB or 64GiB")
    ap.add_argument("--sparse", action="store_true", help="a sparse test fixture (needed above 2 KiB)")
    ap.add_argument("--miner-id", type=int, default=1000)
    ap.add_argument("--sector-id", type=int, default=1)
    ap.add_argument("--data-seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        size = parse_sector_size(args.sector_size)
    except ValueError as exc:
        ap.error(f"--sector-size: {exc}")
    u: SnapUpdate | SparseSnapUpdate
    if args.sparse:
        from cuzk_plugin.filecoin.sparse_seal import seal_proof_for_size, sparse_seal

        sparse = sparse_seal(seal_proof_for_size(size).name, miner_id=args.miner_id, sector_id=args.sector_id)
        u = sparse_snap_update(sparse, data_seed=args.data_seed + 1)
    elif size == 2 << 10:
        sector = seal("StackedDrg2KiBV1_1", miner_id=args.miner_id, sector_id=args.sector_id, data_seed=args.data_seed)
        u = snap_update(sector, data_seed=args.data_seed + 1)
    else:
        ap.error(f"--sector-size {args.sector_size}: only 2 KiB is sealed in full; add --sparse")
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
