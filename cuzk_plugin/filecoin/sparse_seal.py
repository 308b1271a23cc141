"""A sparse test sealer for every sector size: a C1 whose every circuit constraint holds,
built from what the challenges open and nothing else. A TEST FIXTURE, not a sealing: the
sector it describes is not the replica of its data, and no real prover would accept it as one.

The sparse sector (``B`` = 64 nodes, the 2 KiB sector's size; ``C`` = every partition's
challenges; nodes n, layers l = 1..L):

- data(n) = block[n mod B], the block drawn exactly as :func:`~cuzk_plugin.filecoin.seal.seal`
  draws a 2 KiB sector's data (same generator, ticket and seed first);
- for n < B and for n in C, label(l, n) is the real label: SHA-256 over replica_id, l, n and
  the labels of its DRG parents in layer l and expander parents in layer l - 1, as this
  definition gives them;
- every other node repeats the block: label(l, n) = label(l, n mod B).

The definition is well founded and bounded: DRG parents precede their node, expander parents
sit one layer down, so the labels are computed layer by layer, the B block nodes first, then
the challenged nodes in increasing order, each reading only block values or earlier
challenged ones: at most (B + |C|) x L label hashes at any size (32 GiB: 244 x 11), not a layer.
A column then needs no more than its node's labels, and a challenged node's labels are
exactly the SHA-256 of the parent columns the C1 opens, so the circuit's labelling,
encoding and column constraints all hold. Nothing checks the labels of unchallenged nodes,
and nothing here pretends they are real.

Every tree's leaves are therefore periodic with period B, apart from the challenged nodes:
tree_d (SHA-256, binary) over the data has no exceptions; tree_c (Poseidon of each column)
and tree_r_last (Poseidon, leaf = label(L, n) + data(n)) override the challenged nodes.
:class:`~cuzk_plugin.filecoin.sparse_tree.SparseMerkleTree` builds them from the period and
the overrides (B is a power of 2 and of 8, so every level stays periodic), and comm_r =
Poseidon(comm_c, comm_r_last) as for a real sector.

At 2 KiB the block is the whole sector and every node is labelled for real: the sparse
sector is the sector :func:`~cuzk_plugin.filecoin.seal.seal` seals, and the C1s are equal.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.filecoin.challenges import interactive_challenges
from cuzk_plugin.filecoin.graph import StackedGraph
from cuzk_plugin.filecoin.params import PorepParams, porep_params
from cuzk_plugin.filecoin.poseidon import poseidon_hash
from cuzk_plugin.filecoin.proofs import (
    SECTOR_SIZE_NAMES,
    RegisteredSealProof,
    prover_id_from_miner,
    seal_proof_by_name,
)
from cuzk_plugin.filecoin.proofs import (
    replica_id as derive_replica_id,
)
from cuzk_plugin.filecoin.seal import expand_parents, label_hash
from cuzk_plugin.filecoin.sparse_tree import SparseMerkleTree
from cuzk_plugin.filecoin.trees import fr_to_bytes

__all__ = ["BLOCK_NODES", "SparseSector", "sparse_seal", "seal_proof_for_size"]

log = logging.getLogger(__name__)

#: Nodes of the repeated block: the 2 KiB sector; a power of 2 (tree_d) and of 8 (tree_c, tree_r_last).
BLOCK_NODES = 64


def seal_proof_for_size(sector_size: int) -> RegisteredSealProof:
    """StackedDrg<size>V1_1, the interactive PoRep of a sector size."""
    if sector_size not in SECTOR_SIZE_NAMES:
        raise ValueError(f"unsupported sector size {sector_size}; known: {sorted(SECTOR_SIZE_NAMES)}")
    return seal_proof_by_name(f"StackedDrg{SECTOR_SIZE_NAMES[sector_size]}V1_1")


@dataclass
class SparseSector:
    """A sparsely sealed test sector (see the module doc); what the C1 writer reads."""

    proof: RegisteredSealProof
    params: PorepParams
    graph: StackedGraph
    block_data: list[int]  #: data(n) = block_data[n % BLOCK_NODES]
    replica_id: bytes
    block_labels: list[list[int]]  #: block_labels[l - 1][j]: label(l, j) for j < BLOCK_NODES
    challenged_labels: list[dict[int, int]]  #: challenged_labels[l - 1][c]: label(l, c), c challenged >= BLOCK_NODES
    tree_d: SparseMerkleTree
    tree_r_last: SparseMerkleTree
    tree_c: SparseMerkleTree
    comm_r: int
    ticket: bytes
    seed: bytes

    @property
    def comm_d(self) -> int:
        return self.tree_d.root

    def label(self, layer: int, node: int) -> int:
        """label(layer, node) of the sparse sector, layer 1-based."""
        found = self.challenged_labels[layer - 1].get(node)
        return found if found is not None else self.block_labels[layer - 1][node % BLOCK_NODES]

    def data(self, node: int) -> int:
        return self.block_data[node % BLOCK_NODES]

    def challenges(self) -> list[list[int]]:
        """Every partition's challenges, as the verifier derives them."""
        p = self.params
        return [interactive_challenges(self.replica_id, self.seed, p.nodes, p.challenges_per_partition, k)
                for k in range(p.partitions)]


def _all_challenges(replica_id: bytes, seed: bytes, params: PorepParams) -> list[int]:
    nodes = set()
    for k in range(params.partitions):
        nodes.update(interactive_challenges(replica_id, seed, params.nodes, params.challenges_per_partition, k))
    return sorted(nodes)


def _labels(rid: bytes, graph: StackedGraph, layers: int, challenged: list[int]
            ) -> tuple[list[list[int]], list[dict[int, int]]]:
    """The block's labels and the challenged nodes' labels, layer by layer (module doc)."""
    block: list[list[int]] = []
    extra: list[dict[int, int]] = []

    def label(layer: int, node: int) -> int:
        found = extra[layer - 1].get(node)
        return found if found is not None else block[layer - 1][node % BLOCK_NODES]

    def real_label(layer: int, node: int) -> int:
        if node == 0:
            return label_hash(rid, layer, 0, None)
        parents = [label(layer, p) for p in graph.drg_parents(node)]
        if layer > 1:
            parents += [label(layer - 1, p) for p in graph.exp_parents(node)]
        return label_hash(rid, layer, node, expand_parents(parents, layer))

    for layer in range(1, layers + 1):
        block.append([])
        extra.append({})
        for node in range(BLOCK_NODES):
            block[-1].append(real_label(layer, node))  # DRG parents precede the node: already here
        for node in challenged:
            if node >= BLOCK_NODES:
                extra[-1][node] = real_label(layer, node)
    return block, extra


def sparse_seal(registered_proof: str = "StackedDrg2KiBV1_1", *, miner_id: int = 1000, sector_id: int = 1,
                data_seed: int = 0, ticket: bytes | None = None, seed: bytes | None = None) -> SparseSector:
    """Sparsely seal a test sector of any supported size (module doc); the same arguments as
    :func:`~cuzk_plugin.filecoin.seal.seal` give the same sector at 2 KiB."""
    proof = seal_proof_by_name(registered_proof)
    params = porep_params(proof.sector_size)
    nodes = params.nodes
    rng = random.Random(data_seed)
    ticket = ticket if ticket is not None else bytes(rng.getrandbits(8) for _ in range(31)) + b"\x00"
    seed = seed if seed is not None else bytes(rng.getrandbits(8) for _ in range(31)) + b"\x00"
    block_data = [rng.getrandbits(254) for _ in range(BLOCK_NODES)]
    graph = StackedGraph(nodes, proof.porep_id, legacy_predecessor=proof.api_version == "1.0.0")

    tree_d = SparseMerkleTree(nodes, [2] * params.data_levels, "sha256", block_data)
    rid = derive_replica_id(prover_id_from_miner(miner_id), sector_id, ticket, fr_to_bytes(tree_d.root),
                            proof.porep_id)
    challenged = _all_challenges(rid, seed, params)
    block_labels, challenged_labels = _labels(rid, graph, params.layers, challenged)

    layers = range(params.layers)
    top = params.layers - 1
    tree_c = SparseMerkleTree(
        nodes, params.tree_arities, "poseidon",
        [poseidon_hash([block_labels[l][j] for l in layers]) for j in range(BLOCK_NODES)],
        {c: poseidon_hash([challenged_labels[l][c] for l in layers]) for c in challenged_labels[0]},
    )
    tree_r_last = SparseMerkleTree(
        nodes, params.tree_arities, "poseidon",
        [(block_data[j] + block_labels[top][j]) % R for j in range(BLOCK_NODES)],
        {c: (block_data[c % BLOCK_NODES] + k) % R for c, k in challenged_labels[top].items()},
    )
    comm_r = poseidon_hash([tree_c.root, tree_r_last.root])
    log.info("sparse TEST sector %s (a fixture, not a replica): %d challenged nodes labelled, the rest "
             "repeats a %d-node block", proof.name, len(challenged), BLOCK_NODES)
    return SparseSector(proof, params, graph, block_data, rid, block_labels, challenged_labels,
                        tree_d, tree_r_last, tree_c, comm_r, ticket, seed)
