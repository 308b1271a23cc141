"""Number-theoretic transforms over Fr on the CPU, vectorised with numpy object arrays.

Each radix-2 stage is one numpy expression over all butterflies (no per-element Python loop);
elements are Python ints so the modular arithmetic is exact. Reference speed, not fast path.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_GENERATOR, R, root_of_unity


def powers(base: int, n: int) -> np.ndarray:
    """[1, base, base^2, ..., base^(n-1)] mod r as an object array, built by doubling."""
    out = np.empty(n, dtype=object)
    if n == 0:
        return out
    out[0] = 1
    k, step = 1, base % R
    while k < n:
        take = min(k, n - k)
        out[k : k + take] = (out[:take] * step) % R
        k += take
        step = step * step % R
    return out


def _bit_reverse_indices(log_n: int) -> np.ndarray:
    idx = np.arange(1 << log_n, dtype=np.int64)
    rev = np.zeros_like(idx)
    for bit in range(log_n):
        rev |= ((idx >> bit) & 1) << (log_n - 1 - bit)
    return rev


def _log2_exact(n: int) -> int:
    if n <= 0 or n & (n - 1):
        raise ValueError(f"NTT size must be a power of two, got {n}")
    return n.bit_length() - 1


def ntt_objects(x: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
    """NTT of an object array of Fr ints, natural order in and out (see Backend.ntt)."""
    n = x.shape[0]
    log_n = _log2_exact(n)
    omega = root_of_unity(log_n)
    if inverse:
        omega = pow(omega, R - 2, R)
    if coset and not inverse:
        x = (x * powers(FR_GENERATOR, n)) % R
    data = x[_bit_reverse_indices(log_n)]
    spare = np.empty(n, dtype=object)
    tw_all = powers(omega, max(n // 2, 1))
    half = 1
    while half < n:
        # Cooley-Tukey DIT stage: blocks of 2*half, twiddle w_{2half}^j = omega^(j * n / (2 half)).
        # Sums and differences are left unreduced (Python ints grow by one bit a stage); only
        # the products are reduced, and everything once at the end.
        blocks = data.reshape(-1, 2, half)
        tw = tw_all[:: n // (2 * half)][:half]
        u = blocks[:, 0, :]
        v = (blocks[:, 1, :] * tw) % R
        out = spare.reshape(-1, 2, half)
        np.add(u, v, out=out[:, 0, :])
        np.subtract(u, v, out=out[:, 1, :])
        data, spare = spare, data
        half *= 2
    data = data % R
    if inverse:
        n_inv = pow(n, R - 2, R)
        data = (data * n_inv) % R
        if coset:
            data = (data * powers(pow(FR_GENERATOR, R - 2, R), n)) % R
    return data


def quotient_h_objects(a: np.ndarray, b: np.ndarray, c: np.ndarray,
                       between: Callable[[], None] | None = None) -> np.ndarray:
    """Filecoin/bellperson H: coefficients of (A*B - C) / Z over the domain, N - 1 of them.

    A, B, C are interpolated from their evaluations on the size-N domain, evaluated on the
    coset 7*<w>, where Z(7 w^k) = 7^N - 1 is constant, so the division is one scalar multiply.
    ``between`` runs before each of the seven transforms (a cancellation check may raise there).
    """
    step = between or (lambda: None)
    m = a.shape[0]
    n = 1 << max(0, (m - 1).bit_length())
    evals = []
    for v in (a, b, c):
        padded = np.zeros(n, dtype=object)
        padded[:m] = v
        step()
        coeffs = ntt_objects(padded, inverse=True)
        step()
        evals.append(ntt_objects(coeffs, coset=True))
    z_inv = pow((pow(FR_GENERATOR, n, R) - 1) % R, R - 2, R)
    quotient = ((evals[0] * evals[1] - evals[2]) * z_inv) % R
    step()
    h = ntt_objects(quotient, inverse=True, coset=True)
    return h[: n - 1]
