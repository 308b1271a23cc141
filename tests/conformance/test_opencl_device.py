"""OpenCL-specific behaviour the generic suite cannot see: device selection, build errors
carrying the compiler log, the non-default limb width, and `auto` choosing OpenCL."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from cuzk_plugin.backends.registry import get_backend, probe
from cuzk_plugin.bls12_381.fields import random_fr
from cuzk_plugin.errors import BackendError, BackendUnavailable
from tests.conformance.checks import check_msm, check_ntt, check_quotient_h

pytestmark = pytest.mark.skipif(probe("opencl") is not None, reason=f"opencl unavailable: {probe('opencl')}")


@pytest.fixture(scope="module")
def opencl_other_limbs():
    """The limb width this device does not use by default (32 on PoCL), so CI tests both."""
    from cuzk_plugin.backends.opencl import OpenclBackend

    default = OpenclBackend()
    return OpenclBackend(limb_bits=96 - default.limb_bits)


def test_env_selection_syntax():
    from cuzk_plugin.backends.opencl.device import parse_env_selection

    assert parse_env_selection("1:0") == (1, 0)
    assert parse_env_selection("2") == (None, 2)
    assert parse_env_selection("H200") == (None, "H200")


def test_unknown_device_name_lists_the_devices():
    from cuzk_plugin.backends.opencl import OpenclBackend

    with pytest.raises(BackendUnavailable, match="devices: 0:0"):
        OpenclBackend(device="no-such-device-name")


def test_environment_variable_selects_by_name(monkeypatch):
    from cuzk_plugin.backends.opencl import OpenclBackend
    from cuzk_plugin.backends.opencl.device import all_devices

    name = all_devices()[0][2].name.strip()
    monkeypatch.setenv("CUZK_OPENCL_DEVICE", name[:6])
    assert OpenclBackend().device.name.strip() == name
    monkeypatch.setenv("CUZK_OPENCL_DEVICE", "no-such-device-name")
    with pytest.raises(BackendUnavailable, match="CUZK_OPENCL_DEVICE"):
        OpenclBackend()


def test_build_error_carries_the_compiler_log():
    import pyopencl as cl

    from cuzk_plugin.backends.opencl.device import build_program, select_device

    context = cl.Context([select_device()])
    with pytest.raises(BackendError, match=r"'broken' kernels failed:\n.*undeclared_thing"):
        build_program(context, "__kernel void k(__global int *x) { x[0] = undeclared_thing; }", "broken")


def test_invalid_limb_width_is_refused():
    from cuzk_plugin.backends.opencl import OpenclBackend

    with pytest.raises(ValueError, match="limb_bits"):
        OpenclBackend(limb_bits=16)


def test_other_limb_width_conforms(opencl_other_limbs, g1_pool, g2_pool, rng):
    backend = opencl_other_limbs
    for mode in ((False, False), (True, False), (False, True), (True, True)):
        check_ntt(backend, random_fr(rng, 1 << 10), inverse=mode[0], coset=mode[1], rng=rng)
    a, b, c = (random_fr(rng, 300) for _ in range(3))
    check_quotient_h(backend, a, b, c)
    for n in (1, 3, 1000):
        points, bases = g1_pool.take(n)
        check_msm(backend, 1, points, bases, random_fr(rng, n))
    points, bases = g2_pool.take(100)
    check_msm(backend, 2, points, bases, random_fr(rng, 100))
    (p,), one = g1_pool.take(1)
    check_msm(backend, 1, [p, p, -p], np.concatenate([one, one, g1_pool.to_limbs([-p])]), np.tile(random_fr(rng, 1), (3, 1)))


def test_auto_prefers_opencl_over_cpu_and_says_so(caplog, monkeypatch):
    from cuzk_plugin.backends.cuda import CudaBackend

    # Without CUDA (made so where a GPU is present: auto would rightly pick cuda there).
    monkeypatch.setattr(CudaBackend, "probe", classmethod(lambda cls: "no CUDA device present"))
    caplog.set_level(logging.INFO)
    backend = get_backend("auto")
    assert backend.name == "opencl"
    assert "NOT CUDA, proving on 'opencl'" in caplog.text  # said loudly: a CPU-side fallback
    assert "cuda unavailable" in caplog.text


def test_allocation_failure_is_device_out_of_memory():
    """The engine retries or evicts on DeviceOutOfMemory, so allocation failures must map to it."""
    import pyopencl as cl

    from cuzk_plugin.backends.opencl import OpenclBackend
    from cuzk_plugin.backends.opencl.device import device_errors
    from cuzk_plugin.errors import DeviceOutOfMemory

    backend = OpenclBackend()
    with pytest.raises(DeviceOutOfMemory, match="huge buffer"), device_errors("huge buffer"):
        cl.Buffer(backend.context, cl.mem_flags.READ_WRITE, 1 << 50)


@pytest.mark.parametrize("n", [1, 5, 4095, 4096, 4097, 100_000, 4096 * 4096 + 3])
def test_device_exclusive_scan(n, rng):
    """The MSM's offsets come from this scan; sizes cross one, two and three block levels."""
    from cuzk_plugin.backends.opencl import OpenclBackend
    from cuzk_plugin.backends.opencl.launch import download, empty, upload

    backend = OpenclBackend()
    drv = backend._g1
    values = rng.integers(0, 200, n, dtype=np.uint32)
    d_in = upload(backend.context, backend.queue, values)
    d_out = empty(backend.context, 4 * n)
    drv.exclusive_scan(d_in, d_out, n)
    want = np.concatenate([[0], np.cumsum(values, dtype=np.uint64)[:-1]]).astype(np.uint32)
    assert np.array_equal(download(backend.queue, d_out, (n,), np.uint32), want)


def test_probe_names_a_missing_pyopencl(monkeypatch):
    import sys

    from cuzk_plugin.backends.opencl import OpenclBackend

    monkeypatch.setitem(sys.modules, "pyopencl", None)  # makes `import pyopencl` fail
    assert "pyopencl is not installed" in OpenclBackend.probe()


def test_chunked_upload_equals_whole_upload(g2_pool):
    """load_srs streams vectors in chunks; odd chunk sizes must give the same device data."""
    from cuzk_plugin.backends.opencl import OpenclBackend
    from cuzk_plugin.backends.opencl.launch import download

    backend = OpenclBackend()
    drv = backend._g2
    _, limbs = g2_pool.take(100)
    whole = drv.points_to_device(limbs)
    chunked = drv.points_to_device_chunked(100, lambda start, stop: limbs[start:stop], chunk=7)
    shape = (100, *limbs.shape[1:])
    assert np.array_equal(download(backend.queue, whole, shape), download(backend.queue, chunked, shape))
