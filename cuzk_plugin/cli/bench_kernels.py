"""``cuzk-bench kernels``: time one backend primitive (MSM in G1 or G2, NTT, whole partition,
partitions from host memory started together vs one at a time) at size 2^K, print median and
spread, and the ratio to the anchor measured on the H200 (:mod:`cuzk_plugin.backends.anchors`)
where one exists. Every timed result is checked: MSMs against (sum s_i k_i) G from bases with
known discrete logarithms, NTTs by a round trip, proofs by the CPU verifier.

On cuda the inputs are made on the device (:class:`~cuzk_plugin.backends.cuda.bench.CudaBench`);
on any other backend (opencl, cpu) :class:`HostBench` makes them on the host and times the
protocol calls themselves, host arrays in and out."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_plugin.backends.anchors import anchor_ms
from cuzk_plugin.backends.protocol import ProofSums
from cuzk_plugin.backends.registry import backend_names, get_backend, probe
from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, limbs_to_ints, random_fr
from cuzk_plugin.bls12_381.points import g1_to_limbs, g2_to_limbs
from cuzk_plugin.engine.residency import DeviceMemoryTooSmall, ResidencyPlan, plan_residency
from cuzk_plugin.errors import BackendUnavailable
from cuzk_plugin.formats.pce import CsrMatrix, PrecompiledCircuit
from cuzk_plugin.groth16 import bench_circuit
from cuzk_plugin.groth16.bench_circuit import BenchSecrets, check_proof, verifying_key

#: Public inputs of the benchmark circuit's partitions (CudaBench.bench_prove's n_inputs).
BENCH_INPUTS = 16

#: Our targets (issue 4, the H200), milliseconds.
TARGETS_MS: dict[tuple[str, int], float] = {
    ("msm-g1", 24): 120.0,
    ("msm-g1", 27): 825.0,
    ("msm-g2", 27): 3000.0,
    ("ntt", 27): 35.0,
    ("prove", 27): 1500.0,
}

OPS = ("msm-g1", "msm-g2", "ntt", "ntt-inverse", "ntt-coset", "prove", "pipeline", "r1cs")


def add_kernels_command(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("kernels", help="time a backend primitive on checkable inputs")
    p.add_argument("--backend", default="cuda", choices=backend_names(),
                   help="backend to time (default: cuda; opencl and cpu time their protocol calls on host arrays)")
    p.add_argument("--op", choices=OPS, required=True,
                   help="what to time (pipeline: cuda only; r1cs: a, b, c of a synthetic Filecoin-shaped circuit)")
    p.add_argument("--log2", type=int, required=True, help="size 2^K (points, elements or constraints)")
    p.add_argument("--repeat", type=int, default=5, help="timed repetitions after one warm-up")
    p.add_argument("--window", type=int, default=0, help="cuda MSM window bits (0: chosen by size)")
    p.add_argument("--profile", action="store_true",
                   help="cuda MSM phase timings on stderr (the phases then run in turn, not overlapped)")
    p.add_argument("--frac-bits", type=float, default=None,
                   help="prove, pipeline: fraction of aux values in {0, 1} (default 0.95); msm: of scalars (default 0)")
    p.add_argument("--parts", type=int, default=3, help="pipeline: partitions per run")
    p.add_argument("--resident", type=_vector_list, default=None, metavar="VECTORS",
                   help="prove: the key vectors kept in device memory, comma separated (h,l,a,b_g1,b_g2; "
                        "'none' streams them all); the others stream from a page-locked host copy. Default: on cuda, "
                        "the daemon's residency plan for the device's free memory (or --memory-limit-gib); "
                        "elsewhere all resident")
    p.add_argument("--stream-chunk-log2", type=int, default=24, help="prove: points a streamed chunk (2^K, default 24)")
    p.add_argument("--in-flight", type=int, choices=(1, 2), default=2,
                   help="prove (cuda): partitions the device holds at once; 1 as a small card's plan sets it")
    p.add_argument("--memory-limit-gib", type=float, default=0,
                   help="prove (cuda): device memory the proofs plan with, as [gpus] device_memory_limit (0: all)")
    p.set_defaults(handler=run_kernels)


class HostBench:
    """The bench_* calls of :class:`~cuzk_plugin.backends.cuda.bench.CudaBench` for any backend
    of the protocol, on inputs made on the host: wall time of each protocol call."""

    #: Distinct bases of an MSM (tiled up to its size): k_j G for random k_j.
    DISTINCT_BASES = 256

    def __init__(self, backend: Any, seed: int | None = None):
        self.backend = backend
        self.name = backend.name
        self.rng = np.random.default_rng(seed)

    def _timed(self, fn, repeat: int) -> tuple[list[float], Any]:
        result = fn()  # warm-up (kernel builds, tables), and the result checked
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return times, result

    def bench_msm(self, log_n: int, repeat: int, *, g2: bool = False,
                  frac_bits: float = 0.0) -> tuple[list[float], bool]:
        n = 1 << log_n
        d = min(n, self.DISTINCT_BASES)
        dlogs = [int(x) for x in self.rng.integers(1, 2**62, d)]
        distinct = np.stack([_generator_multiple(k, g2) for k in dlogs])
        bases = np.ascontiguousarray(np.tile(distinct, (n // d,) + (1,) * (distinct.ndim - 1)))
        scalars = random_fr(self.rng, n)
        bits = self.rng.random(n) < frac_bits
        scalars[bits] = ints_to_limbs(self.rng.integers(2, size=int(bits.sum())).tolist())
        fn = self.backend.msm_g2 if g2 else self.backend.msm_g1
        times, got = self._timed(lambda: fn(bases, scalars), repeat)
        want = _generator_multiple(_tiled_dot(scalars, dlogs), g2)
        return times, bool(np.array_equal(got, want))

    def bench_ntt(self, log_n: int, repeat: int, *, inverse: bool = False, coset: bool = False) -> tuple[list[float], bool]:
        x = random_fr(self.rng, 1 << log_n)
        times, y = self._timed(lambda: self.backend.ntt(x, inverse=inverse, coset=coset), repeat)
        back = self.backend.ntt(y, inverse=not inverse, coset=coset)
        return times, bool(np.array_equal(back, x))

    def bench_r1cs(self, pce: PrecompiledCircuit, z: np.ndarray, repeat: int,
                   rows: np.ndarray) -> tuple[list[float], np.ndarray]:
        handle = self.backend.load_circuit(pce)
        try:
            times, (a, b, c) = self._timed(lambda: self.backend.evaluate_r1cs(handle, z), repeat)
        finally:
            handle.release()
        return times, np.stack([a[rows], b[rows], c[rows]], axis=1)

    def bench_prove(self, log_n: int, repeat: int, secrets: np.ndarray, *, n_inputs: int = 16,
                    frac_bits: float = 0.95, resident: tuple[str, ...] | None = None,
                    stream_chunk: int = 1 << 24) -> tuple[list[Any], dict[str, float]]:
        """Partitions of the benchmark circuit (bench_circuit: key built on the CPU, so keep
        log_n small) proved through load_srs / prove_start / prove_finish (``resident``: the key
        vectors kept on the device, for a backend that streams the others)."""
        from cuzk_plugin.backends.cuda.bench import BenchProveRun

        k = BenchSecrets(*limbs_to_ints(np.asarray(secrets, dtype=np.uint64)))
        key = bench_circuit.proving_key(k, log_n, n_inputs)
        if resident is None:
            srs = self.backend.load_srs(key)
        else:
            srs = self.backend.load_srs(key, resident=resident, stream_chunk=stream_chunk)
        runs = []
        for r in range(repeat + 1):
            inputs = [1] + [int(x) for x in self.rng.integers(1 << 62, size=n_inputs - 1)]
            bits = self.rng.random((1 << log_n) - n_inputs) < frac_bits
            aux = [int(b) if bit else int.from_bytes(self.rng.bytes(31), "little")
                   for b, bit in zip(self.rng.integers(2, size=bits.size), bits, strict=True)]
            part = bench_circuit.partition(inputs, aux)
            t0 = time.perf_counter()
            sums: ProofSums = self.backend.prove_finish(self.backend.prove_start(srs, part))
            ms = (time.perf_counter() - t0) * 1e3
            if r:  # the first run warms up
                w_one = bench_circuit.w_one(k, log_n, [0] * n_inputs + [y * y % R for y in aux])
                runs.append(BenchProveRun(time_ms=ms, sums=sums, inputs=inputs, w_one=w_one))
        srs.release()
        return runs, {"total": statistics.median(run.time_ms for run in runs)}


def _generator_multiple(k: int, g2: bool) -> np.ndarray:
    """k G in G1 or G2, affine canonical limbs."""
    return g2_to_limbs(G2Point() * Scalar(k)) if g2 else g1_to_limbs(G1Point() * Scalar(k))


def _tiled_dot(scalars: np.ndarray, dlogs: list[int]) -> int:
    """sum_i s_i dlogs[i mod d] mod r without a Python loop over i: per residue class j, the sum
    of the s_i as 32-bit halves (each sum fits 64 bits for fewer than 2^32 terms)."""
    d = len(dlogs)
    halves = scalars.view(np.uint32).reshape(-1, d, 8).astype(np.uint64).sum(axis=0)  # (d, 8)
    total = 0
    for j in range(d):
        s_j = sum(int(h) << (32 * i) for i, h in enumerate(halves[j]))
        total += s_j * dlogs[j]
    return total % R


#: Terms a row and how often (Filecoin: mostly one to three terms, a few long packings).
ROW_TERMS = (np.array([1, 2, 3, 8, 64]), np.array([0.5, 0.3, 0.15, 0.045, 0.005]))
#: Coefficients: 1 and -1 most of the time, powers of two, a few arbitrary (Poseidon constants).
COEFF_TABLE_SIZE = 64


def synthetic_circuit(log2: int, rng: np.random.Generator) -> tuple[PrecompiledCircuit, np.ndarray]:
    """A pre-compiled circuit of 2^log2 rows shaped like Filecoin's (as many variables as rows,
    :data:`ROW_TERMS`, a table of :data:`COEFF_TABLE_SIZE` coefficients, index 0 = 1 and 1 = -1
    chosen for 70% of the terms) and an assignment of 45% zeros, 45% ones, 10% arbitrary: made
    with numpy, no Python loop over rows."""
    m = 1 << log2
    n_in, n_vars = 16, m
    table = [1, R - 1] + [1 << int(k) for k in rng.integers(1, 254, COEFF_TABLE_SIZE // 2)]
    table += [int.from_bytes(rng.bytes(32), "little") % R for _ in range(COEFF_TABLE_SIZE - len(table))]
    mats = []
    for _ in range(3):
        lens = rng.choice(ROW_TERMS[0], size=m, p=ROW_TERMS[1]).astype(np.uint64)
        row_ptr = np.zeros(m + 1, np.uint64)
        np.cumsum(lens, out=row_ptr[1:])
        nnz = int(row_ptr[-1])
        cols = rng.integers(0, n_vars, nnz, dtype=np.uint32)
        kind = rng.random(nnz)
        coeff = np.where(kind < 0.5, 0, np.where(kind < 0.7, 1, rng.integers(2, COEFF_TABLE_SIZE, nnz))).astype(np.uint32)
        mats.append(CsrMatrix(row_ptr, cols, coeff))
    kind = rng.random(n_vars)
    z = np.zeros((n_vars, 4), np.uint64)
    z[(kind >= 0.45) & (kind < 0.9), 0] = 1
    big = np.flatnonzero(kind >= 0.9)
    z[big] = random_fr(rng, big.size)
    z[0] = (1, 0, 0, 0)
    pce = PrecompiledCircuit(
        name=f"synthetic-2^{log2}", num_inputs=n_in, num_aux=n_vars - n_in, num_constraints=m,
        coeffs=ints_to_limbs(table), a=mats[0], b=mats[1], c=mats[2],
        a_aux_density=np.ones(n_vars - n_in, bool), b_input_density=np.zeros(n_in, bool),
        b_aux_density=np.ones(n_vars - n_in, bool), digest="synthetic")
    return pce, z


def r1cs_rows_by_integers(pce: PrecompiledCircuit, z: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """a, b, c of the given rows from Python integers (the check of a benchmark run)."""
    coeffs = limbs_to_ints(np.asarray(pce.coeffs))
    out = np.zeros((rows.size, 3, 4), np.uint64)
    for i, row in enumerate(rows.tolist()):
        for k, mat in enumerate((pce.a, pce.b, pce.c)):
            lo, hi = int(mat.row_ptr[row]), int(mat.row_ptr[row + 1])
            vals = limbs_to_ints(z[mat.cols[lo:hi]])
            total = sum(coeffs[c] * v for c, v in zip(mat.coeff_idx[lo:hi].tolist(), vals, strict=True)) % R
            out[i, k] = ints_to_limbs([total])[0]
    return out


def make_bench(name: str, window: int = 0, profile: bool = False) -> Any:
    """The benchmark driver of backend ``name``; SystemExit naming the reason where it cannot run."""
    why = probe(name)
    if why is not None:
        raise SystemExit(f"cuzk-bench kernels: backend '{name}' cannot run here: {why}")
    if name == "cuda":
        from cuzk_plugin.backends.cuda.bench import CudaBench

        try:
            return CudaBench(window_bits=window, profile=profile)
        except BackendUnavailable as exc:
            raise SystemExit(f"cuzk-bench kernels: {exc}") from None
    return HostBench(get_backend(name))


def runs_on_device(bench: Any) -> bool:
    """Whether ``bench`` drives a device library (CudaBench: pipelines, residency, device memory)
    rather than a backend's protocol calls from the host (HostBench): such a bench reports its
    device's memory."""
    return hasattr(bench, "device_memory")


def _vector_list(text: str) -> tuple[str, ...]:
    """--resident's value: key vector names (or 'none')."""
    from cuzk_plugin.backends.cuda.backend import SRS_VECTORS

    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if names == ("none",):
        return ()
    bad = [n for n in names if n not in SRS_VECTORS]
    if bad:
        raise argparse.ArgumentTypeError(f"no key vector {', '.join(bad)} (one of {', '.join(SRS_VECTORS)}, or none)")
    return names


def measure(bench, op: str, log2: int, repeat: int, frac_bits: float, parts: int = 3,
            resident: tuple[str, ...] | None = None, stream_chunk: int = 1 << 24,
            in_flight: int = 2, memory_limit: int = 0) -> tuple[list[float], str]:
    """Times in ms and a one-line note (self-check or stage split)."""
    if op == "pipeline":
        if not runs_on_device(bench):
            raise SystemExit(f"cuzk-bench kernels: --op pipeline runs on cuda only, not {bench.name}")
        return measure_pipeline(bench, log2, repeat, frac_bits, parts)
    if op in ("msm-g1", "msm-g2"):
        times, ok = bench.bench_msm(log2, repeat, g2=op == "msm-g2", frac_bits=frac_bits)
        mix = f"{frac_bits:.3f} of the scalars in {{0, 1}}; " if frac_bits else ""
        return times, f"{mix}check {'ok' if ok else 'FAILED'}"
    if op.startswith("ntt"):
        times, ok = bench.bench_ntt(log2, repeat, inverse=op == "ntt-inverse", coset=op == "ntt-coset")
        return times, f"round trip {'ok' if ok else 'FAILED'}"
    if op == "r1cs":
        return measure_r1cs(bench, log2, repeat)
    return measure_prove(bench, log2, repeat, frac_bits, resident, stream_chunk, in_flight, memory_limit)


def measure_r1cs(bench, log2: int, repeat: int) -> tuple[list[float], str]:
    """a, b, c of a synthetic Filecoin-shaped circuit (:func:`synthetic_circuit`); 64 random rows
    checked against Python integers."""
    rng = np.random.default_rng()
    pce, z = synthetic_circuit(log2, rng)
    rows = np.unique(np.concatenate([[0, pce.num_constraints - 1], rng.integers(0, pce.num_constraints, 62)]))
    times, got = bench.bench_r1cs(pce, z, repeat, rows)
    ok = np.array_equal(got, r1cs_rows_by_integers(pce, z, rows))
    nnz = pce.a.nnz + pce.b.nnz + pce.c.nnz
    return times, f"{nnz} terms in A, B, C; check of {rows.size} rows {'ok' if ok else 'FAILED'}"


def bench_key_counts(log2: int, n_inputs: int = BENCH_INPUTS) -> dict[str, int]:
    """The point counts of the benchmark key the device makes (kernels/bench/instance.cu; its B
    in G1 shares A's points, counted apart here as a loaded key's would be)."""
    n = 1 << log2
    return {"ic": n_inputs, "h": n - 1, "l": n - n_inputs, "a": n, "b_g1": n - n_inputs, "b_g2": n - n_inputs}


def plan_bench_prove(log2: int, available_bytes: int, in_flight: int, stream_chunk: int) -> ResidencyPlan:
    """What the daemon would keep on a device with ``available_bytes`` for the benchmark key:
    its partitions come with a, b, c made beside them (as from the host), so the plan counts them."""
    return plan_residency(f"bench-2^{log2}", "cuda:0", bench_key_counts(log2), available_bytes=available_bytes,
                          in_flight=in_flight, min_in_flight=1, stream_chunk=stream_chunk)


def measure_prove(bench, log2: int, repeat: int, frac_bits: float, resident: tuple[str, ...] | None = None,
                  stream_chunk: int = 1 << 24, in_flight: int = 2, memory_limit: int = 0) -> tuple[list[float], str]:
    """Device times of the benchmark circuit's partitions; every proof is assembled and checked
    by the CPU verifier afterwards (and a tampered copy must fail). ``resident``: the key
    vectors kept on the device, the others streamed; None on cuda: as the residency plan for
    the device's free memory (or ``memory_limit``) has it, so that a 2^27 key larger than an
    80 GB card's room streams instead of running out of memory."""
    secrets = BenchSecrets.random()
    planned = ""
    if resident is None and runs_on_device(bench):
        try:
            plan = plan_bench_prove(log2, memory_limit or bench.device_memory()[0], in_flight, stream_chunk)
        except DeviceMemoryTooSmall as exc:
            raise SystemExit(f"cuzk-bench kernels: {exc}") from None
        if not plan.all_resident:
            resident, stream_chunk, in_flight = plan.resident, plan.stream_chunk, plan.in_flight
        planned = f"plan: {plan.describe()}; "
    streamed = {} if resident is None else {"resident": resident, "stream_chunk": stream_chunk}
    if in_flight != 2 or memory_limit:  # a small card's settings: CudaBench only
        if not runs_on_device(bench):
            raise SystemExit(f"cuzk-bench kernels: --in-flight and --memory-limit-gib are cuda's, not {bench.name}'s")
        streamed |= {"in_flight": in_flight, "memory_limit": memory_limit}
    runs, stages = bench.bench_prove(log2, repeat, secrets.limbs(), frac_bits=frac_bits, **streamed)
    checks = [check_proof(verifying_key(secrets, log2, len(r.inputs), r.w_one), r.sums, r.inputs) for r in runs]
    good = sum(c.ok for c in checks)
    split = ", ".join(f"{k} {v:.1f}" for k, v in stages.items())
    verdict = "verified" if good == len(runs) else "FAILED"
    return [r.time_ms for r in runs], (f"{planned}proofs {verdict} on the CPU: {good}/{len(runs)} (tampered copies rejected); "
                                       f"last run ms: {split}")


def measure_pipeline(bench, log2: int, repeat: int, frac_bits: float, parts: int) -> tuple[list[float], str]:
    """Overlapped totals in ms; the note compares them with the same partitions proved one at a time."""
    overlapped, serial, stages = [], [], []
    for _ in range(repeat):
        total, per_part = bench.bench_pipeline(log2, parts, overlap=True, frac_bits=frac_bits)
        overlapped.append(total)
        stages += per_part
        serial.append(bench.bench_pipeline(log2, parts, overlap=False, frac_bits=frac_bits)[0])
    ov, ser = statistics.median(overlapped), statistics.median(serial)
    split = ", ".join(f"{k} {statistics.median(s[k] for s in stages):.1f}" for k in ("upload", "total", "queue"))
    return overlapped, (f"{parts} partitions started together; serial median {ser:.2f} ms; per partition "
                        f"{ov / parts:.2f} vs {ser / parts:.2f} ms serial; overlapped/serial {ov / ser:.2f}; "
                        f"overlapped stage medians ms: {split}")


def format_report(op: str, log2: int, times: list[float], note: str, backend: str = "cuda",
                  random_scalars: bool = True) -> str:
    """One line: median and spread, and (for random scalars, the anchors' inputs) the ratios to
    the anchor and our target."""
    med = statistics.median(times)
    spread = (max(times) - min(times)) / med * 100 if med else 0.0
    line = (f"{backend} {op} 2^{log2}: median {med:.2f} ms (min {min(times):.2f}, max {max(times):.2f}, "
            f"spread {spread:.1f}%, n={len(times)})")
    anchor = anchor_ms(op, log2) if random_scalars else None
    if anchor:
        line += f"; {med / anchor:.2f}x anchor ({anchor} ms)"
    target = TARGETS_MS.get((op, log2)) if random_scalars else None
    if target and backend == "cuda":
        line += f"; target {target} ms {'met' if med <= target else 'MISSED'}"
    return f"{line}; {note}"


def run_kernels(args: argparse.Namespace) -> int:
    bench = make_bench(args.backend, window=args.window, profile=args.profile)
    msm = args.op.startswith("msm")
    frac_bits = args.frac_bits if args.frac_bits is not None else 0.0 if msm else 0.95
    times, note = measure(bench, args.op, args.log2, max(1, args.repeat), frac_bits, max(1, args.parts),
                          args.resident, 1 << max(0, args.stream_chunk_log2), args.in_flight,
                          int(args.memory_limit_gib * (1 << 30)))
    print(format_report(args.op, args.log2, times, note, backend=args.backend, random_scalars=not (msm and frac_bits)),
          flush=True)
    return 0 if "FAILED" not in note else 1
