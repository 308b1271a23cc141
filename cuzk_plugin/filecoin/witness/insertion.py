"""The Merkle gadgets' insertion of a node among its siblings (insert_8 for arity 8, insert_2
for arity 2), evaluated for all instances at once in the gadgets' pick order: the aux values and
the children. Shared by every kind's witness."""

from __future__ import annotations

import numpy as np

__all__ = ["insert_8", "insert_2"]


def insert_8(x, els, b0, b1, b2):
    """insert_8's aux values in the gadget's order (nor, and, 20 picks) and its 8 outputs."""
    a = x
    b, c, d, e, f, g, h = els
    nor01 = (1 - b0) * (1 - b1)
    and01 = b0 * b1
    aux = [nor01, and01]

    def pick(cond, p, q):
        v = np.where(cond.astype(bool), p, q)
        aux.append(v)
        return v

    p0 = pick(b2, b, pick(nor01, a, b))
    p1 = pick(b2, c, pick(b1, c, pick(b0, a, b)))
    p2 = pick(b2, d, pick(b1, pick(b0, d, a), c))
    p3 = pick(b2, e, pick(and01, a, d))
    p4 = pick(b2, pick(nor01, a, f), e)
    p5 = pick(b2, pick(b1, g, pick(b0, a, f)), f)
    p6 = pick(b2, pick(b1, pick(b0, h, a), g), g)
    p7 = pick(b2, pick(and01, a, h), h)
    return aux, [p0, p1, p2, p3, p4, p5, p6, p7]


def insert_2(x, els, b0):
    aux = [np.where(b0.astype(bool), els[0], x), np.where(b0.astype(bool), x, els[0])]
    return aux, list(aux)
