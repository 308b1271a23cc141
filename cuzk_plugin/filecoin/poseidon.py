"""Poseidon over BLS12-381 Fr with Filecoin's parameters, as neptune generates them.

x^5 S-box, R_F = 8 full rounds, R_P partial rounds by arity (Standard strength, neptune
``round_numbers.rs``); round constants from the Grain LFSR (``round_constants.rs``); Cauchy MDS
matrix 1 / (x_i + y_j), x_i = i, y_j = t + j (``mds.rs``). The state is [domain tag, preimage],
the digest is state[1]. Filecoin hashes with the MerkleTree hash type: tag 2^arity - 1.

:func:`poseidon_hash` is the textbook permutation (neptune's ``hash_correct``). The circuit
(:mod:`cuzk_plugin.filecoin.gadgets.poseidon`) follows neptune's optimized schedule, whose
constants :class:`PoseidonConstants` also derives: compressed round constants
(``preprocessing.rs``), a pre-sparse matrix and one sparse matrix per partial round
(``mds.rs``, factor_to_sparse_matrixes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from cuzk_plugin.bls12_381.fields import R

__all__ = ["PoseidonConstants", "constants", "custom_constants", "poseidon_hash", "FULL_ROUNDS", "PARTIAL_ROUNDS"]

FULL_ROUNDS = 8
#: Partial rounds by arity, Standard strength (neptune test_round_numbers_against_known_values).
PARTIAL_ROUNDS = {2: 55, 4: 56, 8: 57, 11: 57, 16: 59, 24: 59, 36: 60}

Matrix = list[list[int]]


def _grain_constants(width: int, r_f: int, r_p: int, field_bits: int = 255) -> list[int]:
    """(r_f + r_p) * width round constants from the Grain LFSR in self-shrinking mode."""
    state: list[int] = []
    for nbits, v in ((2, 1), (4, 1), (12, field_bits), (12, width), (10, r_f), (10, r_p), (30, (1 << 30) - 1)):
        state.extend((v >> i) & 1 for i in range(nbits - 1, -1, -1))
    assert len(state) == 80
    pos = 0
    # a ring buffer of 80 bits; bit i of the current window is state[(pos + i) % 80]
    def step() -> int:
        nonlocal pos
        s = state
        new = s[(pos + 62) % 80] ^ s[(pos + 51) % 80] ^ s[(pos + 38) % 80] ^ s[(pos + 23) % 80] ^ s[(pos + 13) % 80] ^ s[pos]
        s[pos] = new
        pos = (pos + 1) % 80
        return new
    for _ in range(160):
        step()

    def shrunk_bit() -> int:
        while True:
            first, second = step(), step()
            if first:
                return second

    out: list[int] = []
    while len(out) < (r_f + r_p) * width:
        v = 0
        for _ in range(field_bits):
            v = (v << 1) | shrunk_bit()
        if v < R:
            out.append(v)
    return out


def _cauchy_mds(t: int) -> Matrix:
    return [[pow(i + t + j, R - 2, R) for j in range(t)] for i in range(t)]


def _mat_mul(a: Matrix, b: Matrix) -> Matrix:
    n, m, p = len(a), len(b), len(b[0])
    return [[sum(a[i][k] * b[k][j] for k in range(m)) % R for j in range(p)] for i in range(n)]


def _apply(m: Matrix, v: list[int]) -> list[int]:
    """neptune apply_matrix: result[i] = sum_j m[i][j] v[j]."""
    return [sum(x * y for x, y in zip(row, v, strict=True)) % R for row in m]


def _invert(m: Matrix) -> Matrix:
    n = len(m)
    aug = [list(row) + [int(i == j) for j in range(n)] for i, row in enumerate(m)]
    for col in range(n):
        piv = next(r for r in range(col, n) if aug[r][col] % R)
        aug[col], aug[piv] = aug[piv], aug[col]
        inv = pow(aug[col][col], R - 2, R)
        aug[col] = [x * inv % R for x in aug[col]]
        for r in range(n):
            if r != col and aug[r][col]:
                f = aug[r][col]
                aug[r] = [(x - f * y) % R for x, y in zip(aug[r], aug[col], strict=True)]
    return [row[n:] for row in aug]


def _minor00(m: Matrix) -> Matrix:
    return [row[1:] for row in m[1:]]


def _prime_and_double_prime(m: Matrix) -> tuple[Matrix, Matrix]:
    """M' (1 at [0][0], M's interior) and M'' (M's first row, w_hat = M_hat^-1 w below, 1 on
    the diagonal), with M = M' x M''."""
    t = len(m)
    m_prime = [[int(j == 0) for j in range(t)]] + [[0, *row[1:]] for row in m[1:]]
    w = [row[0] for row in m[1:]]
    w_hat = _apply(_invert(_minor00(m)), w)
    m_dprime = [list(m[0])] + [[w_hat[i - 1]] + [int(j == i) for j in range(1, t)] for i in range(1, t)]
    return m_prime, m_dprime


@dataclass(frozen=True)
class SparseMatrix:
    """A matrix of the form M'': ``w_hat`` its first column, ``v_rest`` the rest of its first row."""

    w_hat: list[int]
    v_rest: list[int]


@dataclass(frozen=True)
class PoseidonConstants:
    """Every constant of one Poseidon instance (arity, MerkleTree hash type)."""

    arity: int
    width: int
    full_rounds: int
    partial_rounds: int
    domain_tag: int
    round_constants: list[int]
    mds: Matrix
    mds_inv: Matrix
    compressed_round_constants: list[int]
    pre_sparse_matrix: Matrix
    sparse_matrices: list[SparseMatrix]


def _compress_round_constants(width, r_f, r_p, rc, m_inv) -> list[int]:
    """neptune compress_round_constants with every partial round preprocessed."""
    def keys(r):
        return rc[r * width:(r + 1) * width]
    half = r_f // 2
    res = list(keys(0))
    for i in range(half - 1):
        res.extend(_apply(m_inv, keys(i + 1)))
    final_round = half + r_p
    acc = list(keys(final_round))
    partial_keys = []
    for i in range(r_p):
        inverted = _apply(m_inv, acc)
        partial_keys.append(inverted[0])
        inverted[0] = 0
        acc = [(x + y) % R for x, y in zip(keys(final_round - i - 1), inverted, strict=True)]
    res.extend(_apply(m_inv, acc))
    res.extend(reversed(partial_keys))
    for i in range(1, half):
        res.extend(_apply(m_inv, keys(i + final_round)))
    assert len(res) == r_f * width + r_p
    return res


def _factor_to_sparse(base: Matrix, n: int) -> tuple[Matrix, list[SparseMatrix]]:
    curr, acc = base, []
    for _ in range(n):
        m_prime, m_dprime = _prime_and_double_prime(curr)
        acc.append(m_dprime)
        curr = _mat_mul(base, m_prime)
    acc.reverse()
    sparse = [SparseMatrix([row[0] for row in md], list(md[0][1:])) for md in acc]
    return curr, sparse


@cache
def constants(arity: int) -> PoseidonConstants:
    """Filecoin's constants for ``arity`` (MerkleTree hash type, Standard strength)."""
    if arity not in PARTIAL_ROUNDS:
        raise ValueError(f"no Poseidon parameters for arity {arity}; known: {sorted(PARTIAL_ROUNDS)}")
    width, r_f, r_p = arity + 1, FULL_ROUNDS, PARTIAL_ROUNDS[arity]
    rc = _grain_constants(width, r_f, r_p)
    mds = _cauchy_mds(width)
    m_inv = _invert(mds)
    pre_sparse, sparse = _factor_to_sparse(mds, r_p)
    return PoseidonConstants(
        arity=arity, width=width, full_rounds=r_f, partial_rounds=r_p, domain_tag=(1 << arity) - 1,
        round_constants=rc, mds=mds, mds_inv=m_inv,
        compressed_round_constants=_compress_round_constants(width, r_f, r_p, rc, m_inv),
        pre_sparse_matrix=pre_sparse, sparse_matrices=sparse,
    )


@cache
def custom_constants(arity: int, custom_id: int) -> PoseidonConstants:
    """neptune's HashType::Custom(CType::Arbitrary(id)): the MerkleTree instance's constants with
    domain tag id * 2^40 (neptune v11 ``hash_type.rs``); no padding."""
    return replace(constants(arity), domain_tag=custom_id << 40)


def _sbox(x: int) -> int:
    return pow(x, 5, R)


def poseidon_hash(preimage: list[int], c: PoseidonConstants | None = None) -> int:
    """Poseidon (MerkleTree type unless ``c`` is given) of ``arity`` field elements, textbook schedule."""
    c = c or constants(len(preimage))
    t = c.width
    state = [c.domain_tag] + [int(x) % R for x in preimage]
    rk = iter(c.round_constants)
    half = c.full_rounds // 2

    def mix(s):
        return [sum(s[i] * c.mds[i][j] for i in range(t)) % R for j in range(t)]

    for r in range(c.full_rounds + c.partial_rounds):
        state = [(x + next(rk)) % R for x in state]
        if r < half or r >= half + c.partial_rounds:
            state = [_sbox(x) for x in state]
        else:
            state[0] = _sbox(state[0])
        state = mix(state)
    return state[1]

