"""CUDA NTT, quotient and MSM against the cpu reference on fresh random inputs and edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, random_fr
from cuzk_plugin.bls12_381.points import g1_to_limbs, g2_to_limbs

pytestmark = pytest.mark.gpu


def random_g1(rng: np.random.Generator, n: int) -> np.ndarray:
    g = G1Point()
    pts = [g * Scalar(int(rng.integers(1, 2**62))) for _ in range(n)]
    return np.stack([g1_to_limbs(p) for p in pts]) if n else np.zeros((0, 2, 6), np.uint64)


def random_g2(rng: np.random.Generator, n: int) -> np.ndarray:
    g = G2Point()
    pts = [g * Scalar(int(rng.integers(1, 2**62))) for _ in range(n)]
    return np.stack([g2_to_limbs(p) for p in pts]) if n else np.zeros((0, 2, 2, 6), np.uint64)


# -- NTT ------------------------------------------------------------------------------------
@pytest.mark.parametrize("log_n", [0, 1, 2, 5, 10, 11, 13])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("coset", [False, True])
def test_ntt_matches_cpu(cuda, cpu, rng, log_n, inverse, coset):
    x = random_fr(rng, 1 << log_n)
    np.testing.assert_array_equal(cuda.ntt(x, inverse=inverse, coset=coset), cpu.ntt(x, inverse=inverse, coset=coset))


@pytest.mark.parametrize("log_n", [16, 21])
@pytest.mark.parametrize("coset", [False, True])
def test_ntt_round_trip(cuda, rng, log_n, coset):
    x = random_fr(rng, 1 << log_n)
    y = cuda.ntt(x, coset=coset)
    assert not np.array_equal(x, y)
    np.testing.assert_array_equal(cuda.ntt(y, inverse=True, coset=coset), x)


@pytest.mark.parametrize("log_n", [3, 4, 9, 19, 21])
@pytest.mark.parametrize("inverse", [False, True])
def test_ntt_odd_and_even_stage_counts(cuda, cpu, rng, log_n, inverse):
    """Groups with an odd stage count (radix-4 steps, then a paired radix-2 stage) and even
    ones, one- and several-group sizes, against the cpu (a round trip at the large sizes)."""
    x = random_fr(rng, 1 << log_n)
    got = cuda.ntt(x, inverse=inverse, coset=True)
    if log_n <= 14:
        np.testing.assert_array_equal(got, cpu.ntt(x, inverse=inverse, coset=True))
    else:
        np.testing.assert_array_equal(cuda.ntt(got, inverse=not inverse, coset=True), x)


def test_ntt_edge_values(cuda, cpu):
    x = ints_to_limbs([0, 1, R - 1, 2, R - 2, 7, 0, 1])
    np.testing.assert_array_equal(cuda.ntt(x), cpu.ntt(x))


@pytest.mark.parametrize("m", [1, 2, 3, 5, 64, 1000, 4096])
def test_quotient_h_matches_cpu(cuda, cpu, rng, m):
    a, b, c = (random_fr(rng, m) for _ in range(3))
    np.testing.assert_array_equal(cuda.quotient_h(a, b, c), cpu.quotient_h(a, b, c))


# -- MSM ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 3, 31, 257, 3000])
def test_msm_g1_random(cuda, cpu, rng, n):
    bases, scalars = random_g1(rng, n), random_fr(rng, n)
    np.testing.assert_array_equal(cuda.msm_g1(bases, scalars), cpu.msm_g1(bases, scalars))


@pytest.mark.parametrize("n", [1, 5, 300])
def test_msm_g2_random(cuda, cpu, rng, n):
    bases, scalars = random_g2(rng, n), random_fr(rng, n)
    np.testing.assert_array_equal(cuda.msm_g2(bases, scalars), cpu.msm_g2(bases, scalars))


def edge_case_inputs(rng, points: np.ndarray):
    """Scalars 0, 1, r-1, 2 and bits; identity bases; P and -P; one base repeated many times
    (doublings inside buckets)."""
    n = points.shape[0]
    scalars = random_fr(rng, 4 * n + 40)
    special = ints_to_limbs([0, 1, R - 1, 2, 1, 1, 0, R - 1])
    scalars[: special.shape[0]] = special
    scalars[8:40] = ints_to_limbs(rng.integers(0, 2, 32).tolist())  # bits
    bases = np.concatenate([points, points, points, points, np.repeat(points[:1], 40, axis=0)])
    bases[3] = 0  # identity base with a random scalar
    neg = bases[5].copy()
    return bases, scalars, neg


@pytest.mark.parametrize("window_bits", [0, 3, 8])
def test_msm_g1_edge_cases(cuda, cpu, rng, window_bits):
    """Identity bases, P + (-P) and doublings inside buckets, at several window sizes."""
    pts = random_g1(rng, 50)
    bases, scalars, _ = edge_case_inputs(rng, pts)
    # P and -P with the same scalar cancel inside one bucket.
    p = G1Point() * Scalar(12345)
    bases[10], bases[11] = g1_to_limbs(p), g1_to_limbs(-p)
    scalars[11] = scalars[10]
    # Same scalar on a repeated base: the bucket doubles.
    scalars[200:240] = scalars[200]
    cuda.window_bits = window_bits
    try:
        np.testing.assert_array_equal(cuda.msm_g1(bases, scalars), cpu.msm_g1(bases, scalars))
    finally:
        cuda.window_bits = 0


def test_msm_g1_all_identity_and_zero(cuda):
    zero = np.zeros((2, 6), np.uint64)
    bases = np.zeros((10, 2, 6), np.uint64)
    np.testing.assert_array_equal(cuda.msm_g1(bases, ints_to_limbs(range(10))), zero)
    p = g1_to_limbs(G1Point())
    np.testing.assert_array_equal(cuda.msm_g1(np.stack([p, p]), ints_to_limbs([0, 0])), zero)
    np.testing.assert_array_equal(cuda.msm_g1(np.stack([p, p]), ints_to_limbs([1, R - 1])), zero)


def test_msm_g1_only_bits(cuda, cpu, rng):
    bases = random_g1(rng, 500)
    scalars = ints_to_limbs(rng.integers(0, 2, 500).tolist())
    np.testing.assert_array_equal(cuda.msm_g1(bases, scalars), cpu.msm_g1(bases, scalars))


def test_msm_g2_edge_cases(cuda, cpu, rng):
    pts = random_g2(rng, 20)
    bases, scalars, _ = edge_case_inputs(rng, pts)
    q = G2Point() * Scalar(777)
    bases[10], bases[11] = g2_to_limbs(q), g2_to_limbs(-q)
    scalars[11] = scalars[10]
    np.testing.assert_array_equal(cuda.msm_g2(bases, scalars), cpu.msm_g2(bases, scalars))


def test_msm_reduces_scalars_above_r(cuda, cpu, rng):
    bases = random_g1(rng, 4)
    big = ints_to_limbs([R, R + 5, 2**256 - 1, 3])
    np.testing.assert_array_equal(cuda.msm_g1(bases, big), cpu.msm_g1(bases, ints_to_limbs([0, 5, (2**256 - 1) % R, 3])))


def test_msm_length_mismatch(cuda, rng):
    with pytest.raises(ValueError):
        cuda.msm_g1(random_g1(rng, 3), random_fr(rng, 2))


@pytest.mark.parametrize("window_bits", [1, 25, -3])
def test_msm_window_out_of_range_is_refused(cuda, rng, window_bits):
    cuda.window_bits = window_bits
    try:
        with pytest.raises(ValueError, match="window"):
            cuda.msm_g1(random_g1(rng, 300), random_fr(rng, 300))
    finally:
        cuda.window_bits = 0


# -- self-checks on device-made inputs (the sizes the benchmarks use) ----------------------
@pytest.mark.parametrize("log_n", [10, 16, 20])
def test_bench_msm_g1_self_check(cuda_bench, log_n):
    _, ok = cuda_bench.bench_msm(log_n, 1)
    assert ok


def test_bench_msm_g2_self_check(cuda_bench):
    _, ok = cuda_bench.bench_msm(14, 1, g2=True)
    assert ok


@pytest.mark.parametrize("g2", [False, True], ids=["g1", "g2"])
def test_bench_msm_of_a_filecoin_bit_mix_self_checks(cuda_bench, g2):
    """Mostly 0/1 scalars (the sum of ones and a small Pippenger tail) against (sum s_i k_i) G."""
    _, ok = cuda_bench.bench_msm(15, 1, g2=g2, frac_bits=0.99)
    assert ok


def test_bench_msm_profile_prints_phases(cuda_bench, capfd):
    """The profiled MSM (phases in turn) gets the same, checked, result and reports its phases."""
    cuda_bench.profile = True
    try:
        _, ok = cuda_bench.bench_msm(16, 1)
    finally:
        cuda_bench.profile = False
    assert ok
    assert "msm profile:" in capfd.readouterr().err


@pytest.mark.parametrize("coset", [False, True])
def test_bench_ntt_round_trip(cuda_bench, coset):
    _, ok = cuda_bench.bench_ntt(20, 1, coset=coset)
    assert ok


@pytest.mark.parametrize("n", [700, 70_000])
def test_msm_g1_long_items(cuda, cpu, rng, n):
    """Repeated bases (long bucket-loop items, sorted longest first) sum as the cpu does."""
    bases, scalars = random_g1(rng, min(n, 2000)), random_fr(rng, n)
    bases = np.resize(bases, (n, *bases.shape[1:]))
    if n > 2000:  # the cpu at 2000 points: fold the scalars of repeated bases
        from cuzk_plugin.bls12_381.fields import limbs_to_ints

        ints = limbs_to_ints(scalars)
        sums = [0] * 2000
        for i, v in enumerate(ints):
            sums[i % 2000] = (sums[i % 2000] + v) % R
        folded = ints_to_limbs(sums)
        np.testing.assert_array_equal(cuda.msm_g1(bases, scalars), cpu.msm_g1(bases[:2000], folded))
    else:
        np.testing.assert_array_equal(cuda.msm_g1(bases, scalars), cpu.msm_g1(bases, scalars))
