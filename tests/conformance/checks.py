"""The conformance checks: each takes a backend and inputs, computes the reference answer,
and raises :class:`ConformanceError` naming what differs. Tests call these; so does the
broken-backend demonstration, which is how we know a wrong backend cannot pass.

References: the cpu backend (py-arkworks-bls12381 MSMs, numpy NTTs), a direct O(N^2) DFT for
small transforms, direct evaluations of a few output coefficients at any size, and naive
sums of arkworks scalar multiplications for small MSMs.
"""

from __future__ import annotations

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.bls12_381.fields import FR_GENERATOR, R, limbs_to_ints, limbs_to_objects, root_of_unity
from cuzk_plugin.bls12_381.ntt import powers
from cuzk_plugin.bls12_381.points import g1_to_limbs, g2_to_limbs

CPU = CpuBackend()
#: Up to this size the MSM reference is also a plain sum of scalar multiplications, and the
#: NTT reference also a direct DFT.
NAIVE_LIMIT = 64


class ConformanceError(AssertionError):
    """A backend's answer differs from the reference (or it failed to answer)."""


def _first_difference(got: np.ndarray, want: np.ndarray) -> str:
    rows = np.flatnonzero((got != want).any(axis=1))
    return f"{rows.size} of {want.shape[0]} rows differ, first at index {int(rows[0])}"


def _require_equal(got, want: np.ndarray, what: str) -> None:
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise ConformanceError(f"{what}: returned {got.dtype} {got.shape}, expected {want.dtype} {want.shape}")
    if not np.array_equal(got, want):
        is_fr_vector = want.ndim == 2 and want.shape[1] == 4
        raise ConformanceError(f"{what}: {_first_difference(got, want) if is_fr_vector else 'the points differ'}")

# --------------------------------------------------------------------------- NTT
def direct_ntt_coefficients(x: np.ndarray, ks: list[int], *, inverse: bool, coset: bool) -> list[int]:
    """Output coefficients ``ks`` of Backend.ntt straight from the definition, O(N) each:
    forward X_k = sum_j x_j g^j? w^(jk); inverse x_j = N^-1 g^-j? sum_k X_k w^(-jk)."""
    n = x.shape[0]
    omega = root_of_unity(n.bit_length() - 1)
    vals = limbs_to_objects(x)
    if coset and not inverse:
        vals = vals * powers(FR_GENERATOR, n) % R
    base = pow(omega, -1, R) if inverse else omega
    out = []
    for k in ks:
        acc = int(np.sum(vals * powers(pow(base, k, R), n) % R)) % R
        if inverse:
            acc = acc * pow(n, -1, R) % R
            if coset:
                acc = acc * pow(FR_GENERATOR, -k, R) % R
        out.append(acc)
    return out


def check_ntt(backend, x: np.ndarray, *, inverse: bool, coset: bool, rng: np.random.Generator) -> None:
    """Backend.ntt against the definition (all coefficients when N <= 64, eight random ones
    otherwise) and against the cpu backend (all coefficients)."""
    n = x.shape[0]
    what = f"{backend.name}.ntt(N={n}, inverse={inverse}, coset={coset})"
    try:
        got = backend.ntt(x.copy(), inverse=inverse, coset=coset)
    except Exception as exc:
        raise ConformanceError(f"{what} raised {exc!r}") from exc
    got = np.asarray(got)
    if got.shape != x.shape:
        raise ConformanceError(f"{what}: returned shape {got.shape}, expected {x.shape}")
    ks = list(range(n)) if n <= NAIVE_LIMIT else sorted(set(rng.integers(0, n, 8).tolist()) | {0, n - 1})
    want = direct_ntt_coefficients(x, ks, inverse=inverse, coset=coset)
    have = limbs_to_ints(got[ks])
    for k, w, h in zip(ks, want, have, strict=True):
        if w != h:
            raise ConformanceError(f"{what}: coefficient {k} is {h:#x}, the definition gives {w:#x}")
    if backend.name != CPU.name:
        _require_equal(got, CPU.ntt(x, inverse=inverse, coset=coset), what + " vs cpu")


def check_ntt_round_trip(backend, x: np.ndarray, *, coset: bool) -> None:
    what = f"{backend.name}: inverse(ntt(x)) with N={x.shape[0]}, coset={coset}"
    back = backend.ntt(backend.ntt(x.copy(), coset=coset), inverse=True, coset=coset)
    _require_equal(np.asarray(back), x, what)


def check_quotient_h(backend, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    what = f"{backend.name}.quotient_h(m={a.shape[0]})"
    try:
        got = backend.quotient_h(a, b, c)
    except Exception as exc:
        raise ConformanceError(f"{what} raised {exc!r}") from exc
    _require_equal(np.asarray(got), CPU.quotient_h(a, b, c), what + " vs cpu")


# --------------------------------------------------------------------------- MSM
def naive_msm(points: list, scalars: np.ndarray, group: int):
    cls = G1Point if group == 1 else G2Point
    acc = cls.identity()
    for p, k in zip(points, limbs_to_ints(scalars), strict=True):
        acc = acc + p * Scalar(k)
    return acc


def check_msm(backend, group: int, points: list, bases: np.ndarray, scalars: np.ndarray, what: str = "") -> None:
    """backend.msm_g1/g2 against the cpu backend and, for small n, a naive arkworks sum.

    ``points`` are the arkworks forms of ``bases`` (identity included), kept so the naive
    reference never reads limbs through the code under test."""
    n = bases.shape[0]
    label = f"{backend.name}.msm_g{group}(n={n}{', ' + what if what else ''})"
    fn = backend.msm_g1 if group == 1 else backend.msm_g2
    try:
        got = fn(bases.copy(), scalars.copy())
    except Exception as exc:
        raise ConformanceError(f"{label} raised {exc!r}") from exc
    got = np.asarray(got)
    to_limbs = g1_to_limbs if group == 1 else g2_to_limbs
    if n <= NAIVE_LIMIT:
        _require_equal(got, to_limbs(naive_msm(points, scalars, group)), label + " vs naive arkworks sum")
    if backend.name != CPU.name:
        ref = CPU.msm_g1(bases, scalars) if group == 1 else CPU.msm_g2(bases, scalars)
        _require_equal(got, ref, label + " vs cpu")


# --------------------------------------------------------------------------- proofs
def check_proof_bytes(backend, key, part, r: int, s: int) -> None:
    """Proofs from ``backend`` and the cpu backend with the same r, s are byte-identical."""
    from cuzk_plugin.groth16.prover import prove

    what = f"{backend.name}: proof with fixed r, s"
    try:
        got = prove(key, part, backend, r=r, s=s).to_bytes()
    except Exception as exc:
        raise ConformanceError(f"{what} raised {exc!r}") from exc
    want = prove(key, part, CPU, r=r, s=s).to_bytes()
    if got != want:
        first = next(i for i, (x, y) in enumerate(zip(got, want, strict=True)) if x != y)
        part_name = "A" if first < 48 else "B" if first < 144 else "C"
        raise ConformanceError(f"{what}: bytes differ from cpu's from offset {first} (in {part_name})")
