"""Poseidon hashes in the circuit's layout (neptune's optimized schedule, as
:mod:`cuzk_plugin.filecoin.gadgets.poseidon` allocates it), for many preimages at once.

Aux order per hash: first full round, for each preimage element: (x + pre)^2, its square,
(x + pre) * x^4 + post; every later full round, for each element: the element, x^2, x^4,
x^5 (+ post, none in the last round); each partial round the same four for element 0; then the
digest (element 1). Between rounds the state is multiplied by the MDS matrix, the pre-sparse
matrix (after the fourth full round's S-boxes) or one sparse matrix per partial round. Values
are Python ints in object arrays (one numpy call per round operation, not per hash).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.filecoin.poseidon import constants

__all__ = ["poseidon_many", "poseidon_num_aux", "poseidon_num_constraints"]


def poseidon_num_aux(arity: int) -> int:
    c = constants(arity)
    t = c.width
    return 3 * (t - 1) + 4 * t * (c.full_rounds - 1) + 4 * c.partial_rounds + 1


def poseidon_num_constraints(arity: int) -> int:
    return poseidon_num_aux(arity)  # one constraint per allocated variable


@cache
def _matrices(arity: int):
    c = constants(arity)

    def as_obj(m) -> np.ndarray:
        return np.array([[int(x) for x in row] for row in m], dtype=object)

    mds_t = as_obj(c.mds).T  # new[j] = sum_i m[i][j] s[i]
    pre_t = as_obj(c.pre_sparse_matrix).T
    sparse = [(np.array(sm.w_hat, dtype=object), np.array(sm.v_rest, dtype=object)[:, None])
              for sm in c.sparse_matrices]
    return c, mds_t, pre_t, sparse


def poseidon_many(preimage: np.ndarray, domain_tag: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``preimage`` (arity, N) object ints in [0, r) -> (aux (num_aux, N) object, digest (N,)).
    ``domain_tag`` replaces the MerkleTree tag (a custom hash type, e.g. SnapDeals' 2^40); the
    tag only enters the first round's constant S-box."""
    arity, n = preimage.shape
    c, mds_t, pre_t, sparse = _matrices(arity)
    tag = c.domain_tag if domain_tag is None else domain_tag
    t, half = c.width, c.full_rounds // 2
    keys = c.compressed_round_constants
    aux: list[np.ndarray] = []
    s = np.empty((t, n), dtype=object)
    s[1:] = preimage

    # first full round: the tag is a constant; preimage elements are already allocated
    pre, post = keys[:t], keys[t:2 * t]
    offset = 2 * t
    s[0] = (pow((tag + pre[0]) % R, 5, R) + post[0]) % R
    for i in range(1, t):
        xp = (s[i] + pre[i]) % R
        l2 = xp * xp % R
        l4 = l2 * l2 % R
        s[i] = (l4 * xp + post[i]) % R
        aux += [l2, l4, s[i].copy()]
    rnd = 0

    def mix(state: np.ndarray) -> np.ndarray:
        nonlocal rnd
        sparse_offset = half - 1
        if rnd == sparse_offset:
            out = pre_t.dot(state) % R
        elif sparse_offset < rnd < half + c.partial_rounds:
            w_hat, v_rest = sparse[rnd - sparse_offset - 1]
            out = np.empty_like(state)
            out[0] = w_hat.dot(state) % R
            out[1:] = state[1:] + v_rest * state[0]  # reduced after the partial rounds
        else:
            out = mds_t.dot(state) % R
        rnd += 1
        return out

    def sbox(x: np.ndarray, key: int | None) -> np.ndarray:
        l2 = x * x % R
        l4 = l2 * l2 % R
        l5 = l4 * x % R if key is None else (l4 * x + key) % R
        aux.extend([x.copy(), l2, l4, l5])
        return l5

    s = mix(s)
    for _ in range(1, half):
        post, offset = keys[offset:offset + t], offset + t
        s = mix(np.array([sbox(s[i], post[i]) for i in range(t)]))
    for _ in range(c.partial_rounds):
        key, offset = keys[offset], offset + 1
        s[0] = sbox(s[0], key)
        s = mix(s)
    s[1:] %= R
    for _ in range(half - 1):
        post, offset = keys[offset:offset + t], offset + t
        s = mix(np.array([sbox(s[i], post[i]) for i in range(t)]))
    s = mix(np.array([sbox(s[i], None) for i in range(t)]))  # the last round adds no key
    aux.append(s[1])
    return np.array(aux), s[1]
