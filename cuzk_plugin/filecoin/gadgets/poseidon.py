"""Poseidon in a circuit, laid out as neptune's legacy ``circuit.rs`` (``poseidon_hash``), the
circuit Filecoin's parameters were generated with.

Elements are either allocated numbers or linear combinations (``Num``). First full round: the
tag's S-box is a constant; each preimage element costs (x + pre)^2, ^4, (x + pre) * x^4 + post.
Other rounds allocate their S-box input first (lc * 1 = v) then l^2, l^4, l^5 + post. MDS
products only build linear combinations: the full matrix, then at the last initial full round
the pre-sparse matrix, then one sparse matrix per partial round. The digest is element 1,
allocated. Cost: 3(t - 1) + 28t + 4 R_P + 1 constraints (311 / 505 / 598 for arity 2 / 8 / 11).
"""

from __future__ import annotations

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.constraint_system import ONE, LinearCombination
from cuzk_plugin.filecoin.gadgets.num import AllocatedNum, alloc_num
from cuzk_plugin.filecoin.poseidon import PoseidonConstants, constants

__all__ = ["poseidon_hash"]


class _Num:
    """An unallocated element: a linear combination and its value."""

    __slots__ = ("terms", "value")

    def __init__(self, terms: dict, value: int | None):
        self.terms = terms
        self.value = value


def _as_terms(e) -> dict:
    return {e.var: 1} if isinstance(e, AllocatedNum) else e.terms


def _ensure_allocated(cs, e) -> AllocatedNum:
    if isinstance(e, AllocatedNum):
        return e
    v = alloc_num(cs, e.value)
    cs.enforce(LinearCombination(e.terms), LinearCombination({ONE: 1}), LinearCombination({v.var: 1}))
    return v


def _square_sum(cs, to_add: int, x: AllocatedNum) -> AllocatedNum:
    """(x + to_add)^2 = res."""
    res = alloc_num(cs, None if x.value is None else pow(x.value + to_add, 2, R))
    a = LinearCombination({x.var: 1, ONE: to_add})
    cs.enforce(a, LinearCombination({x.var: 1, ONE: to_add}), LinearCombination({res.var: 1}))
    return res


def _square(cs, x: AllocatedNum) -> AllocatedNum:
    """AllocatedNum::square: x * x = res."""
    res = alloc_num(cs, None if x.value is None else x.value * x.value % R)
    cs.enforce(LinearCombination({x.var: 1}), LinearCombination({x.var: 1}), LinearCombination({res.var: 1}))
    return res


def _mul_sum(cs, a: AllocatedNum, b: AllocatedNum, pre: int | None, post: int | None) -> AllocatedNum:
    """res = a * (b + pre) + post, enforced as (b + pre) * a = res - post."""
    value = None if a.value is None or b.value is None else (a.value * (b.value + (pre or 0)) + (post or 0)) % R
    res = alloc_num(cs, value)
    A = {b.var: 1}
    if pre is not None:
        A[ONE] = pre
    C = {res.var: 1}
    if post is not None:
        C[ONE] = (-post) % R
    cs.enforce(LinearCombination(A), LinearCombination({a.var: 1}), LinearCombination(C))
    return res


def _scaled_sum(elements, scalars) -> _Num:
    """scalar_product: sum_i scalars[i] * elements[i] as an unallocated element."""
    terms: dict = {}
    value: int | None = 0
    for e, s in zip(elements, scalars, strict=True):
        for var, k in _as_terms(e).items():
            terms[var] = (terms.get(var, 0) + k * s) % R
        value = None if value is None or e.value is None else value + e.value * s
    return _Num(terms, None if value is None else value % R)


class _Hasher:
    def __init__(self, cs, c: PoseidonConstants, preimage: list[AllocatedNum]):
        self.cs, self.c = cs, c
        self.elements: list[_Num | AllocatedNum] = [_Num({ONE: c.domain_tag}, c.domain_tag), *preimage]
        self.offset = 0
        self.round = 0

    def _keys(self, n: int) -> list[int]:
        keys = self.c.compressed_round_constants[self.offset:self.offset + n]
        self.offset += n
        return keys

    def first_full_round(self) -> None:
        """The tag (element 0, still the constant domain tag) goes through its S-box as a
        constant; each preimage element costs (x + pre)^2, ^4, (x + pre) * x^4 + post."""
        t, cs = self.c.width, self.cs
        pre, post = self._keys(t), self._keys(t)
        tag = (pow((self.c.domain_tag + pre[0]) % R, 5, R) + post[0]) % R
        self.elements[0] = _Num({ONE: tag}, tag)
        for i in range(1, t):
            x = _ensure_allocated(cs, self.elements[i])
            l2 = _square_sum(cs, pre[i], x)
            l4 = _square(cs, l2)
            self.elements[i] = _mul_sum(cs, l4, x, pre[i], post[i])
        self.product_mds()

    def full_round(self, last: bool) -> None:
        """A full round after the first: the last one adds no round key after its S-boxes."""
        post = None if last else self._keys(self.c.width)
        for i, e in enumerate(self.elements):
            self.elements[i] = self._sbox(e, None if post is None else post[i])
        self.product_mds()

    def _sbox(self, e, post: int | None) -> AllocatedNum:
        x = _ensure_allocated(self.cs, e)
        l2 = _square(self.cs, x)
        l4 = _square(self.cs, l2)
        return _mul_sum(self.cs, l4, x, None, post)

    def partial_round(self) -> None:
        (key,) = self._keys(1)
        self.elements[0] = self._sbox(self.elements[0], key)
        self.product_mds()

    def product_mds(self) -> None:
        c, t = self.c, self.c.width
        sparse_offset = c.full_rounds // 2 - 1
        if self.round == sparse_offset:
            m = c.pre_sparse_matrix
            self.elements = [_scaled_sum(self.elements, [m[i][j] for i in range(t)]) for j in range(t)]
        elif sparse_offset < self.round < c.full_rounds // 2 + c.partial_rounds:
            sm = c.sparse_matrices[self.round - sparse_offset - 1]
            e0 = self.elements[0]
            new: list[_Num | AllocatedNum] = [_scaled_sum(self.elements, sm.w_hat)]
            for j in range(1, t):
                new.append(_scaled_sum([self.elements[j], e0], [1, sm.v_rest[j - 1]]))
            self.elements = new
        else:
            m = c.mds
            self.elements = [_scaled_sum(self.elements, [m[i][j] for i in range(t)]) for j in range(t)]
        self.round += 1

    def hash(self) -> AllocatedNum:
        half = self.c.full_rounds // 2
        self.first_full_round()
        for _ in range(1, half):
            self.full_round(last=False)
        for _ in range(self.c.partial_rounds):
            self.partial_round()
        for _ in range(half - 1):
            self.full_round(last=False)
        self.full_round(last=True)
        return _ensure_allocated(self.cs, self.elements[1])


def poseidon_hash(cs, preimage: list[AllocatedNum], c: PoseidonConstants | None = None) -> AllocatedNum:
    """Poseidon (MerkleTree hash type unless ``c`` is given, arity = len(preimage)) of allocated numbers."""
    c = c or constants(len(preimage))
    memoized = getattr(cs, "memoized", None)
    if memoized is None:
        return _Hasher(cs, c, preimage).hash()
    (out,) = memoized(f"poseidon{len(preimage)}-{c.domain_tag}", lambda inner, ins: [_Hasher(inner, c, ins).hash()],
                      list(preimage))
    return out
