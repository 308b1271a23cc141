"""a, b, c of a pre-compiled circuit on the device, driving ``r1cs.cl``.

:meth:`R1csDriver.load` uploads the matrices and the coefficient table once
(:class:`OpenclCircuit`, resident until released); :meth:`R1csDriver.evaluate` uploads z and
runs one launch per matrix, writing either canonical rows (``evaluate_r1cs``) or Montgomery
rows zero-padded to the NTT domain, which the quotient H takes without leaving the device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from cuzk_plugin.backends.opencl.launch import empty, fr_mont_limbs, launch, u32, upload
from cuzk_plugin.bls12_381.fields import FR_LIMBS, limbs_to_ints
from cuzk_plugin.formats.pce import PrecompiledCircuit

if TYPE_CHECKING:
    from pyopencl import Buffer  # imported lazily at run time: pyopencl is optional

FR_BYTES = 32


@dataclass
class OpenclCircuit:
    """A pre-compiled circuit's matrices and coefficient tables in device memory."""

    circuit: PrecompiledCircuit
    #: per matrix: (row_ptr, cols, coeff_idx) buffers
    matrices: list
    coeffs_plain: Buffer
    coeffs_mont: Buffer
    nbytes: int
    released: bool = field(default=False)

    def release(self) -> None:
        for bufs in self.matrices:
            for b in bufs:
                b.release()
        for b in (self.coeffs_plain, self.coeffs_mont):
            b.release()
        self.matrices = []
        self.released = True


class R1csDriver:
    """Sparse matrix-vector products over Fr on one OpenCL queue (the caller serialises use)."""

    def __init__(self, context, queue, program):
        self.context, self.queue = context, queue
        self.kernel = program.r1cs_spmv

    def load(self, pce: PrecompiledCircuit) -> OpenclCircuit:
        if pce.num_constraints >= 1 << 32:
            raise ValueError(f"circuit {pce.name}: {pce.num_constraints} rows do not fit the kernel's 32-bit row index")
        coeffs = np.ascontiguousarray(pce.coeffs, dtype=np.uint64).reshape(-1, FR_LIMBS)
        if coeffs.shape[0] == 0:
            coeffs = np.zeros((1, FR_LIMBS), np.uint64)  # no terms at all: a placeholder entry
        plain = upload(self.context, self.queue, coeffs)
        mont = upload(self.context, self.queue, fr_mont_limbs(limbs_to_ints(coeffs)))
        matrices, nbytes = [], 2 * coeffs.nbytes
        try:
            for mat in (pce.a, pce.b, pce.c):
                bufs = tuple(upload(self.context, self.queue, np.ascontiguousarray(arr))
                             for arr in (mat.row_ptr, mat.cols, mat.coeff_idx))
                matrices.append(bufs)
                nbytes += mat.nbytes
        except Exception:
            for bufs in matrices:
                for b in bufs:
                    b.release()
            plain.release()
            mont.release()
            raise
        return OpenclCircuit(pce, matrices, plain, mont, nbytes)

    def upload_z(self, circuit: OpenclCircuit, z: np.ndarray):
        pce = circuit.circuit
        if z.dtype != np.uint64 or z.ndim != 2 or z.shape != (pce.num_vars, FR_LIMBS):
            raise ValueError(f"z: expected ({pce.num_vars}, 4) uint64 (inputs then aux), got {z.dtype} {z.shape}")
        return upload(self.context, self.queue, z)

    def evaluate(self, circuit: OpenclCircuit, d_z, *, pad_to: int | None = None, to_mont: bool = False) -> list:
        """Three device buffers (A z, B z, C z): ``num_constraints`` rows, or ``pad_to`` with the
        rows past the circuit zero."""
        if circuit.released:
            raise ValueError("evaluate_r1cs: the circuit handle has been released")
        m = circuit.circuit.num_constraints
        n = m if pad_to is None else pad_to
        outs = []
        for row_ptr, cols, cidx in circuit.matrices:
            out = empty(self.context, n * FR_BYTES)
            if n > m:
                _fill_zero(self.queue, out, m * FR_BYTES, (n - m) * FR_BYTES)
            if m:
                launch(self.queue, self.kernel, m, row_ptr, cols, cidx, circuit.coeffs_plain, circuit.coeffs_mont,
                       d_z, out, u32(m), u32(int(to_mont)))
            outs.append(out)
        return outs


def _fill_zero(queue, buf, offset: int, nbytes: int) -> None:
    from cuzk_plugin.backends.opencl.device import import_pyopencl

    cl = import_pyopencl()
    cl.enqueue_fill_buffer(queue, buf, np.uint8(0), offset, nbytes)
