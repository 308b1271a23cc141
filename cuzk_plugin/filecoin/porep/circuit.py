"""The stacked DRG PoRep circuit of one partition (storage-proofs-porep ``stacked/circuit``).

Synthesis order, which fixes the variable and constraint layout:

1. replica_id (allocated, inputized), its 255 bits once (byte-reversed numbering);
   comm_d, comm_r (allocated, inputized); comm_r_last, comm_c (private);
   comm_r = Poseidon2(comm_c, comm_r_last).
2. Per challenge: data leaf; its comm_d inclusion (binary SHA-256 tree); for the 6 DRG then
   8 expander parents: column rows, Poseidon column hash, inclusion in comm_c; the challenge as
   a 64-bit public input; one label per layer (SHA-256 over replica_id, layer, node and 37
   parent labels); the encoded node key + data and its inclusion in comm_r_last; the
   challenged column's hash and its inclusion in comm_c.

Public inputs (rust-fil-proofs' order): ONE, replica_id, comm_d, comm_r, then per challenge
the comm_d path index, 6 DRG parent indices, 8 expander parent indices, the challenge, and
the comm_r_last and comm_c path indices (both the challenge).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuzk_plugin.filecoin.gadgets.boolean import FALSE, Boolean, alloc_bit, reverse_bit_numbering
from cuzk_plugin.filecoin.gadgets.merkle import PathLevel, enforce_inclusion, poseidon_node_hash, sha256_node_hash
from cuzk_plugin.filecoin.gadgets.num import (
    AllocatedNum,
    add,
    alloc_num,
    equal,
    inputize,
    pack_bits,
    pack_into_inputs,
    to_bits_le,
)
from cuzk_plugin.filecoin.gadgets.poseidon import poseidon_hash
from cuzk_plugin.filecoin.gadgets.sha256 import sha256
from cuzk_plugin.filecoin.params import BASE_DEGREE, EXP_DEGREE, PorepParams

__all__ = ["ColumnOpening", "ChallengeWitness", "PartitionWitness", "synthesize_partition",
           "blank_partition", "TOTAL_PARENTS"]

TOTAL_PARENTS = 37


@dataclass
class ColumnOpening:
    """A column (one label per layer, layer 1 first) and its path in the comm_c tree."""

    rows: list[int | None]
    path: list[PathLevel]


@dataclass
class ChallengeWitness:
    """Everything one challenge contributes to the circuit (values None for a blank circuit)."""

    challenge: int | None
    data_leaf: int | None
    comm_d_path: list[PathLevel]
    drg_parents: list[ColumnOpening]
    exp_parents: list[ColumnOpening]
    comm_r_last_path: list[PathLevel]
    comm_c_path: list[PathLevel]


@dataclass
class PartitionWitness:
    """One partition's private and public values."""

    replica_id: int | None
    comm_d: int | None
    comm_r: int | None
    comm_r_last: int | None
    comm_c: int | None
    challenges: list[ChallengeWitness] = field(default_factory=list)


def _blank_path(arities: list[int]) -> list[PathLevel]:
    return [PathLevel(a, (None,) * (a - 1), None) for a in arities]


def blank_partition(params: PorepParams) -> PartitionWitness:
    """A partition with the right shape and no values (setup, constraint counts)."""
    tree = params.tree_arities

    def column():
        return ColumnOpening([None] * params.layers, _blank_path(tree))

    ch = [
        ChallengeWitness(
            None, None, _blank_path([2] * params.data_levels),
            [column() for _ in range(BASE_DEGREE)], [column() for _ in range(EXP_DEGREE)],
            _blank_path(tree), _blank_path(tree),
        )
        for _ in range(params.challenges_per_partition)
    ]
    return PartitionWitness(None, None, None, None, None, ch)


def _label(cs, replica_bits: list[Boolean], parents: list[list[Boolean]], layer: int,
           node_bits_be: list[Boolean]) -> AllocatedNum:
    """create_label_circuit: SHA-256 of replica_id | layer (u32 BE) | node (u64 BE) | zero pad
    to 64 bytes | 37 parent labels, digest truncated to 254 bits and packed."""
    assert len(parents) == TOTAL_PARENTS
    msg = list(replica_bits)
    msg += [FALSE] * (256 - len(msg))
    msg += [Boolean.constant(bool((layer >> i) & 1)) for i in range(31, -1, -1)]
    msg += node_bits_be
    msg += [FALSE] * (512 - len(msg))
    for p in parents:
        msg += p
        msg += [FALSE] * (-len(msg) % 256)
    assert len(msg) == (2 + TOTAL_PARENTS) * 256
    digest = sha256(cs, msg)
    return pack_bits(cs, reverse_bit_numbering(digest)[:254])


def _alloc_column(cs, col: ColumnOpening) -> list[AllocatedNum]:
    return [alloc_num(cs, v) for v in col.rows]


def _challenge(cs, params: PorepParams, w: ChallengeWitness, comm_d, comm_c, comm_r_last, replica_bits, mark) -> None:
    data_leaf = alloc_num(cs, w.data_leaf)
    mark("comm_d inclusion of the data leaf")
    enforce_inclusion(cs, data_leaf, w.comm_d_path, comm_d, sha256_node_hash)

    columns = []
    for j, opening in enumerate(list(w.drg_parents) + list(w.exp_parents)):
        kind = f"DRG parent {j}" if j < BASE_DEGREE else f"expander parent {j - BASE_DEGREE}"
        mark(f"{kind}: column hash and comm_c inclusion")
        rows = _alloc_column(cs, opening)
        if len(rows) != params.layers:
            raise ValueError(f"a parent column has {len(rows)} rows, the sector has {params.layers} layers")
        col_hash = poseidon_hash(cs, rows)
        enforce_inclusion(cs, col_hash, opening.path, comm_c, poseidon_node_hash)
        columns.append(rows)
    drg, exp = columns[:BASE_DEGREE], columns[BASE_DEGREE:]

    challenge_bits = [alloc_bit(cs, None if w.challenge is None else bool((w.challenge >> i) & 1)) for i in range(64)]
    pack_into_inputs(cs, challenge_bits)
    node_bits_be = challenge_bits[::-1]

    labels = []
    for layer in range(1, params.layers + 1):
        mark(f"labeling of layer {layer}")
        parents = [reverse_bit_numbering(to_bits_le(cs, col[layer - 1])) for col in drg]
        if layer > 1:
            parents += [reverse_bit_numbering(to_bits_le(cs, col[layer - 2])) for col in exp]
            expanded = parents + parents + parents[:9]
        else:
            expanded = parents * 6 + [parents[0]]
        labels.append(_label(cs, replica_bits, expanded, layer, node_bits_be))

    mark("encoding and comm_r_last inclusion")
    encoded = add(cs, labels[-1], data_leaf)
    enforce_inclusion(cs, encoded, w.comm_r_last_path, comm_r_last, poseidon_node_hash)

    mark("challenged column hash and comm_c inclusion")
    column_hash = poseidon_hash(cs, labels)
    enforce_inclusion(cs, column_hash, w.comm_c_path, comm_c, poseidon_node_hash)


def synthesize_partition(cs, params: PorepParams, w: PartitionWitness, *, regions: list | None = None) -> None:
    """Synthesize one partition into ``cs`` (a ConstraintSystem or ShapeConstraintSystem).

    ``regions``, if given, receives (first constraint index, description) for each part of the
    circuit, so a violated constraint can be named."""
    if len(w.challenges) != params.challenges_per_partition:
        raise ValueError(f"{len(w.challenges)} challenges, a partition of this sector size has "
                         f"{params.challenges_per_partition}")
    replica_id = alloc_num(cs, w.replica_id)
    inputize(cs, replica_id)
    replica_bits = reverse_bit_numbering(to_bits_le(cs, replica_id))
    comm_d = alloc_num(cs, w.comm_d)
    inputize(cs, comm_d)
    comm_r = alloc_num(cs, w.comm_r)
    inputize(cs, comm_r)
    comm_r_last = alloc_num(cs, w.comm_r_last)
    comm_c = alloc_num(cs, w.comm_c)
    if regions is not None:
        regions.append((cs.num_constraints, "comm_r = Poseidon(comm_c, comm_r_last)"))
    equal(cs, comm_r, poseidon_hash(cs, [comm_c, comm_r_last]))
    for i, ch in enumerate(w.challenges):
        def mark(what: str, i: int = i, node: int | None = ch.challenge) -> None:
            if regions is not None:
                regions.append((cs.num_constraints, f"challenge {i} (node {node}): {what}"))
        _challenge(cs, params, ch, comm_d, comm_c, comm_r_last, replica_bits, mark)
