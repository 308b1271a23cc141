"""A large partition and a key of its shape, made in seconds, for tests that need a backend
busy for a long time (cancellation): every key vector repeats one valid point of a small real
key, and a, b, c and the assignment are random. Its sums mean nothing; the work is real."""

from __future__ import annotations

import numpy as np

from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.formats.params import ProvingKey
from cuzk_plugin.formats.partition import SynthesizedPartition
from cuzk_plugin.groth16.setup import setup

_IDENTITY_FLAG = 0x40  # uncompressed encoding: the point at infinity


def small_key() -> ProvingKey:
    shape, _, _ = filecoin_like(1 << 4, seed=0).finish()
    return setup(shape)


def _first_point(raw: np.ndarray) -> np.ndarray:
    row = next(r for r in raw if not r[0] & _IDENTITY_FLAG)
    return row[None, :]


def repeated_key(log2: int, base: ProvingKey | None = None) -> ProvingKey:
    """A key for :func:`random_partition` (2^log2 constraints, as many aux variables, one
    input, every variable dense in A and B), each vector one point of ``base`` repeated."""
    base = base or small_key()
    n = 1 << log2
    g1, g2 = _first_point(base.h), _first_point(base.b_g2)
    return ProvingKey(vk=base.vk, h=np.tile(g1, (n - 1, 1)), l=np.tile(g1, (n, 1)), a=np.tile(g1, (n + 1, 1)),
                      b_g1=np.tile(g1, (n + 1, 1)), b_g2=np.tile(g2, (n + 1, 1)))


def random_fr_limbs(rng: np.random.Generator, n: int) -> np.ndarray:
    """``(n, 4)`` uint64 canonical Fr (top limb below r's, so every value is < r)."""
    x = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    x[:, 3] &= np.uint64(0x3FFF_FFFF_FFFF_FFFF)
    return x


def random_partition(log2: int, rng: np.random.Generator) -> SynthesizedPartition:
    n = 1 << log2
    one = np.zeros((1, 4), dtype=np.uint64)
    one[0, 0] = 1
    return SynthesizedPartition(
        a=random_fr_limbs(rng, n), b=random_fr_limbs(rng, n), c=random_fr_limbs(rng, n), input_assignment=one,
        aux_assignment=random_fr_limbs(rng, n), a_aux_density=np.ones(n, dtype=bool),
        b_input_density=np.ones(1, dtype=bool), b_aux_density=np.ones(n, dtype=bool),
    )
