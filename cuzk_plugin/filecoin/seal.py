"""A small-sector sealer for tests and examples: replicate a sector with the stacked DRG
(labels of every layer, encoding, trees), derive the interactive challenges from a seed and
write the C1 output JSON Curio would send (filecoin-proofs-api SealCommitPhase1Output).

Pure Python: fit for 2 KiB sectors (64 nodes), far too slow for production sizes.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from cuzk_plugin.filecoin.proofs import (
    RegisteredSealProof, prover_id_from_miner, replica_id as derive_replica_id, seal_proof_by_name,
)
from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.filecoin.challenges import interactive_challenges
from cuzk_plugin.filecoin.circuit import TOTAL_PARENTS
from cuzk_plugin.filecoin.graph import StackedGraph
from cuzk_plugin.filecoin.params import PorepParams, porep_params
from cuzk_plugin.filecoin.poseidon import poseidon_hash
from cuzk_plugin.filecoin.trees import MerklePath, MerkleTree, fr_to_bytes, sha256_fr

__all__ = ["SealedSector", "seal", "interactive_challenges", "c1_output", "c1_json", "expand_parents"]


def expand_parents(parents: list[int], layer: int) -> list[int]:
    """The 37 parent slots of a label: layer 1 repeats its 6 DRG parents; later layers their
    14 (DRG then expander) parents twice, then the first 9."""
    if layer == 1:
        return parents * 6 + parents[:1]
    return parents + parents + parents[:9]


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


def _label(replica_id: bytes, layer: int, node: int, parent_labels: list[int] | None) -> int:
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
                cur.append(_label(rid, layer, node, None))
                continue
            parents = [cur[p] for p in graph.drg_parents(node)]
            if layer > 1:
                parents += [labels[-1][p] for p in graph.exp_parents(node)]
            cur.append(_label(rid, layer, node, expand_parents(parents, layer)))
        labels.append(cur)

    replica = [(d + k) % R for d, k in zip(data, labels[-1])]
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
    extra = 0 if binary else (1 if params.sub_arity else 0) + (1 if params.top_arity else 0)
    if extra == 0:
        return {"data": {"Single": {"root": root, "leaf": leaf, "path": {"path": elements}}}}
    base, rest = elements[:len(elements) - extra], elements[len(elements) - extra:]
    if extra == 1:
        return {"data": {"Sub": {"base_proof": {"path": base}, "sub_proof": {"path": rest},
                                 "root": root, "leaf": leaf}}}
    return {"data": {"Top": {"base_proof": {"path": base}, "sub_proof": {"path": rest[:1]},
                             "top_proof": {"path": rest[1:]}, "root": root, "leaf": leaf}}}


def _column_json(s: SealedSector, node: int) -> dict:
    return {
        "column": {"index": node, "rows": [_domain(s.labels[l][node]) for l in range(s.params.layers)], "_h": None},
        "inclusion_proof": _merkle_json(s.tree_c.path(node), s.params),
    }


def _labeling_parents(s: SealedSector, node: int, layer: int) -> list[int]:
    parents = [s.labels[layer - 1][p] for p in s.graph.drg_parents(node)]
    if layer > 1:
        parents += [s.labels[layer - 2][p] for p in s.graph.exp_parents(node)]
    return expand_parents(parents, layer)


def _challenge_proof(s: SealedSector, c: int) -> dict:
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


def c1_output(s: SealedSector) -> dict:
    """The C1 output JSON (as a dict) for every partition of the sealed sector."""
    parts = []
    for k in range(s.params.partitions):
        chs = interactive_challenges(s.replica_id, s.seed, s.params.nodes, s.params.challenges_per_partition, k)
        parts.append([_challenge_proof(s, c) for c in chs])
    return {
        "registered_proof": s.proof.name,
        "vanilla_proofs": {s.proof.v1_name: parts},
        "comm_r": _domain(s.comm_r),
        "comm_d": _domain(s.comm_d),
        "replica_id": list(s.replica_id),
        "seed": list(s.seed),
        "ticket": list(s.ticket),
    }


def c1_json(s: SealedSector) -> bytes:
    return json.dumps(c1_output(s)).encode()



def _main(argv: list[str] | None = None) -> int:
    import argparse
    import base64

    ap = argparse.ArgumentParser(description="Seal a 2 KiB test sector and write its C1 output JSON")
    ap.add_argument("--out", required=True, help="where to write the C1 JSON")
    ap.add_argument("--envelope", action="store_true", help="wrap it as Curio's {SectorNum, Phase1Out, SectorSize}")
    ap.add_argument("--proof", default="StackedDrg2KiBV1_1")
    ap.add_argument("--miner-id", type=int, default=1000)
    ap.add_argument("--sector-id", type=int, default=1)
    ap.add_argument("--data-seed", type=int, default=0)
    args = ap.parse_args(argv)
    sector = seal(args.proof, miner_id=args.miner_id, sector_id=args.sector_id, data_seed=args.data_seed)
    raw = c1_json(sector)
    if args.envelope:
        raw = json.dumps({"SectorNum": args.sector_id, "Phase1Out": base64.b64encode(raw).decode(),
                          "SectorSize": sector.params.sector_size}).encode()
    with open(args.out, "wb") as fh:
        fh.write(raw)
    print(f"wrote {args.out}: {sector.proof.name}, comm_d {fr_to_bytes(sector.comm_d).hex()}, "
          f"comm_r {fr_to_bytes(sector.comm_r).hex()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
