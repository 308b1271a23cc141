"""Key generation's arithmetic on the host (backends/cpu/multiples.py, keygen.batch_inverse):
window digits that add back up to the scalar, fixed-base multiples whose bytes are arkworks' own
k * G (identity flagged, G2 in Filecoin's c1-first order), worker processes giving the same bytes
as the in-process path, and one-inversion batch inverses equal to pow(x, -1, r)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_plugin.backends.cpu import multiples
from cuzk_plugin.backends.cpu.keygen import batch_inverse
from cuzk_plugin.backends.cpu.multiples import raw_multiples, window_digits
from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs
from cuzk_plugin.bls12_381.points import FLAG_INFINITY

EDGES = [0, 1, 2, R - 1, R - 2, (1 << 64) - 1, 1 << 64, (1 << 16) - 1, 1 << 16, (1 << 254) + 12345]


def scalars(rng: random.Random, n: int) -> list[int]:
    return EDGES + [rng.randrange(R) for _ in range(n)]


@pytest.mark.parametrize("c", [2, 3, 8, 13, 16, 17, 18])
def test_window_digits_add_up_to_the_scalar(c):
    ks = scalars(random.Random(c), 200)
    digits = window_digits(ints_to_limbs(ks, FR_LIMBS), c)
    assert digits.shape == (len(ks), -(-255 // c))
    assert digits.min() >= 0 and digits.max() < 1 << c
    assert [sum(int(d) << (c * w) for w, d in enumerate(row)) for row in digits] == ks


def arkworks_raw(point, k: int) -> bytes:
    """Filecoin's uncompressed bytes of k * G by arkworks' scalar multiplication (the oracle)."""
    raw = (point() * Scalar(k)).to_xy_bytes_be()
    if not any(raw):
        return bytes([FLAG_INFINITY]) + raw[1:]
    if point is G2Point:  # arkworks writes x.c0, x.c1, y.c0, y.c1; Filecoin c1 first
        raw = raw[48:96] + raw[:48] + raw[144:] + raw[96:144]
    return raw


def test_multiples_are_arkworks_scalar_multiplications():
    ks = scalars(random.Random(1), 30)
    limbs = ints_to_limbs(ks, FR_LIMBS)
    g1, g2 = raw_multiples([("g1", limbs), ("g2", limbs)], workers=0)
    assert g1.shape == (len(ks), 96) and g2.shape == (len(ks), 192)
    assert [bytes(r) for r in g1] == [arkworks_raw(G1Point, k) for k in ks]
    assert [bytes(r) for r in g2] == [arkworks_raw(G2Point, k) for k in ks]
    assert g1[0, 0] == FLAG_INFINITY and not g1[0, 1:].any()  # 0 * G is the flagged identity


def test_worker_processes_give_the_in_process_bytes(monkeypatch):
    """Pieces of 64 points over two spawned workers, G2 pieces first, reassembled in order."""
    monkeypatch.setattr(multiples, "PIECE", 64)
    rng = random.Random(2)
    vectors = [("g1", ints_to_limbs(scalars(rng, 300), FR_LIMBS)), ("g2", ints_to_limbs(scalars(rng, 100), FR_LIMBS)),
               ("g1", np.zeros((0, FR_LIMBS), dtype=np.uint64)), ("g1", ints_to_limbs(scalars(rng, 5), FR_LIMBS))]
    pooled = raw_multiples(vectors, workers=2)
    serial = raw_multiples(vectors, workers=0)
    assert [p.shape for p in pooled] == [(310, 96), (110, 192), (0, 96), (15, 96)]
    for got, want in zip(pooled, serial, strict=True):
        np.testing.assert_array_equal(got, want)


def test_pool_only_for_large_keys_outside_daemonic_processes():
    assert multiples.pool_size(multiples.POOL_MIN_POINTS - 1) == 0
    assert multiples.pool_size(1 << 22) in (0, *range(2, 1 << 10))  # 0 only on a one-core machine


def test_bad_vectors_are_refused_naming_them():
    with pytest.raises(ValueError, match="group: expected one of"):
        raw_multiples([("g3", np.zeros((1, 4), dtype=np.uint64))], workers=0)
    with pytest.raises(ValueError, match=r"g2 scalars: expected \(n, 4\)"):
        raw_multiples([("g2", np.zeros((1, 3), dtype=np.uint64))], workers=0)


@pytest.mark.parametrize("n", [0, 1, 2, 1000])
def test_batch_inverse_is_pow_minus_one(n):
    rng = random.Random(n)
    xs = [rng.randrange(1, R) for _ in range(n)]
    arr = np.empty(n, dtype=object)
    arr[:] = xs
    got = batch_inverse(arr)
    assert got.shape == (n,) and [int(v) for v in got] == [pow(x, -1, R) for x in xs]
