"""The cpu backend's NTT and quotient H against naive formulas (independent of the code under test)."""

import pytest

from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, limbs_to_ints, random_fr, root_of_unity

cpu = CpuBackend()


def naive_dft(xs, omega, shift=1):
    n = len(xs)
    return [sum(x * pow(shift, j, R) * pow(omega, j * k, R) for j, x in enumerate(xs)) % R for k in range(n)]


@pytest.mark.parametrize("log_n", [0, 1, 2, 3, 5])
def test_ntt_matches_naive_dft(rng, log_n):
    x = random_fr(rng, 1 << log_n)
    xs = limbs_to_ints(x)
    w = root_of_unity(log_n)
    assert limbs_to_ints(cpu.ntt(x)) == naive_dft(xs, w)
    assert limbs_to_ints(cpu.ntt(x, coset=True)) == naive_dft(xs, w, shift=7)
    for coset in (False, True):
        assert (cpu.ntt(cpu.ntt(x, coset=coset), inverse=True, coset=coset) == x).all()


def test_ntt_round_trip_large(rng):
    x = random_fr(rng, 1 << 12)
    assert (cpu.ntt(cpu.ntt(x, inverse=True, coset=True), coset=True) == x).all()


def test_ntt_rejects_non_power_of_two(rng):
    with pytest.raises(ValueError, match="power of two"):
        cpu.ntt(random_fr(rng, 12))


def _poly_eval(coeffs, x):
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % R
    return acc


def test_quotient_h_divides(rng):
    """h(X) * Z(X) = A(X) B(X) - C(X) at a random point, where A, B, C interpolate a, b, c on the domain."""
    m = 13
    a, b = random_fr(rng, m), random_fr(rng, m)
    ai, bi = limbs_to_ints(a), limbs_to_ints(b)
    # c = a * b on the domain: the only case where Groth16's quotient is a polynomial.
    c = ints_to_limbs([x * y % R for x, y in zip(ai, bi, strict=True)])
    h = limbs_to_ints(cpu.quotient_h(a, b, c))
    n = 16
    assert len(h) == n - 1
    coeffs = [limbs_to_ints(cpu.ntt(ints_to_limbs(v + [0] * (n - m)), inverse=True)) for v in (ai, bi, limbs_to_ints(c))]
    z = int(rng.integers(2, 2**62))
    lhs = _poly_eval(h, z) * (pow(z, n, R) - 1) % R
    rhs = (_poly_eval(coeffs[0], z) * _poly_eval(coeffs[1], z) - _poly_eval(coeffs[2], z)) % R
    assert lhs == rhs
