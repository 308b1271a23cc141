"""A small-sector sealer for tests and examples: replicate a sector with the stacked DRG
(labels of every layer, encoding, trees), derive the interactive challenges from a seed and
write the C1 output JSON Curio would send (filecoin-proofs-api SealCommitPhase1Output).

Pure Python: fit for 2 KiB sectors (64 nodes), far too slow for production sizes. For any
size, ``--sparse`` writes a test fixture instead (:mod:`cuzk_plugin.filecoin.sparse_seal`):
only what the challenges open is built, and every constraint of the circuit holds for it.
The C1 writer below serves both through :class:`Sector`.
"""

from __future__ import annotations

import json
import logging
import os
import random
from dataclasses import dataclass
from typing import Protocol

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.filecoin.challenges import interactive_challenges
from cuzk_plugin.filecoin.circuit import TOTAL_PARENTS
from cuzk_plugin.filecoin.graph import StackedGraph
from cuzk_plugin.filecoin.params import PorepParams, porep_params
from cuzk_plugin.filecoin.poseidon import poseidon_hash
from cuzk_plugin.filecoin.proofs import (
    RegisteredSealProof,
    prover_id_from_miner,
    seal_proof_by_name,
)
from cuzk_plugin.filecoin.proofs import (
    replica_id as derive_replica_id,
)
from cuzk_plugin.filecoin.trees import MerklePath, MerkleTree, fr_to_bytes, sha256_fr

__all__ = ["Sector", "SealedSector", "seal", "interactive_challenges", "c1_output", "c1_json", "expand_parents",
           "label_hash"]


def expand_parents(parents: list[int], layer: int) -> list[int]:
    """The 37 parent slots of a label: layer 1 repeats its 6 DRG parents; later layers their
    14 (DRG then expander) parents twice, then the first 9."""
    if layer == 1:
        return parents * 6 + parents[:1]
    return parents + parents + parents[:9]


class _Tree(Protocol):
    @property
    def root(self) -> int: ...

    def path(self, index: int) -> MerklePath: ...


class Sector(Protocol):
    """What the C1 writer reads from a sealed (or sparsely sealed) sector."""

    proof: RegisteredSealProof
    params: PorepParams
    graph: StackedGraph
    replica_id: bytes
    comm_r: int
    ticket: bytes
    seed: bytes

    # read-only: a sealed sector's MerkleTree and a sparse one's SparseMerkleTree are both _Trees
    @property
    def tree_d(self) -> _Tree: ...

    @property
    def tree_r_last(self) -> _Tree: ...

    @property
    def tree_c(self) -> _Tree: ...

    @property
    def comm_d(self) -> int: ...

    def label(self, layer: int, node: int) -> int:
        """The label of ``node`` in ``layer`` (1-based)."""


@dataclass
class SealedSector:
    """Everything the sealer computed for one sector."""

    proof: RegisteredSealProof
    params: PorepParams
    graph: StackedGraph
    data: list[int]  #: data nodes as field elements
    replica_id: bytes
    labels: list[list[int]]  #: labels[layer - 1][node]
    tree_d: MerkleTree
    tree_r_last: MerkleTree
    tree_c: MerkleTree
    comm_r: int
    ticket: bytes
    seed: bytes

    @property
    def comm_d(self) -> int:
        return self.tree_d.root

    def label(self, layer: int, node: int) -> int:
        return self.labels[layer - 1][node]


def label_hash(replica_id: bytes, layer: int, node: int, parent_labels: list[int] | None) -> int:
    """SHA-256 of replica_id | layer (u32 BE) | node (u64 BE) | 20 zero bytes | the 37 expanded
    parent labels (none for node 0), as a field element."""
    buf = layer.to_bytes(4, "big") + node.to_bytes(8, "big") + bytes(20)
    msg = replica_id + buf
    if parent_labels is not None:
        assert len(parent_labels) == TOTAL_PARENTS
        msg += b"".join(fr_to_bytes(p) for p in parent_labels)
    return sha256_fr(msg)


def seal(registered_proof: str = "StackedDrg2KiBV1_1", *, miner_id: int = 1000, sector_id: int = 1,
         data_seed: int = 0, ticket: bytes | None = None, seed: bytes | None = None) -> SealedSector:
    """Replicate a sector of random (fr32-valid) data."""
    proof = seal_proof_by_name(registered_proof)
    params = porep_params(proof.sector_size)
    if params.nodes > 1 << 12:
        raise ValueError("the Python sealer is meant for 2 KiB sectors")
    rng = random.Random(data_seed)
    ticket = ticket if ticket is not None else bytes(rng.getrandbits(8) for _ in range(31)) + b"\x00"
    seed = seed if seed is not None else bytes(rng.getrandbits(8) for _ in range(31)) + b"\x00"
    data = [rng.getrandbits(254) for _ in range(params.nodes)]
    graph = StackedGraph(params.nodes, proof.porep_id, legacy_predecessor=proof.api_version == "1.0.0")

    tree_d = MerkleTree(data, [2] * params.data_levels, "sha256")
    rid = derive_replica_id(prover_id_from_miner(miner_id), sector_id, ticket, fr_to_bytes(tree_d.root), proof.porep_id)

    labels: list[list[int]] = []
    for layer in range(1, params.layers + 1):
        cur: list[int] = []
        for node in range(params.nodes):
            if node == 0:
                cur.append(label_hash(rid, layer, node, None))
                continue
            parents = [cur[p] for p in graph.drg_parents(node)]
            if layer > 1:
                parents += [labels[-1][p] for p in graph.exp_parents(node)]
            cur.append(label_hash(rid, layer, node, expand_parents(parents, layer)))
        labels.append(cur)

    replica = [(d + k) % R for d, k in zip(data, labels[-1], strict=True)]
    tree_r_last = MerkleTree(replica, params.tree_arities, "poseidon")
    columns = [poseidon_hash([labels[l][n] for l in range(params.layers)]) for n in range(params.nodes)]
    tree_c = MerkleTree(columns, params.tree_arities, "poseidon")
    comm_r = poseidon_hash([tree_c.root, tree_r_last.root])
    return SealedSector(proof, params, graph, data, rid, labels, tree_d, tree_r_last, tree_c, comm_r, ticket, seed)


def _domain(x: int) -> list[int]:
    return list(fr_to_bytes(x))


def _merkle_json(path: MerklePath, params: PorepParams, *, binary: bool = False) -> dict:
    elements = [{"hashes": [_domain(h) for h in sib], "index": pos} for sib, pos in path.levels]
    root, leaf = _domain(path.root), _domain(path.leaf)
    extra = 0 if binary else params.upper_levels
    if extra == 0:
        return {"data": {"Single": {"root": root, "leaf": leaf, "path": {"path": elements}}}}
    base, rest = elements[:len(elements) - extra], elements[len(elements) - extra:]
    if extra == 1:
        return {"data": {"Sub": {"base_proof": {"path": base}, "sub_proof": {"path": rest},
                                 "root": root, "leaf": leaf}}}
    return {"data": {"Top": {"base_proof": {"path": base}, "sub_proof": {"path": rest[:1]},
                             "top_proof": {"path": rest[1:]}, "root": root, "leaf": leaf}}}


def _column_json(s: Sector, node: int) -> dict:
    return {
        "column": {"index": node, "rows": [_domain(s.label(l, node)) for l in range(1, s.params.layers + 1)],
                   "_h": None},
        "inclusion_proof": _merkle_json(s.tree_c.path(node), s.params),
    }


def _labeling_parents(s: Sector, node: int, layer: int) -> list[int]:
    parents = [s.label(layer, p) for p in s.graph.drg_parents(node)]
    if layer > 1:
        parents += [s.label(layer - 1, p) for p in s.graph.exp_parents(node)]
    return expand_parents(parents, layer)


def challenge_proof(s: Sector, c: int) -> dict:
    """Challenge ``c``'s vanilla proof in the C1 JSON layout (paths, columns, labels, encoding);
    every PoRep variant's C1 is a list of these per partition."""
    layers = s.params.layers
    return {
        "comm_d_proofs": _merkle_json(s.tree_d.path(c), s.params, binary=True),
        "comm_r_last_proof": _merkle_json(s.tree_r_last.path(c), s.params),
        "replica_column_proofs": {
            "c_x": _column_json(s, c),
            "drg_parents": [_column_json(s, p) for p in s.graph.drg_parents(c)],
            "exp_parents": [_column_json(s, p) for p in s.graph.exp_parents(c)],
        },
        "labeling_proofs": [
            {"parents": [_domain(x) for x in _labeling_parents(s, c, layer)], "layer_index": layer, "node": c}
            for layer in range(1, layers + 1)
        ],
        "encoding_proof": {
            "parents": [_domain(x) for x in _labeling_parents(s, c, layers)], "layer_index": layers, "node": c,
        },
    }


def c1_output(s: Sector) -> dict:
    """The C1 output JSON (as a dict) for every partition of the sealed sector."""
    parts = []
    for k in range(s.params.partitions):
        chs = interactive_challenges(s.replica_id, s.seed, s.params.nodes, s.params.challenges_per_partition, k)
        parts.append([challenge_proof(s, c) for c in chs])
    return {
        "registered_proof": s.proof.name,
        "vanilla_proofs": {s.proof.v1_name: parts},
        "comm_r": _domain(s.comm_r),
        "comm_d": _domain(s.comm_d),
        "replica_id": list(s.replica_id),
        "seed": list(s.seed),
        "ticket": list(s.ticket),
    }


def c1_json(s: Sector) -> bytes:
    return json.dumps(c1_output(s)).encode()


def _write_atomically(path: str, raw: bytes) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(raw)
    os.replace(tmp, path)


def _main(argv: list[str] | None = None) -> int:
    import argparse
    import base64

    from cuzk_plugin.filecoin.params import parse_sector_size
    from cuzk_plugin.filecoin.sparse_seal import seal_proof_for_size, sparse_seal

    ap = argparse.ArgumentParser(
        description="Seal a test sector and write its C1 output JSON. Without --sparse: a real 2 KiB "
                    "sealing. With --sparse: a TEST FIXTURE at any size (only the challenged nodes are "
                    "labelled, the rest repeats a 64-node block; every circuit constraint holds, but it "
                    "is not the replica of any data).")
    ap.add_argument("--out", required=True, help="where to write the C1 JSON")
    ap.add_argument("--envelope", action="store_true", help="wrap it as Curio's {SectorNum, Phase1Out, SectorSize}")
    ap.add_argument("--proof", help="registered seal proof (default StackedDrg<size>V1_1)")
    ap.add_argument("--sector-size", help="2KiB, 8MiB, 512MiB, 32GiB or 64GiB (default 2KiB)")
    ap.add_argument("--sparse", action="store_true",
                    help="write a sparse test fixture (any size) instead of sealing the whole sector")
    ap.add_argument("--miner-id", type=int, default=1000)
    ap.add_argument("--sector-id", type=int, default=1)
    ap.add_argument("--data-seed", type=int, default=0)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        size = parse_sector_size(args.sector_size) if args.sector_size else None
        proof = seal_proof_by_name(args.proof) if args.proof else seal_proof_for_size(size or (2 << 10))
    except ValueError as exc:
        ap.error(str(exc))
    if size is not None and proof.sector_size != size:
        ap.error(f"--proof {proof.name} is for {proof.sector_size}-byte sectors, not --sector-size {args.sector_size}")
    if not args.sparse and proof.sector_size != 2 << 10:
        ap.error("the full sealer seals 2 KiB sectors only; use --sparse for a test fixture of this size")
    make = sparse_seal if args.sparse else seal
    sector = make(proof.name, miner_id=args.miner_id, sector_id=args.sector_id, data_seed=args.data_seed)
    raw = c1_json(sector)
    if args.envelope:
        raw = json.dumps({"SectorNum": args.sector_id, "Phase1Out": base64.b64encode(raw).decode(),
                          "SectorSize": sector.params.sector_size}).encode()
    _write_atomically(args.out, raw)
    kind = "sparse TEST FIXTURE (not a replica)" if args.sparse else "sealed"
    print(f"wrote {args.out}: {kind} {sector.proof.name}, {len(raw)} bytes, comm_d {fr_to_bytes(sector.comm_d).hex()}, "
          f"comm_r {fr_to_bytes(sector.comm_r).hex()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
