"""Build the CUDA backend's shared library: ``python -m cuzk_plugin.backends.cuda.build``.

Compiles every ``kernels/*.cu`` with nvcc for sm_90 (Hopper) with PTX embedded (so newer
GPUs can JIT it), in parallel, and links ``libcuzk_cuda.so`` into the build directory
(``cuzk_plugin/backends/cuda/build/`` by default, ignored by git; ``CUZK_CUDA_BUILD_DIR``
overrides it). Rebuilds only what changed (sources newer than their objects).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cuzk_plugin.backends.cuda.paths import KERNEL_DIR, LIBRARY_NAME, build_dir

DEFAULT_ARCH = ["-gencode", "arch=compute_90,code=[sm_90,compute_90]"]
NVCC_FLAGS = ["-std=c++17", "-O3", "-Xcompiler", "-fPIC", "--expt-relaxed-constexpr"]


def find_nvcc() -> str | None:
    """nvcc from ``$CUDA_HOME/bin``, else the PATH."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvcc").exists():
        return str(Path(home) / "bin" / "nvcc")
    return shutil.which("nvcc")


def sources() -> list[Path]:
    return sorted(KERNEL_DIR.glob("*.cu"))


def _stale(obj: Path, src: Path) -> bool:
    if not obj.exists():
        return True
    newest_input = max([src.stat().st_mtime] + [h.stat().st_mtime for h in KERNEL_DIR.glob("*.cuh")])
    return obj.stat().st_mtime < newest_input


def _run(cmd: list[str], verbose: bool) -> None:
    if verbose:
        print(" ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nvcc failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if verbose and (proc.stdout or proc.stderr):
        print(proc.stdout + proc.stderr, flush=True)


def build(*, out_dir: Path | None = None, arch: list[str] | None = None, jobs: int | None = None,
          extra_flags: list[str] | None = None, verbose: bool = False, force: bool = False) -> Path:
    """Compile and link the library; returns its path. Raises RuntimeError on a compiler error."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise RuntimeError("nvcc not found: install the CUDA toolkit or set CUDA_HOME")
    out = out_dir or build_dir()
    out.mkdir(parents=True, exist_ok=True)
    flags = NVCC_FLAGS + (arch or DEFAULT_ARCH) + (extra_flags or [])
    objects = []
    todo = []
    for src in sources():
        obj = out / (src.stem + ".o")
        objects.append(obj)
        if force or _stale(obj, src):
            todo.append([nvcc, *flags, "-c", str(src), "-o", str(obj)])
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        list(pool.map(lambda cmd: _run(cmd, verbose), todo))
    lib = out / LIBRARY_NAME
    if todo or not lib.exists():
        tmp = out / (LIBRARY_NAME + ".tmp")
        _run([nvcc, *flags, "-shared", *map(str, objects), "-o", str(tmp)], verbose)
        tmp.replace(lib)
    return lib


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="build directory (default: %(default)s)", default=None)
    parser.add_argument("-j", "--jobs", type=int, default=None, help="parallel nvcc processes")
    parser.add_argument("--force", action="store_true", help="rebuild everything")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--nvcc-flag", action="append", default=[], help="extra nvcc flag (repeatable)")
    args = parser.parse_args(argv)
    try:
        lib = build(out_dir=args.out, jobs=args.jobs, extra_flags=args.nvcc_flag, verbose=args.verbose,
                    force=args.force)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(lib)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
