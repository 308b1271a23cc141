"""Kernel timings of the OpenCL backend, optionally against the cpu backend, as ratios.

    python -m cuzk_plugin.backends.opencl.bench --msm-g1 16 --ntt 16 --compare-cpu
    python -m cuzk_plugin.backends.opencl.bench --msm-g1 20 24 --ntt 24 26 --repeat 5

Timings follow the anchors' rules (shared/anchors.md): bases and scalars already resident on
the device, median of repeated calls after a warm-up, MSM times include the host's
histogram prefix sum. Large MSM bases are 4096 random points tiled (the kernels do the
same work for repeated bases), so setting up 2^24 points takes seconds, not hours.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import time
from typing import Any

import numpy as np

from cuzk_plugin.backends.anchors import anchor_ms
from cuzk_plugin.bls12_381.fields import random_fr

DISTINCT_BASES = 4096


def _median_spread(times: list[float]) -> dict:
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "runs": len(times)}


def _with_anchor(row: dict) -> dict:
    """Adds the ratio to sppark's H200 time where the anchors list this size (sppark's NTT ends
    in bit-reversed order, ours in natural order: one permutation pass more)."""
    ref = anchor_ms(row["op"].replace("_", "-"), row["log_n"])
    if ref is not None:
        row["opencl_over_sppark_h200"] = row["opencl"]["median_s"] * 1e3 / ref
    return row


def _timed(fn, repeat: int) -> list[float]:
    fn()  # warm-up: kernel builds, twiddle tables, allocator
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def random_bases(group: int, n: int, rng: np.random.Generator) -> np.ndarray:
    from py_arkworks_bls12381 import G1Point, G2Point, Scalar

    from cuzk_plugin.bls12_381.points import g1_to_limbs, g2_to_limbs

    distinct = min(n, DISTINCT_BASES)
    ks = [Scalar(int(k)) for k in rng.integers(1, 2**62, distinct)]
    limbs: np.ndarray  # (distinct, 2, 6) or (distinct, 2, 2, 6) uint64
    if group == 1:
        limbs = g1_to_limbs([G1Point() * k for k in ks]).reshape(distinct, 2, 6)
    else:
        limbs = g2_to_limbs([G2Point() * k for k in ks]).reshape(distinct, 2, 2, 6)
    reps = -(-n // distinct)
    return np.ascontiguousarray(np.tile(limbs, (reps,) + (1,) * (limbs.ndim - 1))[:n])


def bench_msm(backend, group: int, log_n: int, repeat: int, compare_cpu: bool, rng) -> dict:
    n = 1 << log_n
    bases, scalars = random_bases(group, n, rng), random_fr(rng, n)
    drv = backend._g1 if group == 1 else backend._g2
    from cuzk_plugin.backends.opencl.launch import upload

    d_bases = drv.points_to_device(bases)
    d_scalars = upload(backend.context, backend.queue, scalars)
    backend.queue.finish()
    row: dict[str, Any] = {"op": f"msm_g{group}", "log_n": log_n, "opencl": _median_spread(_timed(lambda: drv.msm(d_bases, d_scalars, n), repeat))}
    if compare_cpu:
        from cuzk_plugin.backends.cpu import CpuBackend

        cpu = CpuBackend()
        fn = cpu.msm_g1 if group == 1 else cpu.msm_g2
        row["cpu"] = _median_spread(_timed(lambda: fn(bases, scalars), repeat))
        row["cpu_over_opencl"] = row["cpu"]["median_s"] / row["opencl"]["median_s"]
    return _with_anchor(row)


def bench_ntt(backend, log_n: int, repeat: int, compare_cpu: bool, rng) -> dict:
    n = 1 << log_n
    x = random_fr(rng, n)
    drv = backend._ntt
    d_x = drv.upload_fr(x)

    def run():
        out = drv.transform(d_x, n)
        backend.queue.finish()
        out.release()

    row: dict[str, Any] = {"op": "ntt", "log_n": log_n, "opencl": _median_spread(_timed(run, repeat))}
    if compare_cpu:
        from cuzk_plugin.backends.cpu import CpuBackend

        cpu = CpuBackend()
        row["cpu"] = _median_spread(_timed(lambda: cpu.ntt(x), repeat))
        row["cpu_over_opencl"] = row["cpu"]["median_s"] / row["opencl"]["median_s"]
    return _with_anchor(row)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--msm-g1", type=int, nargs="*", default=[], metavar="LOG_N")
    parser.add_argument("--msm-g2", type=int, nargs="*", default=[], metavar="LOG_N")
    parser.add_argument("--ntt", type=int, nargs="*", default=[], metavar="LOG_N")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--compare-cpu", action="store_true", help="also time the cpu backend (ratio = cpu / opencl)")
    parser.add_argument("--device", default=None, help="device index or name substring (else CUZK_OPENCL_DEVICE)")
    parser.add_argument("--limb-bits", type=int, default=None, choices=(32, 64), help="field limb width (default: per device)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    from cuzk_plugin.backends.opencl import OpenclBackend

    device = int(args.device) if args.device and args.device.isdigit() else args.device
    backend = OpenclBackend(device=device, limb_bits=args.limb_bits)
    rng = np.random.default_rng(args.seed)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=False).stdout.strip()
    except OSError:
        commit = "unknown"
    header = {"device": backend.devices()[0].name, "limb_bits": backend.limb_bits, "platform": backend.device.platform.name.strip(),
              "host": platform.node(), "commit": commit, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    print(json.dumps(header), flush=True)
    for log_n in args.ntt:
        print(json.dumps(bench_ntt(backend, log_n, args.repeat, args.compare_cpu, rng)), flush=True)
    for log_n in args.msm_g1:
        print(json.dumps(bench_msm(backend, 1, log_n, args.repeat, args.compare_cpu, rng)), flush=True)
    for log_n in args.msm_g2:
        print(json.dumps(bench_msm(backend, 2, log_n, args.repeat, args.compare_cpu, rng)), flush=True)


if __name__ == "__main__":
    main()
