"""PoSt test data from the test sealer's sectors: the bincode FallbackPoStSectorProofs Curio
puts in ``vanilla_proofs`` for a WindowPoSt partition or a WinningPoSt, built from a sealed
(:func:`~cuzk_plugin.filecoin.seal.seal`) or sparse (:mod:`~cuzk_plugin.filecoin.sparse_seal`)
sector's tree_r_last, comm_c and comm_r.

As Curio does (post-facts.md section 7): Window sectors sorted by sector number, one vanilla
proof a sector, each from proofs-api's generate_single_vanilla_proof (one SectorProof with
the sector's challenges); Winning: the one challenged sector with 66 challenges. The
randomness is 32 bytes with byte 31 masked by 0x3f.

    python -m cuzk_plugin.filecoin.post_seal --kind window --sectors 2 --out wpost.json
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

from cuzk_plugin.filecoin.params import PorepParams, porep_params
from cuzk_plugin.filecoin.poseidon import poseidon_hash
from cuzk_plugin.filecoin.post_challenges import check_randomness, sector_challenges
from cuzk_plugin.filecoin.post_proofs import PostKind, RegisteredPoStProof
from cuzk_plugin.filecoin.post_vanilla import (
    FallbackPoStSectorProof,
    PathElement,
    PostMerkleProof,
    SectorProof,
    encode_sector_proof,
)
from cuzk_plugin.filecoin.sparse_tree import SparseMerkleTree
from cuzk_plugin.filecoin.trees import MerklePath

__all__ = ["PostSector", "ProvenSector", "PostTestSector", "post_test_sector", "mask_randomness", "random_randomness",
           "sector_vanilla_proof", "post_vanilla_proofs"]


class _Tree(Protocol):
    @property
    def root(self) -> int: ...

    def path(self, index: int) -> MerklePath: ...


class PostSector(Protocol):
    """What a PoSt reads from a sector: tree_r_last, comm_c (tree_c's root) and comm_r. A
    :class:`~cuzk_plugin.filecoin.seal.SealedSector` or sparse sector is one."""

    params: PorepParams
    comm_r: int

    # read-only: a sealed sector's MerkleTree and a sparse one's SparseMerkleTree are both _Trees
    @property
    def tree_r_last(self) -> _Tree: ...

    @property
    def tree_c(self) -> _Tree: ...


@dataclass(frozen=True)
class ProvenSector:
    """A sealed sector and its number (the sealer does not keep the sector id)."""

    sector_id: int
    sector: PostSector


@dataclass(frozen=True)
class _Root:
    root: int

    def path(self, index: int) -> MerklePath:
        raise NotImplementedError("a PoSt never opens tree_c")


@dataclass(frozen=True)
class PostTestSector:
    """A PoSt TEST FIXTURE at any size: tree_r_last over a repeated block of random leaves and a
    random comm_c, comm_r = Poseidon(comm_c, comm_r_last). Every PoSt constraint holds for it
    (a PoSt opens only tree_r_last); it is no replica of any data."""

    params: PorepParams
    tree_r_last: SparseMerkleTree
    tree_c: _Root
    comm_r: int


def post_test_sector(sector_size: int, seed: int = 0) -> PostTestSector:
    """A :class:`PostTestSector` of ``sector_size`` bytes (64 distinct leaves, repeated)."""
    params = porep_params(sector_size)
    rng = random.Random(seed)
    block = [rng.getrandbits(254) for _ in range(64)]
    tree = SparseMerkleTree(params.nodes, params.tree_arities, "poseidon", block)
    comm_c = rng.getrandbits(254)
    return PostTestSector(params, tree, _Root(comm_c), poseidon_hash([comm_c, tree.root]))


def mask_randomness(raw: bytes) -> bytes:
    """Curio's ``randomness[31] &= 0x3f``: 32 bytes that are always a canonical Fr."""
    if len(raw) != 32:
        raise ValueError(f"randomness is 32 bytes, got {len(raw)}")
    return raw[:31] + bytes([raw[31] & 0x3F])


def random_randomness(seed: int) -> bytes:
    rng = random.Random(seed)
    return mask_randomness(bytes(rng.getrandbits(8) for _ in range(32)))


def _inclusion(s: PostSector, shape_variant: str, leaf: int) -> PostMerkleProof:
    path = s.tree_r_last.path(leaf)
    elements = tuple(PathElement(tuple(siblings), pos) for siblings, pos in path.levels)
    extra = {"Single": 0, "Sub": 1, "Top": 2}[shape_variant]
    base = elements[:len(elements) - extra]
    sub = elements[len(base):len(base) + 1] if extra else ()
    top = elements[len(base) + 1:] if extra == 2 else ()
    return PostMerkleProof(shape_variant, path.root, path.leaf, base, sub, top)


def sector_vanilla_proof(proof: RegisteredPoStProof, ps: ProvenSector, randomness: bytes,
                         sector_index: int) -> FallbackPoStSectorProof:
    """generate_single_vanilla_proof for one sector at ``sector_index`` of the proven set."""
    shape = proof.shape
    s = ps.sector
    if s.params.sector_size != proof.sector_size:
        raise ValueError(f"sector {ps.sector_id} is {s.params.sector_size} bytes, {proof.go_name} proves "
                         f"{proof.sector_size}-byte sectors")
    leaves = sector_challenges(proof, randomness, ps.sector_id, sector_index)
    inclusions = tuple(_inclusion(s, shape.variant, leaf) for leaf in leaves)
    return FallbackPoStSectorProof(ps.sector_id, s.comm_r, (SectorProof(inclusions, s.tree_c.root, s.tree_r_last.root),))


def post_vanilla_proofs(proof: RegisteredPoStProof, sectors: list[ProvenSector], randomness: bytes,
                        partition_index: int = 0) -> list[bytes]:
    """Curio's ``vanilla_proofs`` for one WindowPoSt partition (sectors sorted by number) or
    one WinningPoSt (exactly one sector)."""
    check_randomness(randomness)
    if proof.kind is PostKind.WINNING:
        if len(sectors) != 1:
            raise ValueError(f"a WinningPoSt proves 1 sector, got {len(sectors)}")
        return [encode_sector_proof(sector_vanilla_proof(proof, sectors[0], randomness, 0))]
    ordered = sorted(sectors, key=lambda ps: ps.sector_id)
    cap = proof.shape.sector_slots
    if not 1 <= len(ordered) <= cap:
        raise ValueError(f"a WindowPoSt partition of this size proves 1 to {cap} sectors, got {len(ordered)}")
    base = partition_index * cap
    return [encode_sector_proof(sector_vanilla_proof(proof, ps, randomness, base + i)) for i, ps in enumerate(ordered)]


def _main(argv: list[str] | None = None) -> int:
    import argparse
    import base64
    import json
    import os

    from cuzk_plugin.filecoin.post_proofs import post_proof_by_number
    from cuzk_plugin.filecoin.seal import seal

    ap = argparse.ArgumentParser(
        description="Seal 2 KiB test sectors and write their PoSt vanilla proofs as Curio sends them: a JSON "
                    "list of base64 bincode FallbackPoStSectorProofs (cuzk-bench's --vanilla container); prints "
                    "the randomness and the cuzk-bench command that proves them.")
    ap.add_argument("--kind", choices=["window", "winning"], required=True)
    ap.add_argument("--registered-proof", type=int, help="Go RegisteredPoStProof (default 10 Window, 0 Winning)")
    ap.add_argument("--sectors", type=int, default=1, help="sectors to seal and prove (Window: 1-2 at 2 KiB)")
    ap.add_argument("--miner-id", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0, help="randomness and sector data seed")
    ap.add_argument("--out", required=True, help="where to write the JSON list")
    args = ap.parse_args(argv)
    number = args.registered_proof if args.registered_proof is not None else (10 if args.kind == "window" else 0)
    try:
        proof = post_proof_by_number(number)
    except ValueError as exc:
        ap.error(str(exc))
    if proof.kind.value != args.kind or proof.sector_size != 2 << 10:
        ap.error(f"--registered-proof {number} is {proof.go_name}; this tool seals 2 KiB {args.kind} test data")
    if not 1 <= args.sectors <= proof.shape.vanilla_sectors:
        ap.error(f"--sectors {args.sectors}: a 2 KiB {args.kind} proof takes 1 to {proof.shape.vanilla_sectors}")
    sectors = [ProvenSector(n, seal("StackedDrg2KiBV1_1", miner_id=args.miner_id, sector_id=n, data_seed=args.seed + n))
               for n in range(1, args.sectors + 1)]
    randomness = random_randomness(args.seed)
    vanilla = post_vanilla_proofs(proof, sectors, randomness)
    tmp = f"{args.out}.tmp-{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump([base64.b64encode(v).decode() for v in vanilla], fh)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}: {proof.go_name}, {len(vanilla)} vanilla proof(s), {sum(map(len, vanilla))} bytes")
    print(f"cuzk-bench single -a ADDR -t {'wpost' if proof.kind is PostKind.WINDOW else 'winning'} --vanilla {args.out} "
          f"--registered-proof {number} --randomness {randomness.hex()} --miner-id {args.miner_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
