"""Where the CUDA backend's libraries are built and looked for (shared by :mod:`.build` and
:mod:`.library`, kept apart so ``python -m ...cuda.build`` imports nothing else)."""

from __future__ import annotations

import os
from pathlib import Path

LIBRARY_NAME = "libcuzk_cuda.so"
#: The production objects plus the benchmark and host-check entry points (kernels/bench/).
BENCH_LIBRARY_NAME = "libcuzk_cuda_bench.so"
KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
BENCH_KERNEL_DIR = KERNEL_DIR / "bench"


def build_dir() -> Path:
    """``CUZK_CUDA_BUILD_DIR`` if set, else ``cuzk_plugin/backends/cuda/build`` (git-ignored)."""
    env = os.environ.get("CUZK_CUDA_BUILD_DIR")
    return Path(env) if env else Path(__file__).resolve().parent / "build"


def library_path() -> Path:
    return build_dir() / LIBRARY_NAME
