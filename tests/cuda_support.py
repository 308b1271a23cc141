"""The CUDA library for tests: built where nvcc exists, so a missing or stale build fails a test
instead of skipping it; tests skip only where it cannot be built (no nvcc) or no GPU is there."""

from __future__ import annotations

import ctypes

import pytest

from cuzk_plugin.backends.cuda import build as cuda_build
from cuzk_plugin.backends.cuda import library
from cuzk_plugin.errors import BackendUnavailable


def built_library_or_skip() -> ctypes.CDLL:
    try:
        return library.load_library()
    except BackendUnavailable as exc:
        if cuda_build.find_nvcc() is None:
            pytest.skip(f"nvcc not installed, so the CUDA library cannot be built here ({exc})")
    cuda_build.build()  # incremental; an error here is a test failure
    return library.load_library()
