"""The CUDA backend without a GPU: its sources compile with nvcc, and probe() explains itself."""

from __future__ import annotations

import pytest

from cuzk_plugin.backends.cuda import CudaBackend
from cuzk_plugin.backends.cuda import build as cuda_build
from cuzk_plugin.backends.registry import probe
from tests.cuda_support import built_library_or_skip


@pytest.mark.slow
def test_sources_compile_with_nvcc():
    built_library_or_skip()  # skips only without nvcc; builds (incrementally) where it exists
    lib = cuda_build.build()  # instant now: the build directory is up to date
    assert lib.exists() and lib.stat().st_size > 0


def test_probe_gives_reason_or_none():
    why = CudaBackend.probe()
    assert why is None or (isinstance(why, str) and why)
    assert probe("cuda") == why


def test_probe_without_library(monkeypatch, tmp_path):
    import cuzk_plugin.backends.cuda.library as library

    monkeypatch.setattr(library, "_LIB", None)
    monkeypatch.setenv("CUZK_CUDA_BUILD_DIR", str(tmp_path))
    monkeypatch.delenv("CUZK_CUDA_LIBRARY", raising=False)
    why = CudaBackend.probe()
    assert why is not None and "python -m cuzk_plugin.backends.cuda.build" in why


def test_host_side_curve_arithmetic_matches_arkworks():
    """The kernels' field and curve code, run on the host: k * G for G1 and G2."""
    import numpy as np
    from py_arkworks_bls12381 import G1Point, G2Point, Scalar

    from cuzk_plugin.backends.cuda import library
    from cuzk_plugin.bls12_381.fields import R, ints_to_limbs
    from cuzk_plugin.bls12_381.points import g1_to_limbs, g2_to_limbs

    built_library_or_skip()
    for k in (0, 1, 2, 3, 12345, R - 1, 2**200 + 17):
        limbs = ints_to_limbs([k])[0].copy()
        out1 = np.zeros((2, 6), np.uint64)
        library.call("cz_host_mul_generator", 0, library.u64_ptr(limbs), library.u64_ptr(out1))
        np.testing.assert_array_equal(out1, g1_to_limbs(G1Point() * Scalar(k)), err_msg=f"G1 k={k}")
        out2 = np.zeros((2, 2, 6), np.uint64)
        library.call("cz_host_mul_generator", 1, library.u64_ptr(limbs), library.u64_ptr(out2))
        np.testing.assert_array_equal(out2, g2_to_limbs(G2Point() * Scalar(k)), err_msg=f"G2 k={k}")


def test_host_side_curve_equation_and_mixed_additions():
    """affine_t::is_on_curve (load_srs's check) and XYZZ mixed additions on the host."""
    import ctypes

    from cuzk_plugin.backends.cuda import library

    built_library_or_skip()
    checks = ctypes.c_uint64(0)
    library.call("cz_host_curve_selftest", ctypes.byref(checks))
    assert checks.value == 4
