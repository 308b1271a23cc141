"""What a 32 GiB partition's 4.2 GB shared-memory block costs the host, piece by piece.

    python bench/synthesis/shm_costs.py [--gb 4.17] [--workers 16] [--repeat 3]

Times (median of --repeat after one warm-up): the first touch of a new block by one process and
by N forked processes (each a slice), writing into a block whose pages exist (recycled), a
second mapping populated (MAP_POPULATE: what a reader of an existing block pays), munmap and
unlink of a populated block, zeroing a block with memset; and, where CuPy and a GPU exist,
the host-to-device copy of the block pageable and after cudaHostRegister (and the register
itself). These decide whether the engine frees each partition's block or recycles it.
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import multiprocessing
import os
import statistics
import time
from multiprocessing.shared_memory import SharedMemory

import numpy as np


def _touch_slice(name: str, nbytes: int, k: int, n: int) -> None:
    fd = os.open(f"/dev/shm/{name}", os.O_RDWR)
    mm = mmap.mmap(fd, nbytes)
    os.close(fd)
    a = np.frombuffer(mm, np.uint8)
    lo, hi = k * nbytes // n, (k + 1) * nbytes // n
    a[lo:hi:4096] = 1  # one byte a page: the cost is the page, not the bytes
    del a
    mm.close()


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=4.17)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    nbytes = int(args.gb * 1e9) // 4096 * 4096
    ctx = multiprocessing.get_context("fork")
    res: dict[str, list[float]] = {}

    def add(k: str, v: float) -> None:
        res.setdefault(k, []).append(v)

    pool = ctx.Pool(args.workers)
    try:
        for r in range(args.repeat + 1):
            shm = SharedMemory(create=True, size=nbytes)
            a = np.frombuffer(shm.buf, np.uint8)
            t1 = _timed(lambda a=a: a.__setitem__(slice(None, None, 4096), 1))
            t2 = _timed(lambda a=a: a.__setitem__(slice(None, None, 4096), 2))
            addr = a.__array_interface__["data"][0]
            t3 = _timed(lambda addr=addr: ctypes.memset(addr, 0, nbytes))
            fd = os.open(f"/dev/shm/{shm.name}", os.O_RDONLY)
            t = time.perf_counter()
            mm2 = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE, prot=mmap.PROT_READ)
            t4 = time.perf_counter() - t
            os.close(fd)
            t5 = _timed(mm2.close)
            tn = _timed(lambda shm=shm: pool.starmap(_touch_slice, [(shm.name, nbytes, k, args.workers) for k in range(args.workers)]))
            t6 = _timed(lambda shm=shm: pool.starmap(_touch_slice, [(shm.name, nbytes, k, args.workers) for k in range(args.workers)]))
            del a
            t7 = _timed(shm.close)
            t8 = _timed(shm.unlink)
            fresh = SharedMemory(create=True, size=nbytes)
            t9 = _timed(lambda f=fresh: pool.starmap(_touch_slice, [(f.name, nbytes, k, args.workers) for k in range(args.workers)]))
            fresh.close()
            fresh.unlink()
            if r:
                add("first touch, 1 process", t1)
                add("write existing pages, 1 process", t2)
                add("memset 0 (existing pages)", t3)
                add("second mapping, MAP_POPULATE", t4)
                add("munmap of that mapping", t5)
                add(f"touch by {args.workers} processes, existing pages (own mappings)", tn)
                add(f"same again, {args.workers} processes", t6)
                add(f"first touch by {args.workers} processes (fresh block)", t9)
                add("munmap of the populated block", t7)
                add("unlink (frees the pages)", t8)
    finally:
        pool.terminate()
    try:
        import cupy as cp
        host = SharedMemory(create=True, size=nbytes)
        a = np.frombuffer(host.buf, np.uint8)
        a[::4096] = 1
        src = a.ctypes.data
        dev = cp.empty(nbytes, dtype=cp.uint8)
        stream = cp.cuda.Stream(non_blocking=True)

        def h2d() -> float:
            t = time.perf_counter()
            cp.cuda.runtime.memcpyAsync(dev.data.ptr, src, nbytes, 1, stream.ptr)
            stream.synchronize()
            return time.perf_counter() - t

        h2d()
        for _ in range(args.repeat):
            add("H2D pageable", h2d())
        t = time.perf_counter()
        cp.cuda.runtime.hostRegister(src, nbytes, 0)
        add("cudaHostRegister", time.perf_counter() - t)
        h2d()
        for _ in range(args.repeat):
            add("H2D after cudaHostRegister", h2d())
        t = time.perf_counter()
        cp.cuda.runtime.hostUnregister(src)
        add("cudaHostUnregister", time.perf_counter() - t)
        del a
        host.close()
        host.unlink()
    except Exception as exc:  # no CuPy / no GPU here: the host figures alone
        print(f"(no GPU figures: {type(exc).__name__}: {exc})")
    print(f"block {nbytes / 1e9:.2f} GB, {os.cpu_count()} CPUs, median of {args.repeat} (min-max):")
    for k, v in res.items():
        print(f"  {k:62s} {statistics.median(v):7.3f} s ({min(v):.3f}-{max(v):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
