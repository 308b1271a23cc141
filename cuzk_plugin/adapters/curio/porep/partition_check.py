"""One partition of a PoRep C1 checked as the verifier sees it: its challenges derived (not read),
every Merkle path, column and parent matched to them, and its public inputs computed.

:class:`PartitionChecker` runs in the planning thread for a whole C1 (partition after partition,
the roots shared: the first problem in document order is the one named), or, for a large C1, in
a planning process a partition (:func:`check_partition_text`: the partition's own JSON text
decoded, validated and checked there; ~0.2 s of one core a 32 GiB partition instead of 1.5-3 s
for the whole C1 on the daemon's one thread). A partition that fails there is checked again
in the thread, which names its problem.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from pydantic import TypeAdapter

from cuzk_plugin.adapters.curio import json_pieces
from cuzk_plugin.adapters.curio.porep.c1 import C1Error, ColumnProof, MerkleProof, VanillaProof
from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.fast_cs import gc_paused
from cuzk_plugin.filecoin.gadgets.merkle import PathLevel
from cuzk_plugin.filecoin.params import BASE_DEGREE, EXP_DEGREE, PorepParams
from cuzk_plugin.filecoin.porep.challenges import porep_challenges
from cuzk_plugin.filecoin.porep.circuit import ChallengeWitness, ColumnOpening
from cuzk_plugin.filecoin.porep.graph import StackedGraph
from cuzk_plugin.filecoin.proofs import RegisteredSealProof

__all__ = ["C1Context", "PartitionCheck", "PartitionChecker", "Roots", "check_partition_text", "field_element"]


def field_element(d, path: str) -> int:
    """A C1's 32-byte little-endian value as an Fr element; C1Error naming ``path`` if >= r."""
    x = int.from_bytes(bytes(d), "little")
    if x >= R:
        raise C1Error(path, "is not a field element (>= r)")
    return x


def _level_path(path: str, variant: str, i: int, n_base: int) -> str:
    """JSON path of level i (leaf first) of a Single / Sub / Top proof."""
    if variant == "Single":
        return f"{path}.data.Single.path.path[{i}]"
    if i < n_base:
        return f"{path}.data.{variant}.base_proof.path[{i}]"
    return f"{path}.data.{variant}.{'sub_proof' if i == n_base else 'top_proof'}.path[0]"


_LITTLE: itertools.repeat[Literal["little"]] = itertools.repeat("little")


def _levels(proof: MerkleProof, arities: list[int], path: str, expect_variant: str) -> list[PathLevel]:
    if proof.data.variant != expect_variant:
        raise C1Error(f"{path}.data", f"expected a {expect_variant} proof for this sector size, got {proof.data.variant}")
    levels = proof.data.levels()
    if len(levels) != len(arities):
        raise C1Error(f"{path}.data.{expect_variant}", f"{len(levels)} path levels, expected {len(arities)}")
    n_base = len(arities) - {"Single": 0, "Sub": 1, "Top": 2}[expect_variant]
    out = []
    for i, (el, arity) in enumerate(zip(levels, arities, strict=False)):
        # a 32 GiB C1 holds ~240 K of these hashes: the JSON path is only spelled out for a bad one
        hashes = tuple(map(int.from_bytes, el.hashes, _LITTLE))
        if len(hashes) != arity - 1 or el.index >= arity or max(hashes, default=0) >= R:
            where = _level_path(path, expect_variant, i, n_base)
            if len(hashes) != arity - 1:
                raise C1Error(f"{where}.hashes", f"{len(hashes)} siblings, arity {arity} needs {arity - 1}")
            if el.index >= arity:
                raise C1Error(f"{where}.index", f"{el.index} is not below the arity {arity}")
            j = next(j for j, x in enumerate(hashes) if x >= R)
            raise C1Error(f"{where}.hashes[{j}]", "is not a field element (>= r)")
        out.append(PathLevel(arity, hashes, el.index))
    return out


def _path_index(levels: list[PathLevel]) -> int:
    index, scale = 0, 1
    for lv in levels:
        assert lv.index is not None  # parsed levels always carry their position
        index += lv.index * scale
        scale *= lv.arity
    return index


@dataclass(frozen=True)
class C1Context:
    """What checking any partition of a C1 needs (small: it travels to each planning process)."""

    seal_proof: RegisteredSealProof
    params: PorepParams
    replica_id: bytes
    comm_d: bytes
    comm_r: bytes
    seed: bytes
    #: JSON path of the C1 output (``$``, or ``$.Phase1Out`` inside Curio's envelope).
    prefix: str = "$"

    @property
    def base(self) -> str:
        """JSON path of the partitions' list (``$.vanilla_proofs.StackedDrg32GiBV1``)."""
        return f"{self.prefix}.vanilla_proofs.{self.seal_proof.v1_name}"


@dataclass
class Roots:
    """comm_r_last and comm_c as the first checked challenge's paths give them; every other
    challenge must agree."""

    comm_r_last: int | None = None
    comm_c: int | None = None


@dataclass(frozen=True)
class PartitionCheck:
    """A checked partition: its challenges' witnesses and its public inputs (ONE excluded)."""

    challenges: list[ChallengeWitness]
    inputs: list[int]
    roots: Roots = field(default_factory=Roots)


class PartitionChecker:
    """Checks the partitions of one C1 (:class:`C1Context`)."""

    def __init__(self, ctx: C1Context):
        self.ctx = ctx
        self.params = ctx.params
        self.seal_proof = ctx.seal_proof

    @cached_property
    def graph(self) -> StackedGraph:
        return StackedGraph(self.params.nodes, self.seal_proof.porep_id,
                            legacy_predecessor=self.seal_proof.api_version == "1.0.0")

    def check(self, k: int, proofs: list[VanillaProof], roots: Roots) -> PartitionCheck:
        """Partition k; C1Error naming the first problem (``roots``: those of the challenges
        checked before, updated with the first one's)."""
        ctx, p = self.ctx, self.params
        if len(proofs) != p.challenges_per_partition:
            raise C1Error(f"{ctx.base}[{k}]", f"{len(proofs)} challenges, expected {p.challenges_per_partition}")
        replica_id, comm_d, comm_r = (int.from_bytes(v, "little") for v in (ctx.replica_id, ctx.comm_d, ctx.comm_r))
        expected = porep_challenges(self.seal_proof.challenge_kind, replica_id=ctx.replica_id, comm_r=ctx.comm_r,
                                    seed=ctx.seed, nodes=p.nodes, challenges_per_partition=p.challenges_per_partition,
                                    partition=k)
        challenges, inputs = [], [replica_id, comm_d, comm_r]
        for i, (vp, challenge) in enumerate(zip(proofs, expected, strict=False)):
            path = f"{ctx.base}[{k}][{i}]"
            ch = self._challenge(vp, challenge, path, p.tree_variant, comm_d)
            root_r = field_element(vp.comm_r_last_proof.data.proof.root, f"{path}.comm_r_last_proof.root")
            root_c = field_element(vp.replica_column_proofs.c_x.inclusion_proof.data.proof.root,
                                   f"{path}.replica_column_proofs.c_x.inclusion_proof.root")
            if roots.comm_r_last is None:
                roots.comm_r_last, roots.comm_c = root_r, root_c
            elif root_r != roots.comm_r_last:
                raise C1Error(f"{path}.comm_r_last_proof", "inconsistent comm_r_last across challenges")
            elif root_c != roots.comm_c:
                raise C1Error(f"{path}.replica_column_proofs.c_x", "inconsistent comm_c across challenges")
            challenges.append(ch)
            drg = self.graph.drg_parents(challenge)
            exp = self.graph.exp_parents(challenge)
            inputs += [challenge, *drg, *exp, challenge, challenge, challenge]
        return PartitionCheck(challenges, inputs, roots)

    def _column(self, cp: ColumnProof, node: int, path: str, variant: str) -> ColumnOpening:
        p = self.params
        if cp.column.index != node:
            raise C1Error(f"{path}.column.index", f"is {cp.column.index}, the graph says {node}")
        if len(cp.column.rows) != p.layers:
            raise C1Error(f"{path}.column.rows", f"{len(cp.column.rows)} rows, the sector has {p.layers} layers")
        levels = _levels(cp.inclusion_proof, p.tree_arities, f"{path}.inclusion_proof", variant)
        if _path_index(levels) != node:
            raise C1Error(f"{path}.inclusion_proof", f"path indices address node {_path_index(levels)}, not {node}")
        rows: list[int | None] = [field_element(r, f"{path}.column.rows[{j}]") for j, r in enumerate(cp.column.rows)]
        return ColumnOpening(rows, levels)

    def _challenge(self, vp, challenge: int, path: str, variant: str, comm_d: int) -> ChallengeWitness:
        p = self.params
        if len(vp.labeling_proofs) != p.layers:
            raise C1Error(f"{path}.labeling_proofs", f"{len(vp.labeling_proofs)} proofs, expected {p.layers}")
        node = vp.labeling_proofs[0].node
        if node != challenge:
            raise C1Error(f"{path}.labeling_proofs[0].node",
                          f"challenge {node}, but the {self.seal_proof.challenge_kind} derivation gives {challenge}")
        d_levels = _levels(vp.comm_d_proofs, [2] * p.data_levels, f"{path}.comm_d_proofs", "Single")
        if _path_index(d_levels) != challenge:
            raise C1Error(f"{path}.comm_d_proofs", f"path addresses node {_path_index(d_levels)}, not {challenge}")
        if field_element(vp.comm_d_proofs.data.proof.root, f"{path}.comm_d_proofs.root") != comm_d:
            raise C1Error(f"{path}.comm_d_proofs.data.Single.root", "is not comm_d")
        r_levels = _levels(vp.comm_r_last_proof, p.tree_arities, f"{path}.comm_r_last_proof", variant)
        rcp = vp.replica_column_proofs
        c_levels = _levels(rcp.c_x.inclusion_proof, p.tree_arities, f"{path}.replica_column_proofs.c_x.inclusion_proof", variant)
        for what, levels in (("comm_r_last_proof", r_levels), ("replica_column_proofs.c_x.inclusion_proof", c_levels)):
            if _path_index(levels) != challenge:
                raise C1Error(f"{path}.{what}", f"path addresses node {_path_index(levels)}, not {challenge}")
        drg_nodes, exp_nodes = self.graph.drg_parents(challenge), self.graph.exp_parents(challenge)
        if len(rcp.drg_parents) != BASE_DEGREE:
            raise C1Error(f"{path}.replica_column_proofs.drg_parents", f"{len(rcp.drg_parents)} columns, expected {BASE_DEGREE}")
        if len(rcp.exp_parents) != EXP_DEGREE:
            raise C1Error(f"{path}.replica_column_proofs.exp_parents", f"{len(rcp.exp_parents)} columns, expected {EXP_DEGREE}")
        drg = [self._column(cp, n, f"{path}.replica_column_proofs.drg_parents[{j}]", variant)
               for j, (cp, n) in enumerate(zip(rcp.drg_parents, drg_nodes, strict=False))]
        exp = [self._column(cp, n, f"{path}.replica_column_proofs.exp_parents[{j}]", variant)
               for j, (cp, n) in enumerate(zip(rcp.exp_parents, exp_nodes, strict=False))]
        data_leaf = field_element(vp.comm_d_proofs.data.proof.leaf, f"{path}.comm_d_proofs.data.Single.leaf")
        return ChallengeWitness(challenge, data_leaf, d_levels, drg, exp, r_levels, c_levels)


_PROOFS = TypeAdapter(list[VanillaProof])


def check_partition_text(ctx: C1Context, k: int, text: bytes) -> PartitionCheck | None:
    """Partition k from its own JSON text (a list of vanilla proofs), in a planning process:
    decoded, validated and checked with roots of its own; None if anything is wrong with it
    (the planning thread then checks the whole C1 in order and names the first problem)."""
    with gc_paused():  # ~18 K small objects a challenge: no GC pass over them while they are made
        try:
            proofs = _PROOFS.validate_python(json_pieces.loads(text))
            return PartitionChecker(ctx).check(k, proofs, Roots())
        except (ValueError, TypeError):  # C1Error, pydantic's ValidationError, JSON and shape errors
            return None
