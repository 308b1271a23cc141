"""a = A z, b = B z, c = C z over Fr for a pre-compiled circuit, in numpy (no per-element Python).

A term is coefficient x value. Filecoin witnesses are mostly bits and its coefficients mostly
+-2^k, so a term's contribution is written as a few *signed 32-bit limbs*: a value of 0 adds
nothing; a value of 1 adds its coefficient's limbs, taken from whichever of c and -(r - c) has
fewer non-zero limbs (+-2^k and -1 have one: a single (limb index, +-2^j) entry); a coefficient
of +-1 adds +-the value's eight limbs; only the rest (large x large, e.g. Poseidon's constants
times hash state) goes through a vectorised Montgomery product (CIOS on 32-bit limbs held in
uint64 arrays, so every partial product and carry fits). All entries of a chunk of rows are
summed per (row, limb) by one ``np.bincount`` in float64, exact while a row has at most
MAX_ROW_TERMS terms (|sum| < 2^53); a row's signed limb sums are then carried and reduced mod r
with a quotient estimated in floating point and corrected exactly (most rows are already
canonical and skip that). Rows with a single term (most of B, half of A) are looked up directly.
A, B and C run on a thread each (numpy releases the GIL); memory stays at one chunk of terms.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, limbs_to_ints
from cuzk_plugin.formats.pce import CsrMatrix, PrecompiledCircuit

__all__ = ["CoefficientTable", "evaluate_matrix", "evaluate_r1cs", "mont_mul", "to_limbs32", "unsatisfied_rows"]

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_R32 = [np.uint64((R >> (32 * i)) & 0xFFFFFFFF) for i in range(8)]
#: -r^-1 mod 2^32 (Montgomery's n').
_NPRIME = np.uint64((-pow(R, -1, 1 << 32)) % (1 << 32))
_R_FLOAT = float(R)


def to_limbs32(x: np.ndarray) -> list[np.ndarray]:
    """``(n, 4) uint64`` -> eight ``(n,) uint64`` arrays of 32-bit limbs, least significant first."""
    lo_hi = np.ascontiguousarray(x, dtype="<u8").view("<u4").reshape(-1, 8)
    return [lo_hi[:, i].astype(np.uint64) for i in range(8)]


def _from_limbs32(limbs: list[np.ndarray]) -> np.ndarray:
    out = np.empty((limbs[0].shape[0], 4), dtype=np.uint64)
    for i in range(4):
        out[:, i] = limbs[2 * i] | (limbs[2 * i + 1] << _S32)
    return out


def _sub_r_if_ge(t: list[np.ndarray], top: np.ndarray | None = None) -> list[np.ndarray]:
    """t - r where t >= r (t given as 8 limbs plus an optional higher limb), else t."""
    ge = np.zeros(t[0].shape, bool) if top is None else top > 0
    eq = np.ones(t[0].shape, bool) if top is None else top == 0
    for i in range(7, -1, -1):
        ge |= eq & (t[i] > _R32[i])
        eq &= t[i] == _R32[i]
    ge |= eq
    if not ge.any():
        return t
    out, borrow = [], np.zeros(t[0].shape, np.uint64)
    for i in range(8):
        d = t[i] - _R32[i] - borrow  # wraps in uint64 where it borrows
        borrow = (d >> np.uint64(63)) & np.uint64(1)
        out.append(np.where(ge, d & _M32, t[i]))
    return out


def mont_mul(a: list[np.ndarray], b: list[np.ndarray]) -> list[np.ndarray]:
    """a * b * 2^-256 mod r, limb-wise (CIOS), inputs and output below r as 8 x 32-bit limbs."""
    n = a[0].shape[0]
    t = [np.zeros(n, np.uint64) for _ in range(10)]
    for i in range(8):
        ai = a[i]
        carry = np.zeros(n, np.uint64)
        for j in range(8):
            uv = t[j] + ai * b[j] + carry  # < 2^64: (2^32-1)^2 + 2 (2^32-1)
            t[j] = uv & _M32
            carry = uv >> _S32
        uv = t[8] + carry
        t[8] = uv & _M32
        t[9] = uv >> _S32
        m = (t[0] * _NPRIME) & _M32
        carry = (t[0] + m * _R32[0]) >> _S32
        for j in range(1, 8):
            uv = t[j] + m * _R32[j] + carry
            t[j - 1] = uv & _M32
            carry = uv >> _S32
        uv = t[8] + carry
        t[7] = uv & _M32
        t[8] = t[9] + (uv >> _S32)
    return _sub_r_if_ge(t[:8], t[8])


def _signed_limbs(v: int) -> list[tuple[int, int]]:
    """The shortest of v and -(r - v) as (32-bit limb index, signed limb value) pairs."""
    def limbs(x):
        return [(i, (x >> (32 * i)) & 0xFFFFFFFF) for i in range(8) if (x >> (32 * i)) & 0xFFFFFFFF]
    pos, neg = limbs(v), limbs(R - v)
    return pos if len(pos) <= len(neg) else [(i, -w) for i, w in neg]


class CoefficientTable:
    """A circuit's coefficient table in the forms the evaluation needs."""

    def __init__(self, coeffs: np.ndarray):
        vals = limbs_to_ints(coeffs) if coeffs.shape[0] else []
        self.k = len(vals)
        parts = [_signed_limbs(v) for v in vals]
        #: per coefficient, its fewest signed 32-bit limbs (a power of two, or minus one, has one)
        self.n_limbs = np.array([len(p) for p in parts], dtype=np.int64)
        self.limb_ptr = np.concatenate([[0], np.cumsum(self.n_limbs)]).astype(np.int64)
        self.limb_index = np.array([i for p in parts for i, _ in p], dtype=np.int64)
        self.limb_weight = np.array([w for p in parts for _, w in p], dtype=np.float64)
        mont = [(v << 256) % R for v in vals]
        #: per limb (k,): coefficient * 2^256 mod r, so that mont_mul(mont, z) = coefficient * z
        self.mont = [np.array([(v >> (32 * i)) & 0xFFFFFFFF for v in mont], dtype=np.uint64) for i in range(8)]
        #: (k, 4) canonical limbs
        self.canonical = np.ascontiguousarray(coeffs, dtype=np.uint64).reshape(-1, FR_LIMBS)
        #: the same with one zero row appended (index k): a gather gives 0 for a zero value
        self.canonical_or_zero = np.concatenate([self.canonical, np.zeros((1, FR_LIMBS), np.uint64)])
        self.one = vals.index(1) if 1 in vals else -1
        self.minus_one = vals.index(R - 1) if (R - 1) in vals else -1


#: A row's signed limb sums stay exact in float64 while a row has at most this many terms.
MAX_ROW_TERMS = 1 << 20


def _reduce_rows(acc: np.ndarray) -> np.ndarray:
    """(rows, 8) exact signed limb sums (float64, |sum| < 2^53) -> (rows, 4) canonical mod r."""
    m = acc.shape[0]
    out = np.empty((m, FR_LIMBS), np.uint64)
    # Most rows are already canonical: every limb sum in [0, 2^32) and the top one below r's.
    simple = ((acc >= 0) & (acc <= 4294967295.0)).all(axis=1) & (acc[:, 7] < float(int(_R32[7])))
    hard = np.flatnonzero(~simple)
    if hard.size == 0:
        return acc.astype(np.uint32).view(np.uint64)
    out[simple] = acc[simple].astype(np.uint32).view(np.uint64)
    s = np.ascontiguousarray(acc[hard].astype(np.int64).T)  # (8, hard rows), limb-major
    n = hard.size
    carry = np.zeros(n, np.int64)
    limbs = []
    for i in range(8):
        v = s[i] + carry
        limbs.append(v & 0xFFFFFFFF)
        carry = v >> 32  # arithmetic: floor division for negative sums
    # value = limbs + carry * 2^256; subtract q r with q a float estimate of the quotient minus
    # one (never above it, at most two below), leaving a value in [0, 3r).
    approx = carry.astype(np.float64) * 2.0**256 + limbs[7].astype(np.float64) * 2.0**224 \
        + limbs[6].astype(np.float64) * 2.0**192
    q = (np.floor(approx / _R_FLOAT) - 1).astype(np.int64)
    c = np.zeros(n, np.int64)
    for i in range(8):
        v = limbs[i] - q * np.int64(int(_R32[i])) + c  # |q| < 2^31: fits in int64
        limbs[i] = v & 0xFFFFFFFF
        c = v >> 32
    carry = carry + c
    u = _sub_r_if_ge([x.astype(np.uint64) for x in limbs], carry.astype(np.uint64))
    out[hard] = _from_limbs32(_sub_r_if_ge(u))
    return out


def _entries(rows: np.ndarray, cols: np.ndarray, cidx: np.ndarray, z: np.ndarray, zkind: np.ndarray,
             table: CoefficientTable) -> tuple[list, list]:
    """(keys = row * 8 + limb, signed weights) of every term's contribution, as lists of arrays."""
    kind = zkind[cols]
    keys, weights = [], []
    ones = np.flatnonzero(kind == 1)  # value 1: the coefficient's own limbs
    if ones.size:
        ci = cidx[ones]
        single = table.n_limbs[ci] == 1  # powers of two, minus one: one limb
        if single.all():
            multi = None
        else:
            multi = ones[~single]
            ones, ci = ones[single], ci[single]
        first = table.limb_ptr[ci]
        keys.append(rows[ones] * 8 + table.limb_index[first])
        weights.append(table.limb_weight[first])
        if multi is not None:
            ci = cidx[multi]
            reps = table.n_limbs[ci]
            total = int(reps.sum())
            starts = np.cumsum(reps) - reps
            entry = np.repeat(table.limb_ptr[ci] - starts, reps) + np.arange(total, dtype=np.int64)
            keys.append(np.repeat(rows[multi] * 8, reps) + table.limb_index[entry])
            weights.append(table.limb_weight[entry])
    g = np.flatnonzero(kind == 2)
    if g.size:
        cg = cidx[g]
        limbs = to_limbs32(np.take(z, cols[g], axis=0))
        sign = np.ones(g.size, np.float64)
        sign[cg == table.minus_one] = -1.0
        rest = np.flatnonzero((cg != table.one) & (cg != table.minus_one))
        if rest.size:
            prod = mont_mul([m[cg[rest]] for m in table.mont], [x[rest] for x in limbs])
            for i in range(8):
                limbs[i][rest] = prod[i]
        base = rows[g] * 8
        for i in range(8):
            keys.append(base + i)
            weights.append(limbs[i].astype(np.float64) * sign)
    return keys, weights


def value_kinds(z: np.ndarray) -> np.ndarray:
    """(n,) uint8 per value: 0 for 0, 1 for 1, 2 otherwise."""
    high = (z[:, 1] | z[:, 2] | z[:, 3]) != 0
    return np.where(high | (z[:, 0] > 1), np.uint8(2), z[:, 0].astype(np.uint8))


@dataclass(frozen=True)
class SplitMatrix:
    """A matrix split for evaluation: rows with one term (most of B, half of A: the value is that
    term, no sum) and the rest as a smaller CSR matrix of their own."""

    num_rows: int
    #: (s,) int64 rows with exactly one term, with that term's column and coefficient index.
    single_rows: np.ndarray
    single_cols: np.ndarray
    single_cidx: np.ndarray
    #: (t,) int64 rows with none or several terms, and those rows as CSR.
    multi_rows: np.ndarray
    multi: CsrMatrix

    @classmethod
    def of(cls, mat: CsrMatrix) -> SplitMatrix:
        row_ptr = np.asarray(mat.row_ptr).astype(np.int64)
        lens = np.diff(row_ptr)
        if lens.size and lens.max() > MAX_ROW_TERMS:
            raise ValueError(f"row {int(lens.argmax())} has {int(lens.max())} terms, more than {MAX_ROW_TERMS}")
        single = np.flatnonzero(lens == 1)
        multi = np.flatnonzero(lens != 1)
        cols, cidx = np.asarray(mat.cols), np.asarray(mat.coeff_idx)
        take = np.ones(cols.shape[0], bool)
        take[row_ptr[single]] = False
        m_ptr = np.zeros(multi.size + 1, np.uint64)
        np.cumsum(lens[multi], out=m_ptr[1:])
        return cls(lens.size, single, cols[row_ptr[single]], cidx[row_ptr[single]], multi,
                   CsrMatrix(m_ptr, cols[take], cidx[take]))

    @property
    def nbytes(self) -> int:
        return int(self.single_rows.nbytes + self.single_cols.nbytes + self.single_cidx.nbytes
                   + self.multi_rows.nbytes + self.multi.nbytes)


_ROW = np.dtype((np.void, 8 * FR_LIMBS))


def _scatter_rows(out: np.ndarray, rows: np.ndarray, vals: np.ndarray) -> None:
    """out[rows] = vals for (n, 4) uint64 arrays, as one 32-byte item a row (several times
    faster than numpy's two-dimensional fancy assignment)."""
    out.view(_ROW).reshape(-1)[rows] = np.ascontiguousarray(vals).view(_ROW).reshape(-1)


def evaluate_split(mat: SplitMatrix, z: np.ndarray, zkind: np.ndarray, table: CoefficientTable,
                   *, chunk_terms: int = 1 << 21) -> np.ndarray:
    """M z for one matrix: (rows, 4) uint64 canonical."""
    out = np.empty((mat.num_rows, FR_LIMBS), np.uint64)
    # one-term rows: 0, the coefficient (value 1), the value (coefficient 1), else a product
    kind = zkind[mat.single_cols]
    pick = np.where(kind == 1, mat.single_cidx, table.k)  # table.k: the zero row
    vals = np.take(table.canonical_or_zero, pick, axis=0)
    big = np.flatnonzero(kind == 2)
    if big.size:
        ci = mat.single_cidx[big]
        zb = np.take(z, mat.single_cols[big], axis=0)
        plus = ci == table.one
        vals[big[plus]] = zb[plus]
        rest = np.flatnonzero(~plus)
        if rest.size:
            prod = mont_mul([m[ci[rest]] for m in table.mont], to_limbs32(zb[rest]))
            vals[big[rest]] = _from_limbs32(prod)
    _scatter_rows(out, mat.single_rows, vals)
    _scatter_rows(out, mat.multi_rows, evaluate_matrix(mat.multi, z, zkind, table, chunk_terms=chunk_terms))
    return out


def evaluate_matrix(mat: CsrMatrix, z: np.ndarray, zkind: np.ndarray, table: CoefficientTable,
                    *, chunk_terms: int = 1 << 21) -> np.ndarray:
    """M z for one matrix: (rows, 4) uint64 canonical, by limb sums (see the module doc)."""
    m = mat.row_ptr.shape[0] - 1
    out = np.empty((m, FR_LIMBS), np.uint64)
    row_ptr = np.asarray(mat.row_ptr).astype(np.int64)
    lens = np.diff(row_ptr)
    if lens.size and lens.max() > MAX_ROW_TERMS:
        raise ValueError(f"row {int(lens.argmax())} has {int(lens.max())} terms, more than {MAX_ROW_TERMS}")
    lo = 0
    while lo < m:
        start = int(row_ptr[lo])
        hi = int(np.searchsorted(row_ptr, start + chunk_terms, side="right")) - 1
        hi = min(m, max(hi, lo + 1))
        stop = int(row_ptr[hi])
        rows = np.repeat(np.arange(hi - lo, dtype=np.int64), lens[lo:hi])
        keys, w = _entries(rows, np.asarray(mat.cols[start:stop]), np.asarray(mat.coeff_idx[start:stop]), z, zkind, table)
        n = (hi - lo) * 8
        if not keys:
            acc = np.zeros(n, np.float64)
        elif len(keys) == 1:
            acc = np.bincount(keys[0], weights=w[0], minlength=n)
        else:
            acc = np.bincount(np.concatenate(keys), weights=np.concatenate(w), minlength=n)
        out[lo:hi] = _reduce_rows(acc.reshape(hi - lo, 8))
        lo = hi
    return out


def evaluate_r1cs(pce: PrecompiledCircuit, z: np.ndarray, table: CoefficientTable | None = None,
                  split: tuple[SplitMatrix, SplitMatrix, SplitMatrix] | None = None,
                  *, threads: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A z, B z, C z), each (num_constraints, 4) uint64 canonical; z (num_vars, 4) canonical.
    ``table`` and ``split`` are the circuit's prepared forms (made here when not given)."""
    if z.dtype != np.uint64 or z.ndim != 2 or z.shape != (pce.num_vars, FR_LIMBS):
        raise ValueError(f"z: expected ({pce.num_vars}, 4) uint64 (inputs then aux), got {z.dtype} {z.shape}")
    table = table or CoefficientTable(pce.coeffs)
    split = split or (SplitMatrix.of(pce.a), SplitMatrix.of(pce.b), SplitMatrix.of(pce.c))
    zkind = value_kinds(z)
    threads = threads or min(3, os.cpu_count() or 1)
    if threads <= 1:
        return tuple(evaluate_split(m, z, zkind, table) for m in split)  # type: ignore[return-value]
    with ThreadPoolExecutor(threads) as ex:
        return tuple(ex.map(lambda m: evaluate_split(m, z, zkind, table), split))  # type: ignore[return-value]


#: 2^512 mod r as four uint64 limbs: mont_mul(mont_mul(a, b), R2) = a * b.
_R2_LIMBS = np.array([[((1 << 512) % R >> (64 * i)) & (2**64 - 1) for i in range(4)]], dtype=np.uint64)


def unsatisfied_rows(a: np.ndarray, b: np.ndarray, c: np.ndarray, *, chunk: int = 1 << 22) -> np.ndarray:
    """Rows j where a_j * b_j != c_j, (n,) int64 ascending; a, b, c (rows, 4) canonical.
    A b of 0 or 1 (most rows: booleanity, bit products) is a comparison; the rest Montgomery."""
    bad = []
    for lo in range(0, a.shape[0], chunk):
        aa, bb, cc = a[lo:lo + chunk], b[lo:lo + chunk], c[lo:lo + chunk]
        small = (bb[:, 1] | bb[:, 2] | bb[:, 3]) == 0
        zero = small & (bb[:, 0] == 0)
        unit = small & (bb[:, 0] == 1)
        ok = np.zeros(aa.shape[0], bool)
        ok[zero] = (cc[zero] == 0).all(axis=1)
        ok[unit] = (cc[unit] == aa[unit]).all(axis=1)
        g = np.flatnonzero(~(zero | unit))
        if g.size:
            r2 = to_limbs32(np.repeat(_R2_LIMBS, g.size, axis=0))
            ab = _from_limbs32(mont_mul(mont_mul(to_limbs32(aa[g]), to_limbs32(bb[g])), r2))
            ok[g] = (ab == cc[g]).all(axis=1)
        bad.append(lo + np.flatnonzero(~ok))
    return np.concatenate(bad) if bad else np.zeros(0, np.int64)
