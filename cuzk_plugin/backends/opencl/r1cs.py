"""a, b, c of a pre-compiled circuit on the device, driving ``r1cs.cl``.

:meth:`R1csDriver.load` uploads the coefficient tables once and the matrices in one compact form,
cut into chunks of ``chunk_rows`` rows: per chunk its rows + 1 row pointers as uint32 offsets
from the chunk's first term, uint32 columns, and coefficient indices of
:func:`streamed_coeff_index_bytes` (uint16 for a table of at most 2^16 entries). Resident, every
chunk is on the device at once, uploaded at load (:func:`resident_circuit_device_bytes`); for a
device too small to hold them beside the key, streamed, only two chunk buffers are
(:func:`streamed_circuit_device_bytes`), and each evaluation copies the host matrices through
them a chunk at a time. Either way it is an :class:`OpenclCircuit`, on the device until released.
:meth:`R1csDriver.evaluate` uploads z and runs the row kernel per chunk and matrix, writing
either canonical rows (``evaluate_r1cs``) or Montgomery rows zero-padded to the NTT domain, which
the quotient H takes without leaving the device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from cuzk_plugin.backends.opencl.device import import_pyopencl
from cuzk_plugin.backends.opencl.launch import empty, fr_mont_limbs, launch, u32, upload
from cuzk_plugin.backends.protocol import (
    CIRCUIT_CHUNK_ROWS,
    most_chunk_terms,
    resident_circuit_device_bytes,
    streamed_circuit_device_bytes,
    streamed_coeff_index_bytes,
)
from cuzk_plugin.bls12_381.fields import FR_LIMBS, limbs_to_ints
from cuzk_plugin.formats.pce import PrecompiledCircuit

if TYPE_CHECKING:
    from pyopencl import Buffer  # imported lazily at run time: pyopencl is optional

FR_BYTES = 32


@dataclass
class ChunkBuffers:
    """One of a streamed circuit's two chunk buffers: per matrix, device buffers for a chunk's
    row offsets, columns and coefficient indices; ``readers``, the kernels that last read
    them, which a copy into them waits for; ``staged`` and ``copies``, the host arrays of the
    last copies into them and those copies' events: the copies do not block, so the arrays
    are held until the copies are known to have finished (:meth:`settle`)."""

    matrices: list
    readers: list = field(default_factory=list)
    staged: list = field(default_factory=list)
    copies: list = field(default_factory=list)

    def settle(self) -> None:
        """Wait for the last copies into these buffers, then let their host arrays go."""
        if self.copies:
            import_pyopencl().wait_for_events(self.copies)
        self.staged, self.copies = [], []

    def release(self) -> None:
        self.settle()
        for bufs in self.matrices:
            for b in bufs:
                b.release()
        self.matrices, self.readers = [], []


@dataclass
class OpenclCircuit:
    """A pre-compiled circuit on the device: its coefficient tables and either its matrices in
    the compact chunked form, every chunk at once (resident), or two chunk buffers its host
    matrices stream through (``streamed``)."""

    circuit: PrecompiledCircuit
    #: resident: per matrix (row_off, cols, coeff_idx) buffers, every chunk's (row_off holds
    #: chunk i, rows r0 .. r1, at entries r0 + i .. r1 + i); streamed: none
    matrices: list
    coeffs_plain: Buffer
    coeffs_mont: Buffer
    nbytes: int
    streamed: bool = False
    #: Host bytes of the streamed matrices (the circuit's own arrays, read in place); 0 resident.
    host_bytes: int = 0
    #: Rows a chunk holds (the last may hold fewer).
    chunk_rows: int = 0
    #: Bytes of a chunk's coefficient index (2 or 4, see streamed_coeff_index_bytes).
    coeff_index_bytes: int = 0
    #: resident: per matrix, each chunk's first term (row_ptr at its first row; the matrix's
    #: terms last: nchunks + 1 of them, uint64); streamed: none
    chunk_term0: list = field(default_factory=list)
    chunks: list[ChunkBuffers] = field(default_factory=list)
    released: bool = field(default=False)

    def release(self) -> None:
        for bufs in self.matrices:
            for b in bufs:
                b.release()
        for chunk in self.chunks:
            chunk.release()
        for b in (self.coeffs_plain, self.coeffs_mont):
            b.release()
        self.matrices, self.chunks, self.chunk_term0 = [], [], []
        self.released = True


class R1csDriver:
    """Sparse matrix-vector products over Fr on one OpenCL queue (the caller serialises use); a
    streamed circuit's chunks are copied on a second queue of the same device."""

    def __init__(self, context, queue, program):
        self.context, self.queue = context, queue
        self.copy_queue = import_pyopencl().CommandQueue(context, queue.device)
        #: The compact chunk form's kernels, by the bytes of a coefficient index.
        self.chunk_kernels = {2: program.r1cs_spmv_chunk_u16, 4: program.r1cs_spmv_chunk_u32}

    def load(self, pce: PrecompiledCircuit, *, streamed: bool = False,
             chunk_rows: int = CIRCUIT_CHUNK_ROWS) -> OpenclCircuit:
        if pce.num_constraints >= 1 << 32:
            raise ValueError(f"circuit {pce.name}: {pce.num_constraints} rows do not fit the kernel's 32-bit row index")
        if chunk_rows < 1:
            raise ValueError(f"load_circuit: chunk_rows must be at least 1, got {chunk_rows}")
        coeffs = np.ascontiguousarray(pce.coeffs, dtype=np.uint64).reshape(-1, FR_LIMBS)
        if coeffs.shape[0] == 0:
            coeffs = np.zeros((1, FR_LIMBS), np.uint64)  # no terms at all: a placeholder entry
        made = [upload(self.context, self.queue, coeffs)]
        try:
            made.append(upload(self.context, self.queue, fr_mont_limbs(limbs_to_ints(coeffs))))
            if streamed:
                return self._streamed(pce, chunk_rows, made)
            return self._resident(pce, chunk_rows, made)
        except BaseException:
            for b in made:
                b.release()
            raise

    def _resident(self, pce: PrecompiledCircuit, chunk_rows: int, made: list) -> OpenclCircuit:
        """The circuit with its matrices on the device in the compact form, every chunk of
        ``chunk_rows`` rows at once, as :func:`resident_circuit_device_bytes` counts them (the
        buffers appended to ``made`` as uploaded, for the caller to release on a failure)."""
        m = pce.num_constraints
        rows = max(1, min(chunk_rows, m))
        mats = (pce.a, pce.b, pce.c)
        _check_chunk_terms(pce, rows, max(most_chunk_terms(mat, m, rows) for mat in mats))
        index_bytes = streamed_coeff_index_bytes(pce)
        index_type = np.uint16 if index_bytes == 2 else np.uint32
        firsts = np.append(np.arange(0, m, rows, dtype=np.int64), np.int64(m))  # each chunk's first row, m last
        matrices, chunk_term0 = [], []
        for mat in mats:
            term0 = np.asarray(mat.row_ptr[firsts], dtype=np.uint64)
            row_off = np.empty(m + firsts.size - 1, np.uint32)
            for i, (r0, r1) in enumerate(zip(firsts[:-1].tolist(), firsts[1:].tolist(), strict=True)):
                row_off[r0 + i:r1 + i + 1] = np.asarray(mat.row_ptr[r0:r1 + 1], dtype=np.uint64) - term0[i]
            parts = (row_off, np.asarray(mat.cols, dtype=np.uint32), np.asarray(mat.coeff_idx, dtype=index_type))
            bufs = []
            for part in parts:
                bufs.append(upload(self.context, self.queue, part))
                made.append(bufs[-1])
            matrices.append(tuple(bufs))
            chunk_term0.append(term0)
        # The protocol's figure, which the engine budgets with: what is uploaded here, plus a
        # kind byte per coefficient and the densities, which OpenCL does not hold on the device.
        nbytes = resident_circuit_device_bytes(pce, rows)
        return OpenclCircuit(pce, matrices, made[0], made[1], nbytes, chunk_rows=rows,
                             coeff_index_bytes=index_bytes, chunk_term0=chunk_term0)

    def _streamed(self, pce: PrecompiledCircuit, chunk_rows: int, made: list) -> OpenclCircuit:
        """The circuit with two chunk buffers for its host matrices, sized as
        :func:`streamed_circuit_device_bytes` counts them (appended to ``made`` as allocated,
        for the caller to release on a failure)."""
        m = pce.num_constraints
        rows = max(1, min(chunk_rows, m))
        mats = (pce.a, pce.b, pce.c)
        terms = [most_chunk_terms(mat, m, rows) for mat in mats]
        _check_chunk_terms(pce, rows, max(terms))
        index_bytes = streamed_coeff_index_bytes(pce)
        chunks = []
        for _ in range(2):
            matrices = []
            for t in terms:
                bufs = (empty(self.context, (rows + 1) * 4), empty(self.context, t * 4),
                        empty(self.context, t * index_bytes))
                made.extend(bufs)
                matrices.append(bufs)
            chunks.append(ChunkBuffers(matrices))
        # The protocol's figure, which the engine budgets with: what is allocated here, plus a
        # kind byte per coefficient and the densities, which OpenCL does not hold on the device
        # (the kernel tests z for 0 and 1 itself; the densities are read on the host).
        nbytes = streamed_circuit_device_bytes(pce, rows)
        return OpenclCircuit(pce, [], made[0], made[1], nbytes, streamed=True,
                             host_bytes=sum(mat.nbytes for mat in mats), chunk_rows=rows,
                             coeff_index_bytes=index_bytes, chunks=chunks)

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
        outs = [empty(self.context, n * FR_BYTES) for _ in range(3)]
        if n > m:
            for out in outs:
                _fill_zero(self.queue, out, m * FR_BYTES, (n - m) * FR_BYTES)
        if m and circuit.streamed:
            self._stream_rows(circuit, d_z, outs, to_mont)
        elif m:
            self._resident_rows(circuit, d_z, outs, to_mont)
        return outs

    def _resident_rows(self, circuit: OpenclCircuit, d_z, outs: list, to_mont: bool) -> None:
        """The rows chunk by chunk, each chunk read in place in the resident arrays: its row
        offsets from entry r0 + i of row_off, its terms from its first term."""
        m, rows = circuit.circuit.num_constraints, circuit.chunk_rows
        kernel = self.chunk_kernels[circuit.coeff_index_bytes]
        for i, r0 in enumerate(range(0, m, rows)):
            r1 = min(m, r0 + rows)
            for (row_off, cols, cidx), term0, out in zip(circuit.matrices, circuit.chunk_term0, outs, strict=True):
                launch(self.queue, kernel, r1 - r0, row_off, cols, cidx, circuit.coeffs_plain, circuit.coeffs_mont,
                       d_z, out, u32(r1 - r0), u32(int(to_mont)), u32(r0), np.uint64(r0 + i), np.uint64(term0[i]))

    def _stream_rows(self, circuit: OpenclCircuit, d_z, outs: list, to_mont: bool) -> None:
        """The rows chunk by chunk, through the two chunk buffers in turn: chunk i + 1's copies
        are enqueued (on the copy queue, after the kernels that last read its buffer) before
        chunk i's kernels, which wait for chunk i's copies, so the device copies one chunk
        while it evaluates the other."""
        m, rows = circuit.circuit.num_constraints, circuit.chunk_rows
        kernel = self.chunk_kernels[circuit.coeff_index_bytes]
        copied = self._copy_chunk(circuit, 0)
        for i, r0 in enumerate(range(0, m, rows)):
            r1 = min(m, r0 + rows)
            following = self._copy_chunk(circuit, i + 1) if r1 < m else []
            chunk = circuit.chunks[i % 2]
            chunk.readers = [
                launch(self.queue, kernel, r1 - r0, offsets, cols, cidx, circuit.coeffs_plain,
                       circuit.coeffs_mont, d_z, out, u32(r1 - r0), u32(int(to_mont)), u32(r0),
                       np.uint64(0), np.uint64(0), wait_for=copied or None)
                for (offsets, cols, cidx), out in zip(chunk.matrices, outs, strict=True)]
            self.queue.flush()  # the next copies into this buffer wait for these kernels
            copied = following

    def _copy_chunk(self, circuit: OpenclCircuit, i: int) -> list:
        """Enqueue, without waiting, the copies of chunk ``i``'s rows into its chunk buffer in
        the compact form (row offsets from the chunk's first term, uint32; columns; coefficient
        indices of the circuit's width); their events. The host arrays the copies read are
        held on the chunk buffer until the next copy into it has waited for them."""
        cl = import_pyopencl()
        pce = circuit.circuit
        r0 = i * circuit.chunk_rows
        r1 = min(pce.num_constraints, r0 + circuit.chunk_rows)
        chunk = circuit.chunks[i % 2]
        # The copies before these into the same buffers were waited for by the kernels in
        # chunk.readers, which the new copies wait for on the device; the host waits for them
        # too before dropping the arrays they read (they are normally done: the other buffer's
        # copies were queued after them).
        chunk.settle()
        index_type = np.uint16 if circuit.coeff_index_bytes == 2 else np.uint32
        for mat, bufs in zip((pce.a, pce.b, pce.c), chunk.matrices, strict=True):
            row_ptr = np.asarray(mat.row_ptr[r0:r1 + 1], dtype=np.uint64)
            lo, hi = int(row_ptr[0]), int(row_ptr[-1])
            parts: tuple[np.ndarray, ...] = ((row_ptr - row_ptr[0]).astype(np.uint32),
                                             np.ascontiguousarray(mat.cols[lo:hi], dtype=np.uint32),
                                             np.ascontiguousarray(mat.coeff_idx[lo:hi], dtype=index_type))
            for buf, part in zip(bufs, parts, strict=True):
                if part.size:
                    chunk.copies.append(cl.enqueue_copy(self.copy_queue, buf, part, is_blocking=False,
                                                        wait_for=chunk.readers or None))
                    chunk.staged.append(part)  # read by the copy until it finishes
        self.copy_queue.flush()  # kernels on the other queue wait for these copies
        return list(chunk.copies)


def _check_chunk_terms(pce: PrecompiledCircuit, rows: int, most: int) -> None:
    """Refuse chunks of ``rows`` rows the most terms of which (``most``) the uint32 row offsets
    from a chunk's first term cannot reach."""
    if most >= 1 << 32:
        raise ValueError(f"circuit {pce.name}: a chunk of {rows} rows holds {most} terms, more than the "
                         "32-bit offsets of a chunk reach; load it with fewer chunk_rows")


def _fill_zero(queue, buf, offset: int, nbytes: int) -> None:
    import_pyopencl().enqueue_fill_buffer(queue, buf, np.uint8(0), offset, nbytes)
