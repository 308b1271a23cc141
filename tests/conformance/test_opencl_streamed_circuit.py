"""A streamed circuit on OpenCL, what the generic suite cannot see: the chunk buffers it
allocates are the protocol's figure (less what OpenCL keeps on the host), the multi-device
set passes ``streamed`` and ``chunk_rows`` through, and bad uses are refused."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_plugin.backends.protocol import streamed_circuit_device_bytes
from cuzk_plugin.backends.registry import probe
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from tests.conformance.test_r1cs_eval import random_circuit

pytestmark = pytest.mark.skipif(probe("opencl") is not None, reason=f"opencl unavailable: {probe('opencl')}")


@pytest.fixture(scope="module")
def opencl():
    from cuzk_plugin.backends.opencl import OpenclBackend

    return OpenclBackend()


@pytest.mark.parametrize("chunk_rows", [1, 5, 64, 1 << 20])
def test_chunk_buffers_are_the_protocol_figure(opencl, rng, chunk_rows):
    """Two chunk buffers of chunk_rows + 1 row pointers and the most terms a chunk has, per
    matrix, and both coefficient forms: the figure less a kind byte per coefficient and the
    densities (which OpenCL does not hold on the device)."""
    r1cs, _ = random_circuit(rng, 150, 4, 120)
    pce = precompile_r1cs(r1cs, "sizes")
    handle = opencl.load_circuit(pce, streamed=True, chunk_rows=chunk_rows)
    try:
        chunk_bytes = sum(b.size for chunk in handle.chunks for bufs in chunk.matrices for b in bufs)
        device_bytes = chunk_bytes + handle.coeffs_plain.size + handle.coeffs_mont.size
        assert handle.streamed and not handle.matrices and len(handle.chunks) == 2
        assert handle.chunk_rows == min(chunk_rows, pce.num_constraints)
    finally:
        handle.release()
    unheld = pce.coeffs.shape[0] + 2 * pce.num_aux + pce.num_inputs
    assert handle.nbytes == streamed_circuit_device_bytes(pce, chunk_rows) == device_bytes + unheld


def test_every_device_set_passes_streamed_through(opencl, rng):
    from cuzk_plugin.backends.opencl.multi import OpenclDevices

    devices = OpenclDevices([opencl])
    r1cs, z = random_circuit(rng, 120, 3, 100)
    pce = precompile_r1cs(r1cs, "multi")
    resident = devices.load_circuit(pce)
    streamed = devices.load_circuit(pce, streamed=True, chunk_rows=9)
    try:
        assert (resident.streamed, resident.host_bytes) == (False, 0)
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
