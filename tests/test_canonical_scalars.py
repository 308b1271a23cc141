"""The CUDA backend's scalar check (pure numpy, no GPU): values at or above r are reduced, the
top-limb fast path returns reduced arrays as they are, and every other value is unchanged."""

from __future__ import annotations

import numpy as np

from cuzk_plugin.backends.cuda.backend import canonical_scalars
from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, limbs_to_ints


def test_values_at_or_above_r_are_reduced_and_the_rest_kept():
    top = (R >> 192) << 192
    vals = [0, 1, R - 1, R, R + 5, 2**256 - 1, top, top - 1, 12345]
    got = canonical_scalars(ints_to_limbs(vals))
    assert [int(x) for x in limbs_to_ints(got)] == [v % R for v in vals]


def test_an_array_below_r_is_returned_without_a_copy():
    rng = np.random.default_rng(3)
    arr = rng.integers(0, 2**63, size=(1000, 4), dtype=np.uint64)
    arr[:, 3] &= np.uint64(0x0FFF_FFFF_FFFF_FFFF)  # top limb below r's
    assert canonical_scalars(arr) is arr
