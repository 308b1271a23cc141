"""The OpenCL field arithmetic of G1 and G2 (fq.cl, fq2.cl over limbs.cl) against Python
integers, at both limb widths: Montgomery products, squarings, a b - c d with one reduction and
the Fq2 product and a b - c d with two, on random values and on the edges where carries run the whole way
(0, 1, p - 1, limbs of all ones). The MSM tests see these only through points on the curve."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk_plugin.backends.registry import probe
from cuzk_plugin.bls12_381.fields import FQ_LIMBS, P, ints_to_limbs, limbs_to_ints

pytestmark = pytest.mark.skipif(probe("opencl") is not None, reason=f"opencl unavailable: {probe('opencl')}")

R_INV = pow(2**384, -1, P)

_KERNELS = """
__kernel void t_fq(__global const fq_t *a, __global const fq_t *b, __global const fq_t *c,
                   __global const fq_t *d, __global fq_t *out) {
    uint i = get_global_id(0);
    out[3 * i] = fq_mul(a[i], b[i]);
    out[3 * i + 1] = fq_sqr(a[i]);
    out[3 * i + 2] = fq_mul_sub(a[i], b[i], c[i], d[i]);
}

__kernel void t_fq2(__global const fq2_t *a, __global const fq2_t *b, __global const fq2_t *c,
                    __global const fq2_t *d, __global fq2_t *out) {
    uint i = get_global_id(0);
    out[3 * i] = fq2_mul(a[i], b[i]);
    out[3 * i + 1] = fq2_sqr(a[i]);
    out[3 * i + 2] = fq2_mul_sub(a[i], b[i], c[i], d[i]);
}
"""


def _values(rng: random.Random, n: int) -> list[int]:
    edges = [0, 1, 2, P - 1, P - 2, (P - 1) // 2, 2**64 - 1, 2**128 - 1, 2**320 - 1, 2**380, 2**380 + 2**379,
             P - 2**64, P - 2**192]
    return (edges * 4 + [rng.randrange(P) for _ in range(n)])[:n]


@pytest.fixture(scope="module", params=[32, 64])
def programs(request):
    import pyopencl as cl

    from cuzk_plugin.backends.opencl.device import build_program, program_source, select_device

    device = select_device()
    context = cl.Context([device])
    source = program_source("g2", request.param) + _KERNELS
    return context, cl.CommandQueue(context), build_program(context, source, f"field test ({request.param}-bit limbs)")


def _run(programs, kernel: str, n: int, inputs: list[list[int]], outputs: int) -> list[int]:
    """``kernel`` over n work items reading ``inputs`` (Fq values, in Montgomery form as the
    kernels take them) and writing ``outputs`` Fq values an item."""
    import pyopencl as cl

    context, queue, program = programs
    flags = cl.mem_flags
    bufs = [cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=ints_to_limbs(x, FQ_LIMBS)) for x in inputs]
    out = np.zeros((n * outputs, FQ_LIMBS), dtype=np.uint64)
    d_out = cl.Buffer(context, flags.WRITE_ONLY, out.nbytes)
    getattr(program, kernel)(queue, (n,), None, *bufs, d_out)
    cl.enqueue_copy(queue, out, d_out)
    return limbs_to_ints(out)


def test_fq_products_and_mul_sub(programs):
    rng = random.Random(7)
    n = 512
    a, b, c, d = (_values(rng, n) for _ in range(4))
    rng.shuffle(b)
    rng.shuffle(d)
    got = _run(programs, "t_fq", n, [a, b, c, d], 3)
    for i in range(n):
        assert got[3 * i] == a[i] * b[i] * R_INV % P, ("mul", a[i], b[i])
        assert got[3 * i + 1] == a[i] * a[i] * R_INV % P, ("sqr", a[i])
        assert got[3 * i + 2] == (a[i] * b[i] - c[i] * d[i]) * R_INV % P, ("mul_sub", a[i], b[i], c[i], d[i])


def _fq2_mul(x: tuple[int, int], y: tuple[int, int]) -> tuple[int, int]:
    """(x0 + x1 u)(y0 + y1 u), u^2 = -1, unreduced."""
    return x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]


def test_fq2_product_square_and_mul_sub(programs):
    rng = random.Random(8)
    n = 512
    a, b, c, d = ([(x, y) for x, y in zip(_values(rng, n), rng.sample(_values(rng, n), n), strict=True)]
                  for _ in range(4))
    for x in (b, c, d):
        rng.shuffle(x)
    got = _run(programs, "t_fq2", n, [[v for pair in x for v in pair] for x in (a, b, c, d)], 6)  # fq2_t = (c0, c1)
    for i in range(n):
        ab, cd = _fq2_mul(a[i], b[i]), _fq2_mul(c[i], d[i])
        want = [*ab, *_fq2_mul(a[i], a[i]), ab[0] - cd[0], ab[1] - cd[1]]
        assert got[6 * i:6 * i + 6] == [v * R_INV % P for v in want], (a[i], b[i], c[i], d[i])
