"""The EmptySectorUpdate (SnapDeals) circuit of one partition, laid out variable for variable
as storage-proofs-update ``circuit.rs`` (EmptySectorUpdateCircuit::synthesize) and
``gadgets.rs`` lay it out (/work/shared/specs/snap-facts.md section 5):

1. k_and_h_select (allocated, inputized); its partition_bit_len + 6 low bits allocated, with
   (sum 2^i b_i) * 1 = k_and_h_select; partition = pack_bits(k bits).
2. comm_r_old, comm_d_new, comm_r_new (allocated, inputized, in that order).
3. phi = PoseidonGR(comm_d_new, comm_r_old).
4. Private: comm_c, root_r_old, root_r_new, the apex leaves, the partition path siblings.
5. Poseidon2(comm_c, root_r_old) * 1 = comm_r_old; the same for comm_r_new.
6. apex_por: SHA-256 pairwise up the apex leaves, then the apex root's path (the k bits) to
   comm_d_new.
7. gen_challenge_bits: per digest, digest_index (one constraint), PoseidonGR(comm_r_new,
   digest_index), its 255 bits with (sum 2^i b_i) * 1 = digest.
8. Per challenge: c_bits = random bits then k bits; c_high (pack the top h bits for each
   allowed h, times its h_select bit, summed); rho = PoseidonGR(phi, c_high); leaf_r_old,
   leaf_d_new; leaf_r_new = leaf_r_old + leaf_d_new * rho; TreeR old and new inclusion (their
   siblings allocated before each), indexed by c_bits; apex leaf = select(apex leaves, the
   c_bits above the apex height); TreeD inclusion of leaf_d_new up to that apex leaf.

No index bits are allocated by the inclusions and no path index becomes an input: the public
inputs are ONE, k_and_h_select, comm_r_old, comm_d_new, comm_r_new (section 6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.constraint_system import ONE, LinearCombination
from cuzk_plugin.filecoin.gadgets.boolean import Boolean, alloc_bit
from cuzk_plugin.filecoin.gadgets.merkle import (
    insert,
    poseidon_node_hash,
    sha256_node_hash,
)
from cuzk_plugin.filecoin.gadgets.num import (
    AllocatedNum,
    alloc_num,
    equal,
    inputize,
    pack_bits,
    pick,
)
from cuzk_plugin.filecoin.gadgets.poseidon import poseidon_hash
from cuzk_plugin.filecoin.snap.params import UpdateParams
from cuzk_plugin.filecoin.snap.vanilla import GEN_RANDOMNESS, PartitionProof

__all__ = [
    "UpdateChallengeWitness",
    "UpdatePartitionWitness",
    "blank_update_partition",
    "synthesize_update_partition",
    "witness_from_proof",
]

_FR_NUM_BITS = 255


@dataclass
class UpdateChallengeWitness:
    """One challenge's leaves and sibling values, leaf to root (None for a blank circuit).
    ``path_d_new`` holds one sibling per TreeD level (all of them; the circuit takes those
    below the apex leaves)."""

    leaf_r_old: int | None
    path_r_old: list[tuple[int | None, ...]]
    leaf_d_new: int | None
    path_d_new: list[int | None]
    path_r_new: list[tuple[int | None, ...]]


@dataclass
class UpdatePartitionWitness:
    k_and_h_select: int | None
    comm_r_old: int | None
    comm_d_new: int | None
    comm_r_new: int | None
    comm_c: int | None
    root_r_old: int | None
    root_r_new: int | None
    apex_leafs: list[int | None]
    challenges: list[UpdateChallengeWitness] = field(default_factory=list)

    def public_inputs(self) -> list[int]:
        """In rust-fil-proofs' order (PublicInputs::to_vec), ONE excluded."""
        values = [self.k_and_h_select, self.comm_r_old, self.comm_d_new, self.comm_r_new]
        if any(v is None for v in values):
            raise ValueError("a blank update partition has no public inputs")
        return [int(v) for v in values if v is not None]


def blank_update_partition(p: UpdateParams) -> UpdatePartitionWitness:
    """A partition with the right shape and no values (setup, constraint counts)."""
    r_path = [(None,) * (a - 1) for a in p.tree_r_arities]
    ch = [UpdateChallengeWitness(None, list(r_path), None, [None] * p.challenge_bit_len, list(r_path))
          for _ in range(p.challenges)]
    return UpdatePartitionWitness(None, None, None, None, None, None, None, [None] * p.apex_leaves, ch)


def _bits_of(value: int | None, n: int) -> list[bool | None]:
    return [None if value is None else bool((value >> i) & 1) for i in range(n)]


def _alloc_bits_packed(cs, num: AllocatedNum, n: int) -> list[Boolean]:
    """n AllocatedBits of num's LE bits, then (sum 2^i b_i) * 1 = num (circuit.rs k_and_h_select
    decomposition; gadgets.rs allocated_num_to_allocated_bits with n = 255)."""
    bits = [alloc_bit(cs, b) for b in _bits_of(num.value, n)]
    terms: dict = {}
    for i, b in enumerate(bits):
        b.add_to(terms, 1 << i)
    cs.enforce(LinearCombination(terms), LinearCombination({ONE: 1}), LinearCombination({num.var: 1}))
    return bits


def _mul(cs, a: AllocatedNum, b: AllocatedNum) -> AllocatedNum:
    """AllocatedNum::mul: product allocated, a * b = product."""
    v = None if a.value is None or b.value is None else a.value * b.value % R
    out = alloc_num(cs, v)
    cs.enforce(LinearCombination({a.var: 1}), LinearCombination({b.var: 1}), LinearCombination({out.var: 1}))
    return out


def _select(cs, values: list[AllocatedNum], bits: list[Boolean]) -> AllocatedNum:
    """insertion::select: the element the LE bits index, by halving (most significant bit
    first): pick(bit, upper half[j], lower half[j]) for each j."""
    state = list(values)
    for bit in reversed(bits):
        half = len(state) // 2
        state = [pick(cs, bit, state[half + j], state[j]) for j in range(half)]
    return state[0]


def _por(cs, bits: list[Boolean], leaf: AllocatedNum, path: list[list[AllocatedNum]], root: AllocatedNum,
         node_hash) -> None:
    """gadgets.rs por_no_challenge_input: per level, insert at the next log2(arity) bits and
    hash; then computed root * 1 = root. Every bit must be consumed."""
    cur, used = leaf, 0
    for siblings in path:
        n = (len(siblings) + 1).bit_length() - 1
        cur = node_hash(cs, insert(cs, cur, bits[used:used + n], siblings))
        used += n
    if used != len(bits):
        raise ValueError(f"{len(bits)} challenge bits for a path that takes {used}")
    equal(cs, cur, root)


def _challenge_high(cs, c_bits: list[Boolean], h_select_bits: list[Boolean], hs: tuple[int, ...]) -> AllocatedNum:
    """gadgets.rs get_challenge_high_bits."""
    picked = []
    for h, sel in zip(hs, h_select_bits, strict=False):
        c_high = pack_bits(cs, c_bits[len(c_bits) - h:])
        v = None if sel.value is None or c_high.value is None else (c_high.value if sel.value else 0)
        out = alloc_num(cs, v)
        cs.enforce(LinearCombination({c_high.var: 1}), LinearCombination(sel.lc_dict()),
                   LinearCombination({out.var: 1}))
        picked.append(out)
    total = None if any(x.value is None for x in picked) else sum(x.value or 0 for x in picked) % R
    selected = alloc_num(cs, total)
    terms: dict = {}
    for x in picked:
        terms[x.var] = terms.get(x.var, 0) + 1
    cs.enforce(LinearCombination(terms), LinearCombination({ONE: 1}), LinearCombination({selected.var: 1}))
    return selected


def _gen_challenge_bits(cs, p: UpdateParams, comm_r_new: AllocatedNum, partition: AllocatedNum) -> list[list[Boolean]]:
    """gadgets.rs gen_challenge_bits."""
    out: list[list[Boolean]] = []
    dpp = p.digests_per_partition
    for j in range(dpp):
        v = None if partition.value is None else (partition.value * dpp + j) % R
        digest_index = alloc_num(cs, v)
        cs.enforce(LinearCombination({partition.var: dpp, ONE: j}), LinearCombination({ONE: 1}),
                   LinearCombination({digest_index.var: 1}))
        digest = poseidon_hash(cs, [comm_r_new, digest_index], GEN_RANDOMNESS)
        bits = _alloc_bits_packed(cs, digest, _FR_NUM_BITS)
        take = p.challenges - len(out) if j == dpp - 1 else p.challenges_per_digest
        rb = p.random_bits
        out.extend(bits[i * rb:(i + 1) * rb] for i in range(take))
    return out


def synthesize_update_partition(cs, p: UpdateParams, w: UpdatePartitionWitness, *,
                                regions: list | None = None) -> None:
    """Synthesize one update partition into ``cs`` (a ConstraintSystem or ShapeConstraintSystem).
    ``regions``, if given, receives (first constraint index, description) per part."""
    if len(w.challenges) != p.challenges:
        raise ValueError(f"{len(w.challenges)} challenges, a partition of this sector size has {p.challenges}")
    if len(w.apex_leafs) != p.apex_leaves:
        raise ValueError(f"{len(w.apex_leafs)} apex leaves, this sector size has {p.apex_leaves}")

    def mark(what: str) -> None:
        if regions is not None:
            regions.append((cs.num_constraints, what))

    pbl = p.partition_bit_len
    first_d = w.challenges[0].path_d_new
    partition_path = first_d[p.challenge_bit_len - pbl:]

    mark("public inputs and k_and_h_select bits")
    k_and_h_select = alloc_num(cs, w.k_and_h_select)
    inputize(cs, k_and_h_select)
    kh_bits = _alloc_bits_packed(cs, k_and_h_select, pbl + len(p.hs))
    partition_bits, h_select_bits = kh_bits[:pbl], kh_bits[pbl:]
    partition = pack_bits(cs, partition_bits)
    comm_r_old = alloc_num(cs, w.comm_r_old)
    inputize(cs, comm_r_old)
    comm_d_new = alloc_num(cs, w.comm_d_new)
    inputize(cs, comm_d_new)
    comm_r_new = alloc_num(cs, w.comm_r_new)
    inputize(cs, comm_r_new)
    mark("phi = PoseidonGR(comm_d_new, comm_r_old)")
    phi = poseidon_hash(cs, [comm_d_new, comm_r_old], GEN_RANDOMNESS)

    comm_c = alloc_num(cs, w.comm_c)
    root_r_old = alloc_num(cs, w.root_r_old)
    root_r_new = alloc_num(cs, w.root_r_new)
    apex_leafs = [alloc_num(cs, v) for v in w.apex_leafs]
    partition_siblings = [[alloc_num(cs, v)] for v in partition_path]

    mark("comm_r_old = Poseidon(comm_c, root_r_old)")
    equal(cs, poseidon_node_hash(cs, [comm_c, root_r_old]), comm_r_old)
    mark("comm_r_new = Poseidon(comm_c, root_r_new)")
    equal(cs, poseidon_node_hash(cs, [comm_c, root_r_new]), comm_r_new)

    mark("apex tree of the apex leaves and its path to comm_d_new")
    row = apex_leafs
    for _ in range(p.apex_leaf_bit_len):
        row = [sha256_node_hash(cs, [row[i], row[i + 1]]) for i in range(0, len(row), 2)]
    _por(cs, partition_bits, row[0], partition_siblings, comm_d_new, sha256_node_hash)

    mark("challenge generation from comm_r_new")
    generated = _gen_challenge_bits(cs, p, comm_r_new, partition)

    start = p.apex_start
    for i, (c_random, cw) in enumerate(zip(generated, w.challenges, strict=False)):
        c_bits = list(c_random) + list(partition_bits)
        mark(f"challenge {i}: rho and the encoding")
        c_high = _challenge_high(cs, c_bits, h_select_bits, p.hs)
        rho = poseidon_hash(cs, [phi, c_high], GEN_RANDOMNESS)
        leaf_r_old = alloc_num(cs, cw.leaf_r_old)
        leaf_d_new = alloc_num(cs, cw.leaf_d_new)
        product = _mul(cs, leaf_d_new, rho)
        v = None if leaf_r_old.value is None or product.value is None else (leaf_r_old.value + product.value) % R
        leaf_r_new = alloc_num(cs, v)
        cs.enforce(LinearCombination({leaf_r_old.var: 1, product.var: 1}), LinearCombination({ONE: 1}),
                   LinearCombination({leaf_r_new.var: 1}))

        mark(f"challenge {i}: TreeR old inclusion")
        path_old = [[alloc_num(cs, s) for s in level] for level in cw.path_r_old]
        _por(cs, c_bits, leaf_r_old, path_old, root_r_old, poseidon_node_hash)
        mark(f"challenge {i}: TreeR new inclusion")
        path_new = [[alloc_num(cs, s) for s in level] for level in cw.path_r_new]
        _por(cs, c_bits, leaf_r_new, path_new, root_r_new, poseidon_node_hash)

        mark(f"challenge {i}: TreeD inclusion up to its apex leaf")
        apex_leaf = _select(cs, apex_leafs, c_bits[start:start + p.apex_leaf_bit_len])
        path_d = [[alloc_num(cs, s)] for s in cw.path_d_new[:start]]
        _por(cs, c_bits[:start], leaf_d_new, path_d, apex_leaf, sha256_node_hash)


def witness_from_proof(p: UpdateParams, proof: PartitionProof, k: int, comm_r_old: int, comm_d_new: int,
                       comm_r_new: int, h: int | None = None) -> UpdatePartitionWitness:
    """Partition k's witness from its vanilla PartitionProof (PrivateInputs::new: the roots come
    from challenge 0's TreeR proofs; the path index bits are not taken: the circuit derives them)."""
    first = proof.challenge_proofs[0]
    chs = [
        UpdateChallengeWitness(
            cp.proof_r_old.leaf, [tuple(sib) for sib, _ in cp.proof_r_old.levels],
            cp.proof_d_new.leaf, [sib[0] for sib, _ in cp.proof_d_new.levels],
            [tuple(sib) for sib, _ in cp.proof_r_new.levels],
        )
        for cp in proof.challenge_proofs
    ]
    return UpdatePartitionWitness(p.k_and_h_select(k, h), comm_r_old, comm_d_new, comm_r_new, proof.comm_c,
                                  first.proof_r_old.root, first.proof_r_new.root, list(proof.apex_leafs), chs)
