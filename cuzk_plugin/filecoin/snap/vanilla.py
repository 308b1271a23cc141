"""The native EmptySectorUpdate: phi, rho, the encoding, a partition's challenges and its vanilla
PartitionProof, with the checks the vanilla verifier makes (storage-proofs-update
``vanilla.rs``, ``challenges.rs``; /work/shared/specs/snap-facts.md sections 3, 4 and 9).

Field elements are Python ints; on the wire they are 32-byte little-endian.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.poseidon import custom_constants, poseidon_hash
from cuzk_plugin.filecoin.snap.params import UpdateParams
from cuzk_plugin.filecoin.trees import MerklePath, MerkleTree, node_hasher

__all__ = [
    "GEN_RANDOMNESS",
    "ChallengeProof",
    "PartitionProof",
    "UpdateProofError",
    "challenge_high",
    "encode",
    "partition_challenges",
    "path_index",
    "phi",
    "rho",
    "verify_partition",
]

#: Poseidon "gen randomness": arity 2, HashType::Custom(CType::Arbitrary(1)) -> tag 2^40 (snap-facts 3).
GEN_RANDOMNESS = custom_constants(2, 1)
_SHA_NODE = node_hasher("sha256")


def phi(comm_d_new: int, comm_r_old: int) -> int:
    """phi = PoseidonGR(comm_d_new, comm_r_old)."""
    return poseidon_hash([comm_d_new, comm_r_old], GEN_RANDOMNESS)


def rho(phi_: int, high: int) -> int:
    """rho(high) = PoseidonGR(phi, high)."""
    return poseidon_hash([phi_, high], GEN_RANDOMNESS)


def challenge_high(p: UpdateParams, node: int, h: int) -> int:
    """The top h bits of the node index."""
    return node >> (p.challenge_bit_len - h)


def partition_challenges(p: UpdateParams, comm_r_new: int, k: int) -> list[int]:
    """Challenges::new(k): digest j = PoseidonGR(comm_r_new, k * digests_per_partition + j),
    its LE bits cut into ``random_bits`` chunks, each OR (k << random_bits)."""
    if not 0 <= k < p.partitions:
        raise ValueError(f"partition {k} out of range: this sector size has {p.partitions}")
    rb, out = p.random_bits, list[int]()
    j = k * p.digests_per_partition
    while len(out) < p.challenges:
        digest = poseidon_hash([comm_r_new, j], GEN_RANDOMNESS)
        for i in range(min(p.challenges_per_digest, p.challenges - len(out))):
            out.append(((digest >> (i * rb)) & ((1 << rb) - 1)) | (k << rb))
        j += 1
    return out


def encode(p: UpdateParams, sector_key: list[int], staged: list[int], phi_: int, h: int) -> list[int]:
    """new_replica[i] = sector_key[i] + staged[i] * rho(high(i)) over Fr (test sizes: a list)."""
    if len(sector_key) != p.nodes or len(staged) != p.nodes:
        raise ValueError(f"encoding needs {p.nodes} nodes of sector key and data")
    shift = p.challenge_bit_len - h
    rhos = [rho(phi_, high) for high in range(1 << h)]
    return [(key + d * rhos[i >> shift]) % R for i, (key, d) in enumerate(zip(sector_key, staged, strict=False))]


@dataclass(frozen=True)
class ChallengeProof:
    """One challenge's three openings: TreeR old, TreeD new (binary SHA-256), TreeR new."""

    proof_r_old: MerklePath
    proof_d_new: MerklePath
    proof_r_new: MerklePath


@dataclass(frozen=True)
class PartitionProof:
    """storage-proofs-update vanilla PartitionProof."""

    comm_c: int
    apex_leafs: list[int]
    challenge_proofs: list[ChallengeProof]


class UpdateProofError(CircuitError):
    """A PartitionProof that the vanilla verifier would refuse; the message names the field."""


def path_index(path: MerklePath) -> int:
    index, scale = 0, 1
    for (_, pos), arity in zip(path.levels, path.arities, strict=False):
        index += pos * scale
        scale *= arity
    return index


def _check(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise UpdateProofError(f"{where}: {what}")


def verify_partition(p: UpdateParams, proof: PartitionProof, k: int, comm_r_old: int, comm_d_new: int,
                     comm_r_new: int, h: int | None = None, *, prefix: str = "partition") -> None:
    """EmptySectorUpdate::verify for partition k: shapes, path indices = the derived challenges,
    roots, comm_r = Poseidon(comm_c, root_r), the encoding equation, the apex leaves' tree to
    comm_d_new and every TreeD path through its apex leaf. Raises :class:`UpdateProofError`."""
    h = p.h_default if h is None else h
    _check(len(proof.apex_leafs) == p.apex_leaves, f"{prefix}.apex_leafs",
           f"{len(proof.apex_leafs)} leaves, expected {p.apex_leaves}")
    _check(len(proof.challenge_proofs) == p.challenges, f"{prefix}.challenge_proofs",
           f"{len(proof.challenge_proofs)} challenges, expected {p.challenges}")
    first = proof.challenge_proofs[0]
    root_r_old, root_r_new = first.proof_r_old.root, first.proof_r_new.root
    _check(poseidon_hash([proof.comm_c, root_r_old]) == comm_r_old, f"{prefix}.comm_c",
           "Poseidon(comm_c, root of challenge 0's proof_r_old) is not comm_r_old")
    _check(poseidon_hash([proof.comm_c, root_r_new]) == comm_r_new, f"{prefix}.comm_c",
           "Poseidon(comm_c, root of challenge 0's proof_r_new) is not comm_r_new")
    apex = MerkleTree(list(proof.apex_leafs), [2] * p.apex_leaf_bit_len, "sha256")
    phi_ = phi(comm_d_new, comm_r_old)
    for i, (cp, c) in enumerate(zip(proof.challenge_proofs, partition_challenges(p, comm_r_new, k), strict=False)):
        where = f"{prefix}.challenge_proofs[{i}]"
        for name, path, root, arities in (
            ("proof_r_old", cp.proof_r_old, root_r_old, p.tree_r_arities),
            ("proof_d_new", cp.proof_d_new, comm_d_new, [2] * p.challenge_bit_len),
            ("proof_r_new", cp.proof_r_new, root_r_new, p.tree_r_arities),
        ):
            _check(list(path.arities) == list(arities), f"{where}.{name}",
                   f"path arities {list(path.arities)}, the sector's tree has {list(arities)}")
            _check(path_index(path) == c, f"{where}.{name}", f"path addresses node {path_index(path)}, the challenge is {c}")
            _check(path.root == root, f"{where}.{name}.root", "differs from the partition's root")
            _check(MerkleTree.verify(path, "sha256" if name == "proof_d_new" else "poseidon"), f"{where}.{name}",
                   "the path does not hash to its root")
        new = (cp.proof_r_old.leaf + cp.proof_d_new.leaf * rho(phi_, challenge_high(p, c, h))) % R
        _check(new == cp.proof_r_new.leaf, f"{where}.proof_r_new.leaf",
               "is not leaf_r_old + leaf_d_new * rho (the encoding)")
        # the TreeD path's node at the apex height is the selected apex leaf, and its upper
        # siblings are the apex tree's
        apex_pos = (c >> p.apex_start) & (p.apex_leaves - 1)
        node = cp.proof_d_new.leaf
        for siblings, pos in cp.proof_d_new.levels[:p.apex_start]:
            pair = [siblings[0], node] if pos else [node, siblings[0]]
            node = _SHA_NODE(pair)
        _check(node == proof.apex_leafs[apex_pos], f"{where}.proof_d_new",
               f"does not pass through apex leaf {apex_pos}")
        for lvl, (siblings, _pos) in enumerate(cp.proof_d_new.levels[p.apex_start:p.apex_start + p.apex_leaf_bit_len]):
            apex_sibling = apex.layers[lvl][(apex_pos >> lvl) ^ 1]
            _check(siblings[0] == apex_sibling, f"{where}.proof_d_new.path[{p.apex_start + lvl}]",
                   "sibling is not the apex tree's")
        _check(cp.proof_d_new.levels[p.apex_start + p.apex_leaf_bit_len:]
               == first.proof_d_new.levels[p.apex_start + p.apex_leaf_bit_len:],
               f"{where}.proof_d_new", "partition path differs from challenge 0's")
