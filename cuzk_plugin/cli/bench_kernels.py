"""``cuzk-bench kernels``: time one backend primitive (MSM in G1 or G2, NTT, whole partition,
partitions from host memory started together vs one at a time) at size 2^K on inputs made on
the device, print median and spread, and the ratio to the anchor measured on the H200
(../shared/anchors.md) where one exists."""

from __future__ import annotations

import argparse
import statistics

from cuzk_plugin.backends.registry import get_backend
from cuzk_plugin.errors import BackendUnavailable
from cuzk_plugin.groth16.bench_circuit import BenchSecrets, check_proof, verifying_key

#: Anchor medians in milliseconds (sppark on an H200, 2026-12-02), by (op, log2 size).
ANCHORS_MS: dict[tuple[str, int], float] = {
    ("msm-g1", 20): 21.8,
    ("msm-g1", 22): 54.2,
    ("msm-g1", 24): 160.0,
    ("msm-g1", 26): 559.0,
    ("msm-g1", 27): 1099.0,
    ("ntt", 24): 4.43,
    ("ntt", 26): 21.0,
    ("ntt", 27): 42.4,
    ("ntt-inverse", 24): 4.67,
    ("ntt-inverse", 26): 23.6,
    ("ntt-inverse", 27): 44.3,
    ("ntt-coset", 24): 5.01,
    ("ntt-coset", 26): 24.9,
    ("ntt-coset", 27): 46.5,
}

#: Our targets (issue 4), milliseconds.
TARGETS_MS: dict[tuple[str, int], float] = {
    ("msm-g1", 24): 120.0,
    ("msm-g1", 27): 825.0,
    ("msm-g2", 27): 3000.0,
    ("ntt", 27): 35.0,
    ("prove", 27): 1500.0,
}

OPS = ("msm-g1", "msm-g2", "ntt", "ntt-inverse", "ntt-coset", "prove", "pipeline")


def add_kernels_command(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("kernels", help="time a backend primitive on device-made inputs")
    p.add_argument("--backend", default="cuda", help="backend name (only backends with bench_* methods)")
    p.add_argument("--op", choices=OPS, required=True)
    p.add_argument("--log2", type=int, required=True, help="size 2^K (points, elements or constraints)")
    p.add_argument("--repeat", type=int, default=5, help="timed repetitions after one warm-up")
    p.add_argument("--window", type=int, default=0, help="MSM window bits (0: chosen by size)")
    p.add_argument("--frac-bits", type=float, default=0.95, help="prove: fraction of aux values in {0, 1}")
    p.add_argument("--parts", type=int, default=3, help="pipeline: partitions per run")
    p.set_defaults(handler=run_kernels)


def measure(backend, op: str, log2: int, repeat: int, frac_bits: float, parts: int = 3) -> tuple[list[float], str]:
    """Times in ms and a one-line note (self-check or stage split)."""
    if op == "pipeline":
        return measure_pipeline(backend, log2, repeat, frac_bits, parts)
    if op in ("msm-g1", "msm-g2"):
        times, ok = backend.bench_msm(log2, repeat, g2=op == "msm-g2")
        return times, f"check {'ok' if ok else 'FAILED'}"
    if op.startswith("ntt"):
        times, ok = backend.bench_ntt(log2, repeat, inverse=op == "ntt-inverse", coset=op == "ntt-coset")
        return times, f"round trip {'ok' if ok else 'FAILED'}"
    return measure_prove(backend, log2, repeat, frac_bits)


def measure_prove(backend, log2: int, repeat: int, frac_bits: float) -> tuple[list[float], str]:
    """Device times of the benchmark circuit's partitions; every proof is assembled and checked
    by the CPU verifier afterwards (and a tampered copy must fail)."""
    secrets = BenchSecrets.random()
    runs, stages = backend.bench_prove(log2, repeat, secrets.limbs(), frac_bits=frac_bits)
    checks = [check_proof(verifying_key(secrets, log2, len(r.inputs), r.w_one), r.sums, r.inputs) for r in runs]
    good = sum(c.ok for c in checks)
    split = ", ".join(f"{k} {v:.1f}" for k, v in stages.items())
    verdict = "verified" if good == len(runs) else "FAILED"
    return [r.time_ms for r in runs], (f"proofs {verdict} on the CPU: {good}/{len(runs)} (tampered copies rejected); "
                                       f"last run ms: {split}")


def measure_pipeline(backend, log2: int, repeat: int, frac_bits: float, parts: int) -> tuple[list[float], str]:
    """Overlapped totals in ms; the note compares them with the same partitions proved one at a time."""
    overlapped, serial, stages = [], [], []
    for _ in range(repeat):
        total, per_part = backend.bench_pipeline(log2, parts, overlap=True, frac_bits=frac_bits)
        overlapped.append(total)
        stages += per_part
        serial.append(backend.bench_pipeline(log2, parts, overlap=False, frac_bits=frac_bits)[0])
    ov, ser = statistics.median(overlapped), statistics.median(serial)
    split = ", ".join(f"{k} {statistics.median(s[k] for s in stages):.1f}" for k in ("upload", "total", "queue"))
    return overlapped, (f"{parts} partitions started together; serial median {ser:.2f} ms; per partition "
                        f"{ov / parts:.2f} vs {ser / parts:.2f} ms serial; overlapped/serial {ov / ser:.2f}; "
                        f"overlapped stage medians ms: {split}")


def format_report(op: str, log2: int, times: list[float], note: str) -> str:
    med = statistics.median(times)
    spread = (max(times) - min(times)) / med * 100 if med else 0.0
    line = f"{op} 2^{log2}: median {med:.2f} ms (min {min(times):.2f}, max {max(times):.2f}, spread {spread:.1f}%, n={len(times)})"
    anchor = ANCHORS_MS.get((op, log2))
    if anchor:
        line += f"; {med / anchor:.2f}x anchor ({anchor} ms)"
    target = TARGETS_MS.get((op, log2))
    if target:
        line += f"; target {target} ms {'met' if med <= target else 'MISSED'}"
    return f"{line}; {note}"


def run_kernels(args: argparse.Namespace) -> int:
    try:
        backend = get_backend(args.backend)
    except BackendUnavailable as exc:
        raise SystemExit(f"cuzk-bench kernels: {exc}") from None
    if not hasattr(backend, "bench_msm"):
        raise SystemExit(f"backend '{backend.name}' has no device benchmarks")
    if args.window:
        backend.window_bits = args.window
    times, note = measure(backend, args.op, args.log2, max(1, args.repeat), args.frac_bits, max(1, args.parts))
    print(format_report(args.op, args.log2, times, note), flush=True)
    return 0 if "FAILED" not in note else 1
