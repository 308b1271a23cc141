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
    from cuzk_plugin.backends.cuda import library

    monkeypatch.setattr(library, "_LIB", None)
    monkeypatch.setenv("CUZK_CUDA_BUILD_DIR", str(tmp_path))
    monkeypatch.delenv("CUZK_CUDA_LIBRARY", raising=False)
    why = CudaBackend.probe()
    assert why is not None and "python -m cuzk_plugin.backends.cuda.build" in why


def test_host_side_curve_arithmetic_matches_arkworks():
    """The kernels' field and curve code, run on the host (bench library): k * G for G1 and G2."""
    import numpy as np
    from py_arkworks_bls12381 import G1Point, G2Point, Scalar

    from cuzk_plugin.backends.cuda.bench import CudaBench
    from cuzk_plugin.bls12_381.fields import R, ints_to_limbs
    from cuzk_plugin.bls12_381.points import g1_to_limbs, g2_to_limbs

    built_library_or_skip()
    bench = CudaBench()
    for k in (0, 1, 2, 3, 12345, R - 1, 2**200 + 17):
        limbs = ints_to_limbs([k])[0]
        np.testing.assert_array_equal(bench.host_mul_generator(limbs, g2=False), g1_to_limbs(G1Point() * Scalar(k)),
                                      err_msg=f"G1 k={k}")
        np.testing.assert_array_equal(bench.host_mul_generator(limbs, g2=True), g2_to_limbs(G2Point() * Scalar(k)),
                                      err_msg=f"G2 k={k}")


def test_host_side_curve_equation_and_mixed_additions():
    """affine_t::is_on_curve (load_srs's check) and XYZZ mixed additions on the host."""
    from cuzk_plugin.backends.cuda.bench import CudaBench

    built_library_or_skip()
    assert CudaBench().host_curve_selftest() == 4


def test_host_side_batch_affine_additions_match_xyzz():
    """The batch-affine additions (one inversion for a batch) give the mixed XYZZ sums, step by
    step, through copies, doublings, P + (-P) and identities: 6 accumulators x 7 steps."""
    from cuzk_plugin.backends.cuda.bench import CudaBench

    built_library_or_skip()
    assert CudaBench().host_affine_batch_selftest() == 42


def test_production_sources_read_no_environment():
    """The production kernels have no run-time switches: no getenv in kernels/ (the bench sources
    included); the library's one setting, the MSM window, is an argument."""
    from cuzk_plugin.backends.cuda.paths import KERNEL_DIR

    readers = [p.name for p in KERNEL_DIR.rglob("*.cu*") if "getenv" in p.read_text()]
    assert readers == []


def test_production_library_exports_no_bench_code():
    """libcuzk_cuda.so exports no benchmark or host-check entry point; the bench library has
    both the production and the benchmark entry points."""
    import shutil
    import subprocess

    from cuzk_plugin.backends.cuda import library

    built_library_or_skip()
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) not installed")
    path = next(p for p in library.candidate_paths() if p.exists())

    def exported(lib):
        return subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True,
                              check=True).stdout

    def names(text):
        return {line.split()[-1] for line in text.splitlines() if line.split()}

    prod = names(exported(path))
    # every production entry point (cz_host_register included), none of the bench library's own
    assert set(library._SIGNATURES) <= prod and not any(n.startswith("cz_bench_") for n in prod)
    assert not set(library._BENCH_SIGNATURES) & prod
    bench = names(exported(path.with_name("libcuzk_cuda_bench.so")))
    assert set(library._BENCH_SIGNATURES) <= bench and "cz_prove_start" in bench


NVCC_13 = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121}


def test_fat_binary_targets_every_provider_gpu_nvcc_supports():
    assert cuda_build.resolve_arches("all", NVCC_13) == [80, 86, 89, 90, 100, 120]
    assert cuda_build.resolve_arches("all", {75, 80, 86, 89, 90}) == [80, 86, 89, 90]  # an older nvcc
    flags = cuda_build.gencode_flags([80, 86, 89, 90, 100, 120])
    codes = [flags[i + 1] for i, f in enumerate(flags) if f == "-gencode"]
    assert codes[:-1] == [f"arch=compute_{a},code=sm_{a}" for a in (80, 86, 89, 90, 100, 120)]
    assert codes[-1] == "arch=compute_120,code=compute_120"  # PTX of the newest, for later GPUs
    assert any(f.startswith("-DCZ_BUILT_ARCHES=") and "sm_86" in f and "compute_120" in f for f in flags)


def test_arch_lists_and_auto(monkeypatch):
    assert cuda_build.resolve_arches("90,sm_89", NVCC_13) == [89, 90]
    with pytest.raises(ValueError, match="sm_70"):
        cuda_build.resolve_arches("70,90", NVCC_13)
    with pytest.raises(ValueError, match="expected all, native"):
        cuda_build.resolve_arches("hopper", NVCC_13)
    monkeypatch.setattr(cuda_build, "native_arches", list)
    assert cuda_build.resolve_arches("auto", NVCC_13) == [cuda_build.COMPILE_CHECK_ARCH]  # CI: compile check
    with pytest.raises(ValueError, match="no GPU"):
        cuda_build.resolve_arches("native", NVCC_13)
    monkeypatch.setattr(cuda_build, "native_arches", lambda: [86, 89])
    assert cuda_build.resolve_arches("auto", NVCC_13) == [86, 89]  # this machine's cards only
