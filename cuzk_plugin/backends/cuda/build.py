"""Build the CUDA backend's libraries: ``python -m cuzk_plugin.backends.cuda.build``.

Compiles every ``kernels/*.cu`` with nvcc, in parallel, and links two libraries into the build
directory (``cuzk_plugin/backends/cuda/build/`` by default, ignored by git;
``CUZK_CUDA_BUILD_DIR`` overrides it):

- ``libcuzk_cuda.so``: what production runs (the C ABI of ``kernels/api.cu``);
- ``libcuzk_cuda_bench.so``: the same objects plus ``kernels/bench/*.cu`` (inputs made on the
  device, benchmark and host-check entry points), for ``cuzk-bench kernels`` and the tests.

GPU targets (``--arch``): ``all`` is a fat binary with machine code for every architecture
storage providers run that this nvcc supports (sm_80 A100, sm_86 RTX 30xx, sm_89 RTX 40xx,
sm_90 H100/H200, sm_100 B200, sm_120 RTX 50xx) plus PTX of the newest one, which the driver
compiles for a later GPU; the CUDA runtime picks the machine code matching the device at load,
and a GPU none fits is refused naming its capability. Each architecture adds about the time
of a whole single-architecture build (minutes on two cores), so ``auto`` (the default for a new
build directory; later builds keep the last one's targets) builds for this machine's GPUs
(nvidia-smi) and, where there is none (CI), sm_90 alone to check that everything compiles; a
comma list (``90,89``) builds those. Rebuilds only what changed
(sources newer than their objects, or other flags than the last build).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cuzk_plugin.backends.cuda.paths import (
    BENCH_KERNEL_DIR,
    BENCH_LIBRARY_NAME,
    KERNEL_DIR,
    LIBRARY_NAME,
    build_dir,
)

#: Compute capabilities of the GPUs storage providers run (A100, RTX 30xx, RTX 40xx, H100/H200,
#: B200, RTX 50xx), built where nvcc supports them.
FAT_ARCHES = (80, 86, 89, 90, 100, 120)
NVCC_FLAGS = ["-std=c++17", "-O3", "-Xcompiler", "-fPIC", "--expt-relaxed-constexpr", f"-I{KERNEL_DIR}"]


def find_nvcc() -> str | None:
    """nvcc from ``$CUDA_HOME/bin``, else the PATH."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvcc").exists():
        return str(Path(home) / "bin" / "nvcc")
    return shutil.which("nvcc")


def nvcc_arches(nvcc: str) -> set[int]:
    """The compute capabilities this nvcc can compile for (``nvcc --list-gpu-arch``)."""
    out = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, check=False).stdout
    return {int(m) for m in re.findall(r"compute_(\d+)", out)}


def native_arches() -> list[int]:
    """Compute capabilities of this machine's GPUs (nvidia-smi), empty where none is seen."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    proc = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        return []
    return sorted({int(line.strip().replace(".", "")) for line in proc.stdout.splitlines() if line.strip()})


#: ``--arch auto`` on a machine without a GPU: enough to check that every source compiles.
COMPILE_CHECK_ARCH = 90


def resolve_arches(spec: str, supported: set[int]) -> list[int]:
    """``auto``, ``all``, ``native`` or a comma list (``90,89`` / ``sm_90``) -> sorted compute
    capabilities. Raises ValueError naming what this nvcc cannot build or what is missing."""
    if spec == "auto":
        spec = "native" if native_arches() else str(COMPILE_CHECK_ARCH)
    if spec == "all":
        arches = [a for a in FAT_ARCHES if a in supported]
        if not arches:
            raise ValueError(f"this nvcc supports none of {FAT_ARCHES} (it lists {sorted(supported)})")
        return arches
    if spec == "native":
        arches = native_arches()
        if not arches:
            raise ValueError("--arch native: no GPU reported by nvidia-smi here; name the architectures (e.g. 90)")
    else:
        try:
            arches = sorted({int(a.strip().removeprefix("sm_").removeprefix("compute_")) for a in spec.split(",")})
        except ValueError:
            raise ValueError(f"--arch: expected all, native or numbers like 90,89, got {spec!r}") from None
    missing = [a for a in arches if a not in supported]
    if missing:
        raise ValueError(f"this nvcc cannot build sm_{', sm_'.join(map(str, missing))} (it lists {sorted(supported)})")
    return arches


def gencode_flags(arches: list[int]) -> list[str]:
    """Machine code for each architecture, plus PTX of the newest (JIT-compiled by the driver for
    later GPUs), and the list as CZ_BUILT_ARCHES for the library's no-kernel-image message."""
    flags = []
    for a in arches:
        flags += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
    top = max(arches)
    flags += ["-gencode", f"arch=compute_{top},code=compute_{top}"]
    built = " ".join([f"sm_{a}" for a in arches] + [f"compute_{top} (PTX)"])
    return [*flags, f'-DCZ_BUILT_ARCHES="{built}"']


def sources() -> list[Path]:
    return sorted(KERNEL_DIR.glob("*.cu"))


def bench_sources() -> list[Path]:
    return sorted(BENCH_KERNEL_DIR.glob("*.cu"))


def _headers() -> list[Path]:
    return sorted(KERNEL_DIR.glob("*.cuh")) + sorted(BENCH_KERNEL_DIR.glob("*.cuh"))


def _stale(obj: Path, src: Path) -> bool:
    if not obj.exists():
        return True
    newest_input = max([src.stat().st_mtime] + [h.stat().st_mtime for h in _headers()])
    return obj.stat().st_mtime < newest_input


def _run(cmd: list[str], verbose: bool) -> None:
    if verbose:
        print(" ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"nvcc failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if verbose and (proc.stdout or proc.stderr):
        print(proc.stdout + proc.stderr, flush=True)


def _link(nvcc: str, flags: list[str], objects: list[Path], lib: Path, relinked: bool, verbose: bool) -> None:
    if relinked or not lib.exists():
        tmp = lib.with_name(lib.name + ".tmp")
        _run([nvcc, *flags, "-shared", *map(str, objects), "-o", str(tmp)], verbose)
        tmp.replace(lib)


def build(*, out_dir: Path | None = None, arch: str | None = None, jobs: int | None = None,
          extra_flags: list[str] | None = None, verbose: bool = False, force: bool = False) -> Path:
    """Compile and link both libraries; returns the production library's path. ``arch`` None
    keeps the targets of the last build in ``out_dir`` (``auto`` for a new one), so an
    incremental rebuild (the tests') never turns a fat build into a single-architecture one.

    Raises RuntimeError on a compiler error, ValueError on an ``arch`` this nvcc cannot build."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise RuntimeError("nvcc not found: install the CUDA toolkit or set CUDA_HOME")
    out = out_dir or build_dir()
    out.mkdir(parents=True, exist_ok=True)
    arch_file = out / "arch.txt"
    if arch is None:
        arch = arch_file.read_text().strip() if arch_file.exists() else "auto"
    arch_file.write_text(arch + "\n")
    flags = NVCC_FLAGS + gencode_flags(resolve_arches(arch, nvcc_arches(nvcc))) + (extra_flags or [])
    # Objects of another flag set (another --arch) are rebuilt, not linked together.
    stamp = out / "flags.sha256"
    digest = hashlib.sha256("\0".join([nvcc, *flags]).encode()).hexdigest()
    force = force or not stamp.exists() or stamp.read_text().strip() != digest
    prod_objects = [out / (src.stem + ".o") for src in sources()]
    bench_objects = [out / (src.stem + ".o") for src in bench_sources()]
    stale = [(src, obj) for src, obj in zip(sources() + bench_sources(), prod_objects + bench_objects, strict=True)
             if force or _stale(obj, src)]
    if force:
        stamp.unlink(missing_ok=True)
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        list(pool.map(lambda so: _run([nvcc, *flags, "-c", str(so[0]), "-o", str(so[1])], verbose), stale))
    stamp.write_text(digest + "\n")
    rebuilt = {obj for _, obj in stale}
    lib = out / LIBRARY_NAME
    _link(nvcc, flags, prod_objects, lib, bool(rebuilt & set(prod_objects)), verbose)
    _link(nvcc, flags, prod_objects + bench_objects, out / BENCH_LIBRARY_NAME, bool(rebuilt), verbose)
    return lib


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="build directory (default: cuzk_plugin/backends/cuda/build)",
                        default=None)
    parser.add_argument("--arch", default=None,
                        help="GPU targets: auto (this machine's GPUs, else sm_90 to check the build; the default "
                             "for a new build directory, else the last build's targets), "
                             "all (fat binary: sm_80, 86, 89, 90, 100, 120 as this nvcc supports, plus PTX), "
                             "native, or a list such as 90,89")
    parser.add_argument("-j", "--jobs", type=int, default=None, help="parallel nvcc processes (default: CPU count)")
    parser.add_argument("--force", action="store_true", help="rebuild everything")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each nvcc command and its output")
    parser.add_argument("--nvcc-flag", action="append", default=[], help="extra nvcc flag (repeatable)")
    args = parser.parse_args(argv)
    try:
        lib = build(out_dir=args.out, arch=args.arch, jobs=args.jobs, extra_flags=args.nvcc_flag,
                    verbose=args.verbose, force=args.force)
    except (RuntimeError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 1
    print(lib)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
