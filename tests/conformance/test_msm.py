"""MSM conformance, G1 and G2: sizes 1 .. 2^16, scalar edge cases by name, and bases that
hit the exceptional cases of point addition inside one bucket."""

from __future__ import annotations

import numpy as np
import pytest
from py_arkworks_bls12381 import Scalar

from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, random_fr
from tests.conformance.checks import ConformanceError, check_msm
from tests.conformance.inputs import SCALAR_KINDS, make_scalars

SIZES = [1, 2, 3, 1000, 2**12 + 7, pytest.param(2**16, marks=pytest.mark.slow)]
#: G2 costs about 3x G1 everywhere; its largest case runs with random scalars only.
G2_SIZES = [1, 2, 3, 1000, 2**12 + 7]


def _pool(request, group: int):
    return request.getfixturevalue("g1_pool" if group == 1 else "g2_pool")


@pytest.mark.parametrize("kind", SCALAR_KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_msm_g1_matches_reference(backend, request, rng, n, kind):
    points, bases = _pool(request, 1).take(n)
    check_msm(backend, 1, points, bases, make_scalars(kind, n, rng), kind)


@pytest.mark.parametrize("kind", SCALAR_KINDS)
@pytest.mark.parametrize("n", G2_SIZES)
def test_msm_g2_matches_reference(backend, request, rng, n, kind):
    points, bases = _pool(request, 2).take(n)
    check_msm(backend, 2, points, bases, make_scalars(kind, n, rng), kind)


@pytest.mark.slow
def test_msm_g2_largest(backend, g2_pool, rng):
    points, bases = g2_pool.take(2**16)
    check_msm(backend, 2, points, bases, random_fr(rng, 2**16), "random")


def _edge_case_bases(pool, rng, n_random: int):
    """Bases and scalars that put special pairs in one bucket: P and -P with the same scalar
    (sum is the identity), P twice with the same scalar (doubling), the identity itself,
    and repeats of one point with random scalars; shuffled among random points."""
    points, _ = pool.take(n_random + 3)
    p, q, t = points[-3:]
    k = random_fr(rng, 3)
    k_ints = [int.from_bytes(row.tobytes(), "little") for row in k]
    special = [
        (p, k_ints[0]), (-p, k_ints[0]),          # P + (-P) in every bucket they share
        (q, k_ints[1]), (q, k_ints[1]),           # Q + Q: doubling inside a bucket
        (pool.identity(), k_ints[2]),             # the identity as a base
        (t, k_ints[2]), (t, (R - k_ints[2]) % R),  # T with k and -k: cancels overall
        (t, 1), (t, 1), (t, 2),                   # repeats with small scalars
    ]
    pts = list(points[:n_random]) + [s[0] for s in special]
    scal = np.concatenate([random_fr(rng, n_random), ints_to_limbs([s[1] for s in special])])
    order = rng.permutation(len(pts))
    pts = [pts[i] for i in order]
    return pts, pool.to_limbs(pts), scal[order]


@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("n_random", [0, 50, 1000])
def test_msm_exceptional_additions_in_buckets(backend, request, rng, group, n_random):
    pts, bases, scalars = _edge_case_bases(_pool(request, group), rng, n_random)
    check_msm(backend, group, pts, bases, scalars, "P/-P, doubling, identity, repeats")


@pytest.mark.parametrize("group", [1, 2])
def test_msm_all_bases_identical(backend, request, rng, group):
    """One point repeated 300 times with random scalars: every bucket is all doublings."""
    pool = _pool(request, group)
    (p,), _ = pool.take(1)
    pts = [p] * 300
    check_msm(backend, group, pts, pool.to_limbs(pts), random_fr(rng, 300), "one base repeated")


@pytest.mark.parametrize("group", [1, 2])
def test_msm_only_identity_bases(backend, request, rng, group):
    pool = _pool(request, group)
    pts = [pool.identity()] * 5
    check_msm(backend, group, pts, pool.to_limbs(pts), random_fr(rng, 5), "identity bases")


@pytest.mark.parametrize("group", [1, 2])
def test_msm_cancelling_to_identity(backend, request, rng, group):
    """sum k_i P_i + sum (r - k_i) P_i = identity: the result's identity encoding."""
    points, _ = _pool(request, group).take(100)
    k = random_fr(rng, 100)
    neg = ints_to_limbs([(R - int.from_bytes(row.tobytes(), "little")) % R for row in k])
    pts = list(points) * 2
    check_msm(backend, group, pts, _pool(request, group).to_limbs(pts), np.concatenate([k, neg]), "cancelling")


@pytest.mark.parametrize("group", [1, 2])
def test_msm_empty_is_identity(backend, group):
    shape = (0, 2, 6) if group == 1 else (0, 2, 2, 6)
    fn = backend.msm_g1 if group == 1 else backend.msm_g2
    result = np.asarray(fn(np.zeros(shape, dtype=np.uint64), np.zeros((0, 4), dtype=np.uint64)))
    assert result.shape == shape[1:] and not result.any()


def test_msm_length_mismatch_is_refused(backend, g1_pool, rng):
    _, bases = g1_pool.take(4)
    with pytest.raises(ValueError):
        backend.msm_g1(bases, random_fr(rng, 3))


def test_msm_scalar_multiplication_agrees_with_arkworks(backend, g1_pool, g2_pool, rng):
    """n = 1 is plain scalar multiplication: compare with arkworks' point * Scalar directly."""
    for pool, group in ((g1_pool, 1), (g2_pool, 2)):
        (p,), bases = pool.take(1)
        k = random_fr(rng, 1)
        want = pool.to_limbs([p * Scalar(int.from_bytes(k.tobytes(), "little"))])[0]
        got = np.asarray((backend.msm_g1 if group == 1 else backend.msm_g2)(bases, k))
        if not np.array_equal(got, want):
            raise ConformanceError(f"{backend.name}: k * P in G{group} differs from arkworks")
