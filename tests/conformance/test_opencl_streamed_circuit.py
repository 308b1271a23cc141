"""A circuit on OpenCL in the compact chunk form (uint32 row offsets from a chunk's first term,
uint32 columns, uint16 or uint32 coefficient indices), what the generic suite cannot see: the
buffers a streamed circuit allocates (two chunks) and a resident one uploads (every chunk, its
row offsets chunk after chunk) are the protocol's figures, less what OpenCL keeps on the host;
both index widths stream as the resident circuit evaluates, the multi-device set passes
``streamed`` and ``chunk_rows`` through, and bad uses are refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cuzk_plugin.backends.protocol import (
    resident_circuit_device_bytes,
    streamed_circuit_device_bytes,
    streamed_coeff_index_bytes,
)
from cuzk_plugin.backends.registry import probe
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from tests.conformance.test_r1cs_eval import random_circuit, wide_circuit

pytestmark = pytest.mark.skipif(probe("opencl") is not None, reason=f"opencl unavailable: {probe('opencl')}")


@pytest.fixture(scope="module")
def opencl():
    from cuzk_plugin.backends.opencl import OpenclBackend

    return OpenclBackend()


def _circuit(rng, width: str):
    """A random circuit whose streamed coefficient indices are 16-bit ("narrow": the table of
    precompile_r1cs, a few hundred entries) or 32-bit ("wide": 70000 entries)."""
    if width == "wide":
        return wide_circuit(rng, 60, 3, 200)
    r1cs, z = random_circuit(rng, 150, 4, 120)
    return precompile_r1cs(r1cs, "sizes"), z


@pytest.mark.parametrize("width", ["narrow", "wide"])
@pytest.mark.parametrize("chunk_rows", [1, 5, 64, 1 << 20])
def test_chunk_buffers_are_the_protocol_figure(opencl, rng, chunk_rows, width):
    """Two chunk buffers, per matrix chunk_rows + 1 uint32 row offsets and, for the most terms
    a chunk has, a uint32 column and a coefficient index of 2 or 4 bytes; both coefficient
    forms: the figure less a kind byte per coefficient and the densities (which OpenCL does
    not hold on the device)."""
    from cuzk_plugin.backends.protocol import most_chunk_terms

    pce, _ = _circuit(rng, width)
    index_bytes = streamed_coeff_index_bytes(pce)
    assert index_bytes == (4 if width == "wide" else 2)
    handle = opencl.load_circuit(pce, streamed=True, chunk_rows=chunk_rows)
    try:
        rows = min(chunk_rows, pce.num_constraints)
        assert handle.streamed and not handle.matrices and len(handle.chunks) == 2
        assert handle.chunk_rows == rows and handle.coeff_index_bytes == index_bytes
        for chunk in handle.chunks:
            for mat, bufs in zip((pce.a, pce.b, pce.c), chunk.matrices, strict=True):
                t = most_chunk_terms(mat, pce.num_constraints, rows)
                assert [b.size for b in bufs] == [(rows + 1) * 4, t * 4, t * index_bytes]
        chunk_bytes = sum(b.size for chunk in handle.chunks for bufs in chunk.matrices for b in bufs)
        device_bytes = chunk_bytes + handle.coeffs_plain.size + handle.coeffs_mont.size
    finally:
        handle.release()
    unheld = pce.coeffs.shape[0] + 2 * pce.num_aux + pce.num_inputs
    assert handle.nbytes == streamed_circuit_device_bytes(pce, chunk_rows) == device_bytes + unheld


@pytest.mark.parametrize("width", ["narrow", "wide"])
@pytest.mark.parametrize("chunk_rows", [1, 7, 64, 1 << 20])
def test_resident_arrays_are_the_protocol_figure(opencl, rng, chunk_rows, width):
    """A resident circuit's matrices on the device in the compact form, every chunk at once: per
    matrix its m + nchunks row offsets (chunk i's rows r0 .. r1 at entries r0 + i .. r1 + i, from
    the chunk's first term), its columns and its coefficient indices of 2 or 4 bytes, and each
    chunk's first term kept on the host; the bytes the protocol's figure less a kind byte per
    coefficient and the densities."""
    from cuzk_plugin.backends.opencl.launch import download

    pce, _ = _circuit(rng, width)
    m = pce.num_constraints
    rows = min(chunk_rows, m)
    firsts = [*range(0, m, rows), m]
    index_bytes = streamed_coeff_index_bytes(pce)
    index_type = np.uint16 if index_bytes == 2 else np.uint32
    handle = opencl.load_circuit(pce, chunk_rows=chunk_rows)
    try:
        assert not handle.streamed and not handle.chunks and handle.host_bytes == 0
        assert handle.chunk_rows == rows and handle.coeff_index_bytes == index_bytes
        for mat, bufs, term0 in zip((pce.a, pce.b, pce.c), handle.matrices, handle.chunk_term0, strict=True):
            row_ptr = np.asarray(mat.row_ptr).astype(np.int64)
            assert [int(t) for t in term0] == [int(row_ptr[r]) for r in firsts]
            want_off = np.concatenate([row_ptr[r0:r1 + 1] - row_ptr[r0] for r0, r1 in itertools.pairwise(firsts)])
            nnz = mat.nnz
            assert [b.size for b in bufs] == [max(want_off.size * 4, 1), max(nnz * 4, 1), max(nnz * index_bytes, 1)]
            row_off, cols, cidx = (download(opencl.queue, b, (n,), t) for b, n, t in
                                   zip(bufs, (want_off.size, nnz, nnz), (np.uint32, np.uint32, index_type), strict=True))
            np.testing.assert_array_equal(row_off, want_off)
            np.testing.assert_array_equal(cols, mat.cols)
            np.testing.assert_array_equal(cidx, mat.coeff_idx)
        matrix_bytes = sum(b.size for bufs in handle.matrices for b in bufs)
        device_bytes = matrix_bytes + handle.coeffs_plain.size + handle.coeffs_mont.size
    finally:
        handle.release()
    unheld = pce.coeffs.shape[0] + 2 * pce.num_aux + pce.num_inputs
    assert handle.nbytes == resident_circuit_device_bytes(pce, chunk_rows) == device_bytes + unheld


def test_a_resident_circuit_without_terms(opencl):
    """A circuit of no rows and one of rows without a single term: zero-length arrays are still
    valid buffers (one byte), the figure counts none of them, and the rows are zero."""
    from cuzk_plugin.formats.pce import CsrMatrix, PrecompiledCircuit

    for m in (0, 5):
        empty = CsrMatrix(np.zeros(m + 1, np.uint64), np.zeros(0, np.uint32), np.zeros(0, np.uint32))
        pce = PrecompiledCircuit(
            name="no-terms", num_inputs=1, num_aux=2, num_constraints=m, coeffs=np.zeros((0, 4), np.uint64),
            a=empty, b=empty, c=empty, a_aux_density=np.zeros(2, bool), b_input_density=np.zeros(1, bool),
            b_aux_density=np.zeros(2, bool), digest="")
        handle = opencl.load_circuit(pce, chunk_rows=2)
        try:
            assert handle.nbytes == resident_circuit_device_bytes(pce, 2)
            got = opencl.evaluate_r1cs(handle, np.array([[1, 0, 0, 0], [5, 0, 0, 0], [0, 0, 0, 0]], np.uint64))
        finally:
            handle.release()
        for g in got:
            assert g.shape == (m, 4) and not g.any()


@pytest.mark.parametrize("width", ["narrow", "wide"])
def test_both_index_widths_stream_as_resident(opencl, rng, width):
    """Chunks of 9 rows (not dividing the circuit's rows) for each index width: three
    evaluations on one handle, so each chunk buffer is refilled within an evaluation and
    across them, equal the resident circuit's rows."""
    pce, z = _circuit(rng, width)
    assert pce.num_constraints % 9 != 0
    zs = [z, z.copy(), z.copy()]
    zs[1][1:] = zs[1][:0:-1]  # the same values in other orders, ONE still first
    zs[2][1:] = rng.permutation(zs[2][1:])
    resident = opencl.load_circuit(pce)
    try:
        wants = [opencl.evaluate_r1cs(resident, each) for each in zs]
    finally:
        resident.release()
    handle = opencl.load_circuit(pce, streamed=True, chunk_rows=9)
    try:
        gots = [opencl.evaluate_r1cs(handle, each) for each in zs]
    finally:
        handle.release()
    for got, want in zip(gots, wants, strict=True):
        for name, g, w in zip("abc", got, want, strict=True):
            bad = np.flatnonzero((g != w).any(axis=1))
            assert bad.size == 0, f"{width} {name}: {bad.size} rows differ, first {bad[:5].tolist()}"


def test_every_device_set_passes_streamed_through(opencl, rng):
    from cuzk_plugin.backends.opencl.multi import OpenclDevices

    devices = OpenclDevices([opencl])
    r1cs, z = random_circuit(rng, 120, 3, 100)
    pce = precompile_r1cs(r1cs, "multi")
    resident = devices.load_circuit(pce)
    streamed = devices.load_circuit(pce, streamed=True, chunk_rows=9)
    try:
        assert (resident.streamed, resident.host_bytes) == (False, 0)
        assert resident.nbytes == resident_circuit_device_bytes(pce)
        assert streamed.streamed and streamed.inner.chunk_rows == 9
        assert streamed.host_bytes == pce.a.nbytes + pce.b.nbytes + pce.c.nbytes
        assert streamed.nbytes == streamed_circuit_device_bytes(pce, 9)
        for got, want in zip(devices.evaluate_r1cs(streamed, z), devices.evaluate_r1cs(resident, z), strict=True):
            np.testing.assert_array_equal(got, want)
    finally:
        resident.release()
        streamed.release()


def test_bad_uses_are_refused(opencl, rng):
    r1cs, z = random_circuit(rng, 20, 2, 20)
    pce = precompile_r1cs(r1cs, "refused")
    with pytest.raises(ValueError, match="chunk_rows must be at least 1"):
        opencl.load_circuit(pce, streamed=True, chunk_rows=0)
    handle = opencl.load_circuit(pce, streamed=True, chunk_rows=4)
    handle.release()
    with pytest.raises(ValueError, match="released"):
        opencl.evaluate_r1cs(handle, z)


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "resident"])
def test_a_chunk_past_32_bit_offsets_is_refused(opencl, rng, monkeypatch, streamed):
    """A chunk whose terms the uint32 offsets cannot reach (>= 2^32, as a chunk of a huge circuit
    would have) is refused at load, streamed or resident, naming the circuit, the rows and the
    count."""
    from cuzk_plugin.backends.opencl import r1cs as opencl_r1cs

    r1cs, _ = random_circuit(rng, 20, 2, 20)
    pce = precompile_r1cs(r1cs, "huge-chunk")
    monkeypatch.setattr(opencl_r1cs, "most_chunk_terms", lambda mat, rows, chunk_rows: 1 << 32)
    with pytest.raises(ValueError, match=rf"huge-chunk.*\b4\b rows.*{1 << 32}"):
        opencl.load_circuit(pce, streamed=streamed, chunk_rows=4)
