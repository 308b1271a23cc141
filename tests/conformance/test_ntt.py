"""NTT conformance: every size 2^1 .. 2^16, forward / inverse / coset, against the
definition and the cpu backend; round trips are the identity; the quotient H matches."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, random_fr
from tests.conformance.checks import check_ntt, check_ntt_round_trip, check_quotient_h

MODES = {"forward": (False, False), "inverse": (True, False), "coset": (False, True), "coset_inverse": (True, True)}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("log_n", range(1, 17))
def test_ntt_matches_reference(backend, rng, log_n, mode):
    inverse, coset = MODES[mode]
    check_ntt(backend, random_fr(rng, 1 << log_n), inverse=inverse, coset=coset, rng=rng)


@pytest.mark.parametrize("coset", [False, True], ids=["plain", "coset"])
@pytest.mark.parametrize("log_n", [1, 2, 3, 7, 8, 9, 12, 16])
def test_ntt_round_trip_is_identity(backend, rng, log_n, coset):
    check_ntt_round_trip(backend, random_fr(rng, 1 << log_n), coset=coset)


@pytest.mark.parametrize("value", [0, 1, R - 1], ids=["zero", "one", "r_minus_1"])
def test_ntt_constant_vectors(backend, rng, value):
    x = np.tile(ints_to_limbs([value]), (256, 1))
    for mode in MODES.values():
        check_ntt(backend, x, inverse=mode[0], coset=mode[1], rng=rng)


def test_ntt_refuses_sizes_that_are_not_powers_of_two(backend, rng):
    with pytest.raises(ValueError):
        backend.ntt(random_fr(rng, 12))


@pytest.mark.parametrize("m", [1, 2, 5, 64, 1000, 4097])
def test_quotient_h_matches_cpu(backend, rng, m):
    a, b = random_fr(rng, m), random_fr(rng, m)
    check_quotient_h(backend, a, b, random_fr(rng, m))
