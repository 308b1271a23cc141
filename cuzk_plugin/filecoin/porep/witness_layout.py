"""Where each part of a PoRep partition lies in its assignment: :func:`porep_layout` follows
:func:`~cuzk_plugin.filecoin.porep.circuit.synthesize_partition`'s allocation order once per
sector shape (aux offsets and constraint indices of the header and of one challenge; the
SHA-256 programs traced from the circuit's gadget), so the vectorized witness
(:mod:`.witness_parts`) writes each gadget's values where the reference synthesis puts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from cuzk_plugin.bls12_381.fields import FR_LIMBS
from cuzk_plugin.filecoin.params import BASE_DEGREE, EXP_DEGREE, PorepParams
from cuzk_plugin.filecoin.porep.circuit import TOTAL_PARENTS
from cuzk_plugin.filecoin.witness.poseidon import poseidon_num_aux
from cuzk_plugin.filecoin.witness.sha256 import CompressionTemplate, node_hash_signature, rbn_signature, sha256_templates

__all__ = ["PorepLayout", "porep_layout"]

_FR_BITS = 255
_PARENTS = BASE_DEGREE + EXP_DEGREE


class _Counter:
    def __init__(self) -> None:
        self.aux = 0
        self.cons = 0

    def take(self, aux: int, cons: int = 0) -> int:
        at = self.aux
        self.aux += aux
        self.cons += cons
        return at


@dataclass
class LevelLayout:
    """One Merkle level: aux offsets of its index bits, siblings, insertion and hash."""

    arity: int
    bits: int
    siblings: int
    insert: int
    hash: int  # Poseidon levels: the hash's aux; SHA-256 levels: see ``sha``
    sha: list[tuple[int, int]] = field(default_factory=list)  # (bits of leaf 0, of leaf 1)
    blocks: list[int] = field(default_factory=list)  # SHA-256 compressions' aux offsets
    pack: int = -1


@dataclass
class PathLayout:
    levels: list[LevelLayout]
    equal_constraint: int  #: the root equality, relative to the challenge's first constraint
    region: str


@dataclass
class LabelLayout:
    parent_bits: list[int]  #: aux offset of each distinct parent's 255 bits (DRG, then expander)
    blocks: list[int]  #: aux offset of each compression
    pack: int


@dataclass
class PorepLayout:
    """Aux offsets of every part of one partition (challenge parts relative to the challenge's
    first aux variable / constraint), fixed by the sector shape."""

    params: PorepParams
    header_aux: int
    header_constraints: int
    comm_r_poseidon: int
    challenge_aux: int
    challenge_constraints: int
    data_leaf: int
    comm_d: PathLayout
    columns: list[int]  #: each parent's rows (then its hash at +layers)
    parent_paths: list[PathLayout]
    challenge_bits: int
    labels: list[LabelLayout]
    encoded: int
    comm_r_last: PathLayout
    own_column_hash: int
    comm_c: PathLayout
    node_hash_templates: list[CompressionTemplate]
    label_templates: list[list[CompressionTemplate]]  #: per layer
    header_region: tuple[int, str]  #: (first constraint, name) of comm_r's check
    challenge_regions: list[tuple[int, str]]  #: (first constraint relative to the challenge, name)

    @property
    def num_aux(self) -> int:
        return self.header_aux + self.params.challenges_per_partition * self.challenge_aux

    @property
    def aux_nbytes(self) -> int:
        """Bytes of the (num_aux, 4) uint64 aux array."""
        return self.num_aux * FR_LIMBS * 8

    @property
    def num_inputs(self) -> int:
        return self.params.num_public_inputs

    @property
    def num_constraints(self) -> int:
        return self.header_constraints + self.params.challenges_per_partition * self.challenge_constraints

    def regions(self, nodes: list | None = None) -> list[tuple[int, str]]:
        """``synthesize_partition``'s regions list (first constraint, name); ``nodes`` are the
        challenges' node indices (None: as for a blank partition)."""
        cpp = self.params.challenges_per_partition
        nodes = [None] * cpp if nodes is None else nodes
        out = [self.header_region]
        for i in range(cpp):
            base = self.header_constraints + i * self.challenge_constraints
            out += [(base + start, f"challenge {i} (node {nodes[i]}): {what}") for start, what in self.challenge_regions]
        return out

    def locate(self, constraint: int) -> tuple[int | None, str]:
        """(challenge, region name) of a constraint index of the partition (challenge None in
        the header; the region "partition header" before comm_r's check)."""
        if not 0 <= constraint < self.num_constraints:
            raise ValueError(f"constraint {constraint} is outside the partition's {self.num_constraints}")
        if constraint < self.header_constraints:
            return None, self.header_region[1] if constraint >= self.header_region[0] else "partition header"
        c, rel = divmod(constraint - self.header_constraints, self.challenge_constraints)
        return c, next(what for start, what in reversed(self.challenge_regions) if start <= rel)


def label_signature(layer: int) -> str:
    layer_bits = "".join("T" if (layer >> i) & 1 else "F" for i in range(31, -1, -1))
    head = rbn_signature(_FR_BITS) + layer_bits + "I" * 64
    head += "F" * (512 - len(head))
    return head + rbn_signature(_FR_BITS) * TOTAL_PARENTS


def label_parents(layer: int) -> list[int]:
    """Which of the layer's distinct parents (DRG 0-5, expander 6-13) fill the 37 slots."""
    if layer == 1:
        return list(range(BASE_DEGREE)) * 6 + [0]
    ps = list(range(_PARENTS))
    return ps + ps + ps[:9]


def _poseidon_path(cnt: _Counter, arities: list[int], region: str) -> PathLayout:
    levels = []
    for a in arities:
        nb = a.bit_length() - 1
        bits = cnt.take(nb, nb)
        sibs = cnt.take(a - 1)
        if a == 8:
            ins = cnt.take(22, 22)
        elif a == 2:
            ins = cnt.take(2, 2)
        else:
            raise ValueError(f"no insertion layout for arity {a}")
        h = cnt.take(poseidon_num_aux(a), poseidon_num_aux(a))
        levels.append(LevelLayout(a, bits, sibs, ins, h))
    cnt.take(0, 1)  # pack_into_inputs
    cnt.take(0, 1)  # equal
    return PathLayout(levels, cnt.cons - 1, region)


@lru_cache(maxsize=16)
def porep_layout(params: PorepParams) -> PorepLayout:
    """The layout of ``params``' partition, in ``synthesize_partition``'s allocation order."""
    h = _Counter()
    h.take(1)  # replica_id
    h.take(0, 1)  # inputize
    h.take(_FR_BITS, _FR_BITS + 1)  # its bits
    h.take(1, 0)  # comm_d
    h.take(0, 1)
    h.take(1, 0)  # comm_r
    h.take(0, 1)
    h.take(2)  # comm_r_last, comm_c
    header_region = (h.cons, "comm_r = Poseidon(comm_c, comm_r_last)")
    comm_r_poseidon = h.take(poseidon_num_aux(2), poseidon_num_aux(2))
    h.take(0, 1)  # equal

    node_tpls = sha256_templates(node_hash_signature())
    label_tpls = [sha256_templates(label_signature(layer)) for layer in range(1, params.layers + 1)]
    c = _Counter()
    data_leaf = c.take(1)
    regions = [(c.cons, "comm_d inclusion of the data leaf")]
    levels = []
    for _ in range(params.data_levels):
        bits = c.take(1, 1)
        sib = c.take(1)
        ins = c.take(2, 2)
        leaves = (c.take(_FR_BITS, _FR_BITS + 1), c.take(_FR_BITS, _FR_BITS + 1))
        blocks = [c.take(t.program.num_aux, t.program.num_constraints) for t in node_tpls]
        pack = c.take(1, 1)
        levels.append(LevelLayout(2, bits, sib, ins, -1, [leaves], blocks, pack))
    c.take(0, 2)  # pack_into_inputs, equal
    comm_d = PathLayout(levels, c.cons - 1, "comm_d inclusion of the data leaf")

    tree = params.tree_arities
    columns, parent_paths = [], []
    for j in range(_PARENTS):
        kind = f"DRG parent {j}" if j < BASE_DEGREE else f"expander parent {j - BASE_DEGREE}"
        regions.append((c.cons, f"{kind}: column hash and comm_c inclusion"))
        columns.append(c.take(params.layers))
        c.take(poseidon_num_aux(params.layers), poseidon_num_aux(params.layers))
        parent_paths.append(_poseidon_path(c, tree, f"{kind}: column hash and comm_c inclusion"))
    challenge_bits = c.take(64, 64)
    c.take(0, 1)  # pack_into_inputs
    labels = []
    for layer in range(1, params.layers + 1):
        regions.append((c.cons, f"labeling of layer {layer}"))
        n_par = BASE_DEGREE if layer == 1 else _PARENTS
        pbits = [c.take(_FR_BITS, _FR_BITS + 1) for _ in range(n_par)]
        blocks = [c.take(t.program.num_aux, t.program.num_constraints) for t in label_tpls[layer - 1]]
        labels.append(LabelLayout(pbits, blocks, c.take(1, 1)))
    regions.append((c.cons, "encoding and comm_r_last inclusion"))
    encoded = c.take(1, 1)
    comm_r_last = _poseidon_path(c, tree, "encoding and comm_r_last inclusion")
    regions.append((c.cons, "challenged column hash and comm_c inclusion"))
    own = c.take(poseidon_num_aux(params.layers), poseidon_num_aux(params.layers))
    comm_c = _poseidon_path(c, tree, "challenged column hash and comm_c inclusion")
    return PorepLayout(
        params=params, header_aux=h.aux, header_constraints=h.cons, comm_r_poseidon=comm_r_poseidon,
        challenge_aux=c.aux, challenge_constraints=c.cons, data_leaf=data_leaf, comm_d=comm_d,
        columns=columns, parent_paths=parent_paths, challenge_bits=challenge_bits, labels=labels,
        encoded=encoded, comm_r_last=comm_r_last, own_column_hash=own, comm_c=comm_c,
        node_hash_templates=node_tpls, label_templates=label_tpls,
        header_region=header_region, challenge_regions=regions,
    )
