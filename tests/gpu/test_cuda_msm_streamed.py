"""The streamed MSM (msm_streamed: the points in page-locked host memory, copied to the device in
chunks, one Pippenger over all the chunks, the sum of ones kept on the device) against the CPU.
The bases are P_i = k_i G with known k_i, so each result is checked against (sum_i s_i k_i mod r) G
computed from integers and one arkworks multiplication. Random scalars, zeros, ones, bits with a
few large, 1 and r - 1; chunks that split n unevenly, one point a chunk, one chunk for all;
enough chunks that the two window states go round thousands of times; G1 and G2; the windows a
streamed MSM takes (16 bits at 2^20-2^22 points a chunk, 20 at 2^23-2^24); a cancelled MSM; and the device memory it held against
msm_streamed_scratch_bytes."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, limbs_to_ints, random_fr
from cuzk_plugin.bls12_381.points import g1_to_limbs, g2_to_limbs
from cuzk_plugin.engine.residency import msm_streamed_scratch_bytes
from cuzk_plugin.errors import ProveCancelled

pytestmark = pytest.mark.gpu


def fr(value: int) -> Scalar:
    """An arkworks scalar from any integer (Scalar(int) does not take values near r)."""
    return Scalar.from_le_bytes_mod_order((value % R).to_bytes(32, "little"))


@dataclass(frozen=True)
class Bases:
    """Distinct points P_i = k_i G as affine canonical limbs, their discrete logarithms k_i, and
    the seed they were drawn from (in every failure message)."""

    group: type
    limbs: np.ndarray
    dlogs: list[int]
    seed: int

    def expected(self, scalars: np.ndarray) -> np.ndarray:
        """(sum_i s_i k_i mod r) G: the MSM of the first len(scalars) bases, from integers."""
        e = sum(s * k for s, k in zip(limbs_to_ints(scalars), self.dlogs, strict=False)) % R
        to_limbs = g1_to_limbs if self.group is G1Point else g2_to_limbs
        return to_limbs(self.group() * fr(e))


def make_bases(group: type, log_n: int) -> Bases:
    """2^log_n distinct points X[hi] + Y[lo] from two tables of random multiples of G (one
    addition a point, not a scalar multiplication)."""
    seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    lo_bits = log_n // 2
    lo_mask = (1 << lo_bits) - 1
    x = limbs_to_ints(random_fr(rng, 1 << (log_n - lo_bits)))
    y = limbs_to_ints(random_fr(rng, 1 << lo_bits))
    g = group()
    gx, gy = [g * fr(v) for v in x], [g * fr(v) for v in y]
    points = [gx[i >> lo_bits] + gy[i & lo_mask] for i in range(1 << log_n)]
    dlogs = [(x[i >> lo_bits] + y[i & lo_mask]) % R for i in range(1 << log_n)]
    limbs = g1_to_limbs(points) if group is G1Point else g2_to_limbs(points)
    return Bases(group, limbs, dlogs, seed)


@pytest.fixture(scope="module")
def g1_bases() -> Bases:
    return make_bases(G1Point, 16)


@pytest.fixture(scope="module")
def g2_bases() -> Bases:
    return make_bases(G2Point, 13)


def assert_streamed_msm(cuda_bench, bases: Bases, scalars: np.ndarray, chunk: int, **kw) -> None:
    n = scalars.shape[0]
    got, _, _ = cuda_bench.msm_streamed(bases.limbs[:n], scalars, chunk, **kw)
    np.testing.assert_array_equal(got, bases.expected(scalars),
                                  err_msg=f"n={n} chunk={chunk} {kw} (bases seed {bases.seed})")


def bits(rng: np.random.Generator, n: int) -> np.ndarray:
    return ints_to_limbs(rng.integers(0, 2, n).tolist())


def bits_and_large(rng: np.random.Generator, n: int, frac_bits: float) -> np.ndarray:
    """Each scalar a bit with probability frac_bits, else uniform below r."""
    scalars = random_fr(rng, n)
    small = rng.random(n) < frac_bits
    scalars[small] = bits(rng, int(small.sum()))
    return scalars


@pytest.mark.parametrize(("n", "chunk"), [(1, 1), (5000, 1237), (4096, 4095), (4096, 4096), (3000, 10_000),
                                          (1 << 16, 1 << 13), (1 << 16, 3001)])
def test_g1_random_scalars(cuda_bench, g1_bases, rng, n, chunk):
    """Chunks that split n unevenly (4096 in 4095: a last chunk of one point), one chunk of
    exactly n and one beyond it, 2^16 points in 8 and in 22 chunks."""
    assert_streamed_msm(cuda_bench, g1_bases, random_fr(rng, n), chunk)


@pytest.mark.parametrize(("n", "chunk"), [(3000, 700), (1 << 13, (1 << 13) + 5)])
def test_g2_random_scalars(cuda_bench, g2_bases, rng, n, chunk):
    assert_streamed_msm(cuda_bench, g2_bases, random_fr(rng, n), chunk)


def test_no_points_sum_to_the_identity(cuda_bench):
    got, _, _ = cuda_bench.msm_streamed(np.zeros((0, 2, 6), np.uint64), np.zeros((0, 4), np.uint64), 5)
    assert not got.any()


@pytest.mark.parametrize("g2", [False, True], ids=["g1", "g2"])
def test_one_point_a_chunk(cuda_bench, g1_bases, g2_bases, rng, g2):
    """Each chunk a single point: a bit (the sum of ones, or nothing) or a large scalar (every
    window of the Pippenger for one point, added into the buckets of the chunks before)."""
    n = 100 if g2 else 200
    assert_streamed_msm(cuda_bench, g2_bases if g2 else g1_bases, bits_and_large(rng, n, 0.5), 1)


def test_many_chunks_reuse_the_window_states(cuda_bench, g1_bases, rng):
    """2^14 points in 169 chunks of 97, half of them large: ~25 windows a chunk, so the two
    window states (and the two chunk buffers) are reused thousands of times."""
    assert_streamed_msm(cuda_bench, g1_bases, bits_and_large(rng, 1 << 14, 0.5), 97)


@pytest.mark.parametrize("g2", [False, True], ids=["g1", "g2"])
def test_all_zero_scalars(cuda_bench, g1_bases, g2_bases, g2):
    n = 4096
    got, _, _ = cuda_bench.msm_streamed((g2_bases if g2 else g1_bases).limbs[:n], np.zeros((n, 4), np.uint64), 1000)
    assert not got.any()


@pytest.mark.parametrize(("g2", "n", "chunk"), [(False, 1 << 16, 5000), (True, 1 << 13, 3000)], ids=["g1", "g2"])
def test_all_one_scalars(cuda_bench, g1_bases, g2_bases, g2, n, chunk):
    """Only the sum of ones, accumulated on the device across the chunks (no Pippenger)."""
    assert_streamed_msm(cuda_bench, g2_bases if g2 else g1_bases, ints_to_limbs([1] * n), chunk)


@pytest.mark.parametrize("where", ["spread", "first_chunk", "last_chunk"])
def test_bits_with_a_few_large(cuda_bench, g1_bases, rng, where):
    """2^16 bits, 30 of them replaced by large scalars: spread over the chunks (most chunks have
    none), all in the first chunk (the later ones add nothing to the buckets), or all in the last
    (the buckets are first written by the last chunk)."""
    n, chunk = 1 << 16, 5000
    scalars = bits(rng, n)
    lo, hi = {"spread": (0, n), "first_chunk": (0, chunk), "last_chunk": (n - n % chunk, n)}[where]
    at = rng.choice(np.arange(lo, hi), 30, replace=False)
    scalars[at] = random_fr(rng, 30)
    assert_streamed_msm(cuda_bench, g1_bases, scalars, chunk)


def test_g2_bits_with_a_few_large(cuda_bench, g2_bases, rng):
    assert_streamed_msm(cuda_bench, g2_bases, bits_and_large(rng, 1 << 13, 0.99), 1500)


@pytest.mark.parametrize("g2", [False, True], ids=["g1", "g2"])
def test_one_and_r_minus_one(cuda_bench, g1_bases, g2_bases, rng, g2):
    """Scalars 0, 1 and r - 1: every r - 1 has the same signed digits, so each window sends all
    of them to one bucket, split into items and summed over several chunks."""
    n, chunk = (5000, 1237) if not g2 else (2000, 333)
    scalars = ints_to_limbs([(0, 1, R - 1)[v] for v in rng.integers(0, 3, n)])
    assert_streamed_msm(cuda_bench, g2_bases if g2 else g1_bases, scalars, chunk)


@pytest.mark.parametrize("g2", [False, True], ids=["g1", "g2"])
def test_equal_opposite_and_identity_points_across_chunks(cuda_bench, rng, g2):
    """P, -P and the identity in turn, every scalar the same large value (so every point of a
    window lands in one bucket) or r - 1, in chunks of 7: a bucket filled by one chunk is then
    doubled, cancelled to the identity and added to from the identity by the chunks after it."""
    group = G2Point if g2 else G1Point
    k = int(rng.integers(2, 1 << 62))
    g = group()
    cycle = [(g * fr(k), k), (g * fr(R - k), R - k), (None, 0)]
    n = 600
    points = [cycle[i % 3] for i in range(n)]
    to_limbs = g2_to_limbs if g2 else g1_to_limbs
    limbs = to_limbs([p if p is not None else g for p, _ in points])
    limbs[2::3] = 0  # the identity: (0, 0)
    bases = Bases(group, limbs, [d for _, d in points], k)
    same = limbs_to_ints(random_fr(rng, 1))[0]
    for scalars in (ints_to_limbs([same] * n), ints_to_limbs([same if i % 5 else R - 1 for i in range(n)])):
        assert_streamed_msm(cuda_bench, bases, scalars, 7)
        scalars[1::3] = ints_to_limbs([same] * len(range(1, n, 3)))  # -P's scalars kept, P's dropped below
        scalars[0::3] = 0
        assert_streamed_msm(cuda_bench, bases, scalars, 7)


@pytest.mark.parametrize("window_bits", [16, 20])
def test_window_bits(cuda_bench, g1_bases, rng, window_bits):
    """c = 16 and c = 20 (what a streamed MSM chooses at 2^22 and 2^24 points a chunk: 2^15
    and 2^19 buckets a window)."""
    assert_streamed_msm(cuda_bench, g1_bases, bits_and_large(rng, 1 << 14, 0.3), 5000, window_bits=window_bits)


def test_without_a_cancel_flag(cuda_bench, g1_bases, rng):
    """No cancel flag: the host's waits block instead of polling."""
    assert_streamed_msm(cuda_bench, g1_bases, bits_and_large(rng, 5000, 0.5), 1237, cancel=None)


def test_a_cancelled_msm_leaves_the_context_summing(cuda_bench, g1_bases, rng):
    """Cancelled at its first chunk, with the first copy and classification queued: the error
    comes back, and the next streamed MSM on the same context is right."""
    scalars = bits_and_large(rng, 5000, 0.5)
    with pytest.raises(ProveCancelled, match="cancel"):
        cuda_bench.msm_streamed(g1_bases.limbs[:5000], scalars, 1237, cancel=True)
    assert_streamed_msm(cuda_bench, g1_bases, scalars, 1237)


@pytest.mark.parametrize(("g2", "n", "chunk", "frac_bits"), [
    (False, 1 << 16, 1 << 14, 0.0), (False, 1 << 16, 3001, 0.9), (False, 5000, 10_000, 0.5), (True, 1 << 13, 3000, 0.0),
])
def test_device_memory_stays_within_the_bound(cuda_bench, g1_bases, g2_bases, rng, g2, n, chunk, frac_bits):
    """The pool's high-water mark during the MSM, beyond what was held before it, is at most
    msm_streamed_scratch_bytes (the bound prove.cu and the residency plan count)."""
    bases = g2_bases if g2 else g1_bases
    scalars = bits_and_large(rng, n, frac_bits)
    got, peak, bound = cuda_bench.msm_streamed(bases.limbs[:n], scalars, chunk)
    np.testing.assert_array_equal(got, bases.expected(scalars), err_msg=f"bases seed {bases.seed}")
    assert 0 < peak <= bound, f"peak {peak:,} bytes, bound {bound:,}"
    # The residency planner's copy of the bound gives the library's figure.
    large = int(np.count_nonzero((scalars[:, 1:] != 0).any(axis=1) | (scalars[:, 0] > 1)))
    assert msm_streamed_scratch_bytes(n, large, 192 if g2 else 96, chunk) == bound
