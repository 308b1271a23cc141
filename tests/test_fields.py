"""Field constants and limb conversions."""

import numpy as np

from cuzk_plugin.bls12_381.fields import (
    FR_ROOT_OF_UNITY,
    P,
    R,
    ints_to_limbs,
    less_than_modulus,
    limbs_to_ints,
    random_fr,
    root_of_unity,
)


def test_constants_are_the_published_ones():
    assert P.bit_length() == 381 and R.bit_length() == 255
    assert pow(FR_ROOT_OF_UNITY, 1 << 32, R) == 1
    assert pow(FR_ROOT_OF_UNITY, 1 << 31, R) == R - 1  # primitive
    w = root_of_unity(10)
    assert pow(w, 1 << 10, R) == 1 and pow(w, 1 << 9, R) != 1


def test_limbs_round_trip(rng):
    values = [int(x) for x in rng.integers(0, 2**63, size=50)] + [0, 1, R - 1, P - 1, 2**381]
    assert limbs_to_ints(ints_to_limbs(values, 6)) == values
    fr = random_fr(rng, 1000)
    ints = limbs_to_ints(fr)
    assert all(0 <= v < R for v in ints)
    assert len(set(ints)) == 1000
    assert (ints_to_limbs(ints) == fr).all()


def test_less_than_modulus_matches_python(rng):
    near = [R - 1, R, R + 1, 0, 2**255, R - 2**64, R + 2**192]
    arr = ints_to_limbs(near + limbs_to_ints(rng.integers(0, 2**64, size=(100, 4), dtype=np.uint64)))
    assert less_than_modulus(arr, R).tolist() == [v < R for v in limbs_to_ints(arr)]
