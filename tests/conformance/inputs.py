"""Scalar vectors for MSM tests: the edge cases the conformance suite covers by name."""

from __future__ import annotations

import numpy as np

from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, random_fr

SCALAR_KINDS = ("zero", "one", "r_minus_1", "equal", "bits", "random")


def make_scalars(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``(n, 4)`` canonical Fr limbs of the named kind.

    zero / one / r_minus_1: every scalar that value; equal: one random value repeated (all
    points land in the same bucket of every window); bits: random 0/1 (Filecoin witnesses);
    random: uniform in Fr."""
    if kind == "zero":
        return np.zeros((n, 4), dtype=np.uint64)
    if kind == "one":
        return np.tile(ints_to_limbs([1]), (n, 1))
    if kind == "r_minus_1":
        return np.tile(ints_to_limbs([R - 1]), (n, 1))
    if kind == "equal":
        return np.tile(random_fr(rng, 1), (n, 1))
    if kind == "bits":
        out = np.zeros((n, 4), dtype=np.uint64)
        out[:, 0] = rng.integers(0, 2, n, dtype=np.uint64)
        return out
    if kind == "random":
        return random_fr(rng, n)
    raise ValueError(f"unknown scalar kind {kind!r} (known: {', '.join(SCALAR_KINDS)})")
