"""Random curve points for MSM tests, made with py-arkworks-bls12381 (independent of any
backend under test) and grown lazily: a pool of 2^16 G1 points costs about a second."""

from __future__ import annotations

import random

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.bls12_381.points import g1_to_limbs, g2_to_limbs

_SIDE = 256


class PointPool:
    """Distinct pseudo-random subgroup points A[i % 256] + B[i // 256] (no scalar
    multiplication per point), as arkworks objects and as limb arrays."""

    def __init__(self, group: int, seed: int):
        self.group = group
        self.cls = G1Point if group == 1 else G2Point
        rnd = random.Random(seed)
        self._a = [self.cls() * Scalar(rnd.randrange(1, R)) for _ in range(_SIDE)]
        self._b = [self.cls() * Scalar(rnd.randrange(1, R)) for _ in range(_SIDE)]
        self.points: list = []
        self._limbs = np.zeros((0, *self.point_shape), dtype=np.uint64)

    @property
    def point_shape(self) -> tuple:
        return (2, 6) if self.group == 1 else (2, 2, 6)

    def to_limbs(self, points: list) -> np.ndarray:
        if not points:
            return np.zeros((0, *self.point_shape), dtype=np.uint64)
        return (g1_to_limbs if self.group == 1 else g2_to_limbs)(points).reshape((-1, *self.point_shape))

    def take(self, n: int) -> tuple[list, np.ndarray]:
        """The first n pool points: (arkworks points, limbs)."""
        if n > _SIDE * _SIDE:
            raise ValueError(f"pool holds at most {_SIDE * _SIDE} points")
        if len(self.points) < n:
            new = [self._a[i % _SIDE] + self._b[i // _SIDE] for i in range(len(self.points), n)]
            self.points += new
            self._limbs = np.concatenate([self._limbs, self.to_limbs(new)])
        return self.points[:n], self._limbs[:n]

    def identity(self):
        return self.cls.identity()
