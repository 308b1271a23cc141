"""The suite catches wrong backends: a backend that is deliberately wrong in one primitive
fails the very check function its conformance test uses. Without this, a check that
compares the wrong things (or nothing) would pass every backend."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.bls12_381.fields import R, random_fr
from tests.conformance.checks import ConformanceError, check_msm, check_ntt, check_proof_bytes, check_quotient_h
from tests.conformance.test_proofs import _instance, _key


class BrokenBackend:
    """Wraps a working backend and breaks one thing on purpose.

    ``msm``: msm_g1 drops the last point (an off-by-one a real kernel could have);
    ``ntt``: ntt swaps two outputs; ``quotient``: quotient_h zeroes the top coefficient."""

    def __init__(self, inner, fault: str):
        self.inner, self.fault = inner, fault
        self.name = f"broken-{fault}"

    def __getattr__(self, attr):
        return getattr(self.inner, attr)

    def msm_g1(self, bases, scalars):
        if self.fault == "msm" and bases.shape[0] > 1:
            return self.inner.msm_g1(bases[:-1], scalars[:-1])
        return self.inner.msm_g1(bases, scalars)

    def ntt(self, x, *, inverse=False, coset=False):
        out = np.array(self.inner.ntt(x, inverse=inverse, coset=coset))
        if self.fault == "ntt" and out.shape[0] > 2:
            out[[1, 2]] = out[[2, 1]]
        return out

    def quotient_h(self, a, b, c):
        out = np.array(self.inner.quotient_h(a, b, c))
        if self.fault == "quotient" and out.shape[0]:
            out[-1] = 0
        return out


@pytest.fixture
def cpu():
    return CpuBackend()


def test_wrong_msm_fails_the_msm_check(cpu, g1_pool, rng):
    points, bases = g1_pool.take(100)
    scalars = random_fr(rng, 100)
    check_msm(cpu, 1, points, bases, scalars)  # the honest backend passes ...
    with pytest.raises(ConformanceError, match=r"vs naive arkworks sum|vs cpu"):
        check_msm(BrokenBackend(cpu, "msm"), 1, points, bases, scalars)  # ... the broken one fails


def test_wrong_msm_fails_the_small_naive_check(cpu, g1_pool, rng):
    points, bases = g1_pool.take(10)
    with pytest.raises(ConformanceError, match="vs naive arkworks sum"):
        check_msm(BrokenBackend(cpu, "msm"), 1, points, bases, random_fr(rng, 10))


def test_wrong_ntt_fails_the_ntt_check(cpu, rng):
    x = random_fr(rng, 64)
    check_ntt(cpu, x, inverse=False, coset=False, rng=rng)
    with pytest.raises(ConformanceError, match="coefficient 1"):
        check_ntt(BrokenBackend(cpu, "ntt"), x, inverse=False, coset=False, rng=rng)


def test_wrong_quotient_fails_the_quotient_check(cpu, rng):
    a, b, c = (random_fr(rng, 100) for _ in range(3))
    with pytest.raises(ConformanceError, match="quotient_h"):
        check_quotient_h(BrokenBackend(cpu, "quotient"), a, b, c)


def test_wrong_msm_fails_the_proof_bytes_check(cpu, seed):
    """A wrong MSM inside proving changes the proof bytes, which the proof check catches."""

    class WrongSums(BrokenBackend):
        def prove_finish(self, pending):
            sums = self.inner.prove_finish(pending)
            return type(sums)(**{**sums.__dict__, "l": sums.h})  # L replaced by H

    part, _ = _instance("filecoin_like_64", seed)
    rnd = random.Random(seed)
    with pytest.raises(ConformanceError, match=r"bytes differ from cpu's from offset \d+ \(in C\)"):
        check_proof_bytes(WrongSums(cpu, "sums"), _key("filecoin_like_64"), part, rnd.randrange(R), rnd.randrange(R))
