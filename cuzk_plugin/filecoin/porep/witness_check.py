"""A native check of a PoRep partition's witness: the relations the circuit enforces, evaluated
with the native hashes instead of constraints, so a large C1 (32 GiB: 180 challenges) can be
checked in seconds where synthesizing its partitions takes hours in the reference path.

Checked, per partition: comm_r = Poseidon(comm_c, comm_r_last); per challenge: the data leaf's
path hashes (SHA-256) to comm_d; each parent column's Poseidon hash has a path to comm_c; each
layer's label is the SHA-256 of replica_id, layer, node and the parent columns' labels; the
encoded node (last label + data) has a path to comm_r_last; the challenged column (its
labels) has a path to comm_c. It complements the circuit check, it does not replace it: bit
decompositions and public-input packing are the circuit's alone. Path indices against the
graph are the C1 parser's job (:mod:`cuzk_plugin.adapters.curio.porep.job`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn, cast

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.gadgets.merkle import PathLevel
from cuzk_plugin.filecoin.params import PorepParams
from cuzk_plugin.filecoin.porep.circuit import ChallengeWitness, PartitionWitness
from cuzk_plugin.filecoin.porep.labeling import expand_parents, label_hash
from cuzk_plugin.filecoin.poseidon import poseidon_hash
from cuzk_plugin.filecoin.trees import fr_to_bytes, node_hasher

__all__ = ["WitnessCheckError", "check_partition"]


class WitnessCheckError(CircuitError):
    """A relation of the PoRep circuit fails for the witness; ``challenge`` is its index in the
    partition (None for the partition's header) and ``what`` names the relation."""

    def __init__(self, partition: int | None, challenge: int | None, node: int | None, what: str):
        where = "header" if challenge is None else f"challenge {challenge} (node {node})"
        if partition is not None:
            where = f"partition {partition}, {where}"
        elif challenge is None:
            where = "partition header"
        super().__init__(f"{where}: {what}")
        self.partition = partition
        self.challenge = challenge
        self.what = what


class _MemoHash:
    """A node hash remembering its results: sibling paths through the same (often all-default)
    subtrees repeat the same child tuples many times."""

    def __init__(self, hasher: str):
        self._h = node_hasher(hasher)
        self._seen: dict[tuple[int, ...], int] = {}

    def __call__(self, children: list[int]) -> int:
        key = tuple(children)
        found = self._seen.get(key)
        if found is None:
            found = self._seen[key] = self._h(children)
        return found


def _root(leaf: int, path: list[PathLevel], h: Callable[[list[int]], int]) -> int:
    """The root ``path`` leads ``leaf`` to. The path has values: its challenge has (only a blank
    partition has None, and its challenges are refused first)."""
    cur = leaf
    for lv in path:
        sib = cast("tuple[int, ...]", lv.siblings)
        k = cast(int, lv.index)
        cur = h([*sib[:k], cur, *sib[k:]])
    return cur


def _check_challenge(params: PorepParams, rid: bytes, w: PartitionWitness, i: int, ch: ChallengeWitness,
                     sha: _MemoHash, pos: _MemoHash, partition: int | None) -> None:
    c, leaf = ch.challenge, ch.data_leaf

    def fail(what: str) -> NoReturn:
        raise WitnessCheckError(partition, i, c, what)

    if c is None or leaf is None:
        fail("no values (a blank partition's challenge)")
    if _root(leaf, ch.comm_d_path, sha) != w.comm_d:
        fail("the data leaf's path does not hash to comm_d")
    # the columns have values as their challenge has (see _root)
    drg = [cast("list[int]", col.rows) for col in ch.drg_parents]
    exp = [cast("list[int]", col.rows) for col in ch.exp_parents]
    for j, (col, rows) in enumerate(zip([*ch.drg_parents, *ch.exp_parents], drg + exp, strict=True)):
        kind = f"DRG parent {j}" if j < len(drg) else f"expander parent {j - len(drg)}"
        if _root(pos(list(rows)), col.path, pos) != w.comm_c:
            fail(f"{kind}: the column's path does not hash to comm_c")
    labels = []
    for layer in range(1, params.layers + 1):
        parents = [rows[layer - 1] for rows in drg]
        if layer > 1:
            parents += [rows[layer - 2] for rows in exp]
        labels.append(label_hash(rid, layer, c, expand_parents(parents, layer)))
    if _root((labels[-1] + leaf) % R, ch.comm_r_last_path, pos) != w.comm_r_last:
        fail("the encoded node's path does not hash to comm_r_last")
    if _root(pos(labels), ch.comm_c_path, pos) != w.comm_c:
        fail("the challenged column (labels from the parents) does not hash to comm_c")


def check_partition(params: PorepParams, w: PartitionWitness, *, partition: int | None = None) -> None:
    """Raise :class:`WitnessCheckError` at the first relation of the circuit ``w`` breaks
    (named with ``partition``, the partition's index, when given)."""
    if w.replica_id is None or w.comm_c is None or w.comm_r_last is None:
        raise WitnessCheckError(partition, None, None, "no values (a blank partition)")
    if w.comm_r != poseidon_hash([w.comm_c, w.comm_r_last]):
        raise WitnessCheckError(partition, None, None, "comm_r is not Poseidon(comm_c, comm_r_last)")
    rid = fr_to_bytes(w.replica_id)
    sha, pos = _MemoHash("sha256"), _MemoHash("poseidon")
    for i, ch in enumerate(w.challenges):
        _check_challenge(params, rid, w, i, ch, sha, pos, partition)
