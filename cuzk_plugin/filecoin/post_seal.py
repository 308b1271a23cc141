"""PoSt test data from the test sealer's sectors: the bincode FallbackPoStSectorProofs Curio
puts in ``vanilla_proofs`` for a WindowPoSt partition or a WinningPoSt, built from a sealed
(:func:`~cuzk_plugin.filecoin.seal.seal`) or sparse (:mod:`~cuzk_plugin.filecoin.sparse_seal`)
sector's tree_r_last, comm_c and comm_r.

As Curio does (post-facts.md section 7): Window sectors sorted by sector number, one vanilla
proof a sector, each from proofs-api's generate_single_vanilla_proof (one SectorProof with
the sector's challenges); Winning: the one challenged sector with 66 challenges. The
randomness is 32 bytes with byte 31 masked by 0x3f.

At any size, :func:`post_test_sectors` gives a set of TEST FIXTURE sectors that share one
sparse tree_r_last (:func:`post_test_sector`): a PoSt opens only tree_r_last and derives each
sector's challenges from its own sector id, so every vanilla proof is valid for its sector id
and comm_r while the whole set costs one tree (a full 2349-sector 32 GiB partition in seconds).

    python -m cuzk_plugin.filecoin.post_seal --kind window --sectors 2 --out wpost.json
    python -m cuzk_plugin.filecoin.post_seal --kind window --sector-size 32GiB --sparse --sectors 2349 --out w.json
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
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
from cuzk_plugin.filecoin.proofs import SECTOR_SIZE_NAMES
from cuzk_plugin.filecoin.sparse_tree import SparseMerkleTree
from cuzk_plugin.filecoin.trees import MerklePath

__all__ = ["PostSector", "ProvenSector", "PostTestSector", "post_test_sector", "post_test_sectors", "mask_randomness",
           "random_randomness", "sector_vanilla_proof", "post_vanilla_proofs", "parse_sector_size"]


class _Tree(Protocol):
    @property
    def root(self) -> int: ...

    def path(self, index: int) -> MerklePath: ...


class PostSector(Protocol):
    """What a PoSt reads from a sector: tree_r_last, comm_c (tree_c's root) and comm_r. A
    :class:`~cuzk_plugin.filecoin.seal.SealedSector` or sparse sector is one."""

    # read-only: a sealed sector's MerkleTree and a sparse one's SparseMerkleTree are both _Trees,
    # and a frozen test sector's fields are PostSector fields too
    @property
    def params(self) -> PorepParams: ...

    @property
    def comm_r(self) -> int: ...

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


def post_test_sectors(sector_size: int, sector_ids: list[int], seed: int = 0) -> list[ProvenSector]:
    """TEST FIXTURE sectors numbered ``sector_ids`` that share one :func:`post_test_sector`'s
    tree_r_last, each with its own random comm_c and so its own comm_r = Poseidon(comm_c,
    comm_r_last). Their challenges differ (they depend on the sector id), so their vanilla
    proofs open different leaves of the one tree."""
    if len(set(sector_ids)) != len(sector_ids):
        raise ValueError("sector ids repeat: a partition proves distinct sectors")
    base = post_test_sector(sector_size, seed)
    rng = random.Random(f"post_test_sectors-{seed}")
    root = base.tree_r_last.root
    out = []
    for sid in sector_ids:
        comm_c = rng.getrandbits(254)
        out.append(ProvenSector(sid, replace(base, tree_c=_Root(comm_c), comm_r=poseidon_hash([comm_c, root]))))
    return out


def parse_sector_size(text: str) -> int:
    """A supported sector size from its name (``32GiB``, case-insensitive) or its byte count."""
    names = {name.lower(): size for size, name in SECTOR_SIZE_NAMES.items()}
    size = names.get(text.strip().lower())
    if size is None and text.strip().isdigit() and int(text) in SECTOR_SIZE_NAMES:
        size = int(text)
    if size is None:
        raise ValueError(f"sector size {text!r}: expected one of {', '.join(SECTOR_SIZE_NAMES.values())} "
                         "or its byte count")
    return size


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
    import time

    from cuzk_plugin.filecoin.post_proofs import POST_PROOFS, post_proof_by_number
    from cuzk_plugin.filecoin.seal import seal

    ap = argparse.ArgumentParser(
        description="PoSt TEST data as Curio sends it: a JSON list of base64 bincode FallbackPoStSectorProofs "
                    "(cuzk-bench's --vanilla container) of sealed 2 KiB sectors, or with --sparse of test-fixture "
                    "sectors of any size sharing one sparse tree_r_last (no replica of any data); prints the "
                    "randomness and, last, the cuzk-bench command that proves them.")
    ap.add_argument("--kind", choices=["window", "winning"], required=True)
    ap.add_argument("--sector-size", default="2KiB", help="2KiB (default), 8MiB, 512MiB, 32GiB or 64GiB "
                                                          "(above 2 KiB only with --sparse)")
    ap.add_argument("--sparse", action="store_true",
                    help="test-fixture sectors sharing one sparse tree (any size) instead of sealing 2 KiB sectors")
    ap.add_argument("--registered-proof", type=int,
                    help="Go RegisteredPoStProof (default: the size's Window V1_1, 10-14, or Winning, 0-4)")
    ap.add_argument("--sectors", type=int, default=1,
                    help="sectors to prove, numbered from --first-sector (Window: up to a partition, e.g. 2349 at "
                         "32 GiB, 2 at 2 KiB; Winning: 1)")
    ap.add_argument("--first-sector", type=int, default=1, help="the first sector number (default 1)")
    ap.add_argument("--miner-id", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0, help="randomness and sector data seed")
    ap.add_argument("--addr", default="ADDR", help="daemon address put in the printed cuzk-bench command")
    ap.add_argument("--out", required=True, help="where to write the JSON list")
    args = ap.parse_args(argv)
    try:
        size = parse_sector_size(args.sector_size)
    except ValueError as exc:
        ap.error(str(exc))
    kind = PostKind(args.kind)
    if args.registered_proof is not None:
        number = args.registered_proof
    else:
        number = next(p.number for p in POST_PROOFS if p.kind is kind and p.sector_size == size
                      and (kind is PostKind.WINNING or p.api_version == "1.2.0"))
    try:
        proof = post_proof_by_number(number)
    except ValueError as exc:
        ap.error(str(exc))
    name = SECTOR_SIZE_NAMES[size]
    if proof.kind is not kind or proof.sector_size != size:
        ap.error(f"--registered-proof {number} is {proof.go_name}, not a {name} {args.kind} proof")
    if size != 2 << 10 and not args.sparse:
        ap.error(f"--sector-size {name}: only 2 KiB sectors are sealed; --sparse makes test-fixture sectors of any size")
    if not 1 <= args.sectors <= proof.shape.vanilla_sectors:
        ap.error(f"--sectors {args.sectors}: a {name} {args.kind} proof takes 1 to {proof.shape.vanilla_sectors}")
    if args.first_sector < 0 or args.first_sector + args.sectors > 1 << 64:
        ap.error(f"--first-sector {args.first_sector}: sector numbers are u64")
    ids = list(range(args.first_sector, args.first_sector + args.sectors))
    t0 = time.perf_counter()
    if args.sparse:
        sectors = post_test_sectors(size, ids, args.seed)
    else:
        sectors = [ProvenSector(n, seal("StackedDrg2KiBV1_1", miner_id=args.miner_id, sector_id=n,
                                        data_seed=args.seed + n)) for n in ids]
    randomness = random_randomness(args.seed)
    vanilla = post_vanilla_proofs(proof, sectors, randomness)
    tmp = f"{args.out}.tmp-{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump([base64.b64encode(v).decode() for v in vanilla], fh)
    os.replace(tmp, args.out)
    what = "TEST-FIXTURE sectors sharing one sparse tree" if args.sparse else "sealed sectors"
    print(f"wrote {args.out}: {proof.go_name}, {len(vanilla)} vanilla proof(s) of {what}, "
          f"{sum(map(len, vanilla))} bytes, in {time.perf_counter() - t0:.1f} s")
    print(f"randomness {randomness.hex()}")
    print(f"cuzk-bench single -a {args.addr} -t {'wpost' if proof.kind is PostKind.WINDOW else 'winning'} "
          f"--vanilla {args.out} --registered-proof {number} --randomness {randomness.hex()} --miner-id {args.miner_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
