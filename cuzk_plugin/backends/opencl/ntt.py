"""Device NTTs over Fr and the Groth16 quotient H, driving the kernels of ``ntt.cl``.

All buffers here hold Fr in Montgomery form, ``n * 32`` bytes, natural order. Twiddle and
coset tables are computed on the device once per (size, direction) and kept.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuzk_plugin.backends.opencl.device import import_pyopencl
from cuzk_plugin.backends.opencl.launch import empty, fr_mont_limbs, launch, u32, upload
from cuzk_plugin.bls12_381.fields import FR_GENERATOR, R, root_of_unity

FR_BYTES = 32
#: Radix stages per local-memory pass: 2^K elements (8 KiB) and 2^(K-1) items a work-group.
PASS_STAGES = 8


def log2_exact(n: int) -> int:
    if n <= 0 or n & (n - 1):
        raise ValueError(f"NTT size must be a power of two, got {n}")
    return n.bit_length() - 1


class NttDriver:
    """NTTs on one OpenCL queue (the caller serialises use of the driver)."""

    def __init__(self, context, queue, program):
        self.context, self.queue = context, queue
        self.k = {k.function_name: k for k in program.all_kernels()}
        self._tables: dict[tuple, object] = {}

    # -- tables --------------------------------------------------------------------------
    def _powers(self, base: int, count: int):
        """Device buffer of base^i, i < count (Montgomery form)."""
        bits = max(1, (count - 1).bit_length())
        pow2 = [pow(base, 1 << b, R) for b in range(bits)]
        d_pow2 = upload(self.context, self.queue, fr_mont_limbs(pow2))
        out = empty(self.context, count * FR_BYTES)
        launch(self.queue, self.k["fr_powers"], count, out, d_pow2, u32(count))
        return out

    def _table(self, kind: str, log_n: int):
        """'fwd'/'inv' twiddles (omega^+-i, i < N/2), 'coset' (g^i), 'coset_inv' (g^-i / N)."""
        key = (kind, log_n)
        if key not in self._tables:
            n = 1 << log_n
            omega = root_of_unity(log_n)
            if kind == "fwd":
                table = self._powers(omega, max(n // 2, 1))
            elif kind == "inv":
                table = self._powers(pow(omega, -1, R), max(n // 2, 1))
            elif kind == "coset":
                table = self._powers(FR_GENERATOR, n)
            else:  # (g^-1)^i / N: the inverse coset transform's two scalings in one pass
                table = self._powers(pow(FR_GENERATOR, -1, R), n)
                self.scale(table, n, pow(n, -1, R))
            self._tables[key] = table
        return self._tables[key]

    def scale(self, buf, n: int, factor: int) -> None:
        d_factor = upload(self.context, self.queue, fr_mont_limbs([factor]))
        launch(self.queue, self.k["fr_mul_scalar"], n, buf, d_factor, u32(n))

    # -- transforms ----------------------------------------------------------------------
    def transform(self, src, n: int, *, inverse: bool = False, coset: bool = False):
        """NTT of the n elements in ``src`` (left unchanged); returns a new buffer.

        Forward: X_k = sum_j x_j w^(jk) (coset: x_j g^j first). Inverse: the exact inverse of
        the matching forward transform, 1/N (and g^-j) applied after the stages."""
        log_n = log2_exact(n)
        dst = empty(self.context, n * FR_BYTES)
        pre = self._table("coset", log_n) if coset and not inverse else None
        launch(self.queue, self.k["ntt_bitrev_scale"], n, src, dst, u32(log_n),
               pre if pre is not None else src, u32(pre is not None))
        twiddles = self._table("inv" if inverse else "fwd", log_n)
        s = 0
        while s < log_n:
            k = min(PASS_STAGES, log_n - s)
            items = 1 << (k - 1)
            launch(self.queue, self.k["ntt_dit_pass"], n // 2, dst, twiddles, u32(log_n), u32(s), u32(k),
                   import_pyopencl().LocalMemory((1 << k) * FR_BYTES), local=items)
            s += k
        if inverse and coset:
            launch(self.queue, self.k["fr_mul_pointwise"], n, dst, self._table("coset_inv", log_n), u32(n))
        elif inverse and n > 1:
            self.scale(dst, n, pow(n, -1, R))
        return dst

    def to_mont(self, buf, n: int) -> None:
        launch(self.queue, self.k["fr_to_mont_array"], n, buf, u32(n))

    def from_mont(self, buf, n: int) -> None:
        launch(self.queue, self.k["fr_from_mont_array"], n, buf, u32(n))

    def upload_fr(self, x: np.ndarray, pad_to: int | None = None):
        """Canonical ``(m, 4)`` limbs -> Montgomery device buffer of ``pad_to`` (zero-padded)."""
        m = x.shape[0]
        n = pad_to if pad_to is not None else m
        host = np.zeros((n, 4), dtype=np.uint64)
        host[:m] = x
        buf = upload(self.context, self.queue, host)
        self.to_mont(buf, n)
        return buf

    def quotient_h(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, between: Callable[[], None] | None = None):
        """Filecoin's H on the device: returns (buffer of N canonical Fr, N); H is the first N-1.

        H Z = A B - C, and Z(g w^k) = g^N - 1 is constant on the coset g<w>; coset
        interpolation is linear and C has degree < N, so H = coset_interp(A B / Z) - C / Z:
        A and B are interpolated and evaluated on the coset, C only interpolated (six
        transforms, not the textbook seven)."""
        m = a.shape[0]
        n = 1 << max(0, (m - 1).bit_length())
        return self.quotient_h_device([self.upload_fr(v, n) for v in (a, b, c)], n, between)

    def quotient_h_device(self, bufs: list, n: int, between: Callable[[], None] | None = None):
        """:meth:`quotient_h` from a, b, c already on the device (Montgomery, zero-padded to
        N = ``n``). ``between`` runs after each transform is enqueued (a cancellation check
        that waits for the queue)."""
        step = between or (lambda: None)
        evals = []
        for d in bufs[:2]:
            coeffs = self.transform(d, n, inverse=True)
            step()
            evals.append(self.transform(coeffs, n, coset=True))
            step()
        c_coeffs = self.transform(bufs[2], n, inverse=True)
        step()
        z_inv = pow((pow(FR_GENERATOR, n, R) - 1) % R, -1, R)
        d_z = upload(self.context, self.queue, fr_mont_limbs([z_inv]))
        launch(self.queue, self.k["coset_product"], n, evals[0], evals[1], d_z, u32(n))
        h = self.transform(evals[0], n, inverse=True, coset=True)
        launch(self.queue, self.k["fr_sub_scaled"], n, h, c_coeffs, d_z, u32(n))
        self.from_mont(h, n)
        return h, n
