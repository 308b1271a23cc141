"""`CudaBench`: benchmarks of the CUDA kernels on inputs made on the device, through
``libcuzk_cuda_bench.so`` (the production objects plus ``kernels/bench/``), so that 2^27
bases never cross PCIe and every result is checkable (bases with known discrete logarithms, a
benchmark circuit whose proofs the CPU verifies). Used by ``cuzk-bench kernels`` and the GPU
tests; production code never loads it.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from cuzk_plugin.backends.cuda.backend import (
    PROVE_TIMINGS,
    SRS_VECTORS,
    load_circuit_into,
    resident_mask,
    sums_from_limbs,
)
from cuzk_plugin.backends.cuda.library import call, load_bench_library, u64_ptr
from cuzk_plugin.backends.protocol import ProofSums
from cuzk_plugin.bls12_381.fields import FR_LIMBS, limbs_to_ints
from cuzk_plugin.formats.pce import PrecompiledCircuit


@dataclass
class BenchProveRun:
    """One benchmark partition: device milliseconds, the five sums, the public inputs (ONE
    first) and w(ONE) at tau (see cuzk_plugin/groth16/bench_circuit.py)."""

    time_ms: float
    sums: ProofSums
    inputs: list[int]
    w_one: int


class CudaBench:
    """The benchmark entry points on one device; ``window_bits`` (0: chosen by size) and
    ``profile`` (MSM phase timings on stderr, phases run in turn) apply to :meth:`bench_msm`."""

    name = "cuda"

    def __init__(self, device: int = 0, window_bits: int = 0, profile: bool = False):
        self.device = device
        self.window_bits = window_bits
        self.profile = profile
        self._lib = load_bench_library()
        self._context: ctypes.c_void_p | None = None

    def context(self) -> ctypes.c_void_p:
        if self._context is None:
            handle = ctypes.c_void_p()
            self._call("cz_context_create", self.device, ctypes.byref(handle))
            self._context = handle
        return self._context

    def close(self) -> None:
        if self._context is not None:
            handle, self._context = self._context, None
            self._call("cz_context_destroy", handle)

    def _call(self, name: str, *args) -> None:
        call(name, *args, lib=self._lib)

    def device_memory(self) -> tuple[int, int]:
        """(free, total) bytes of the device's memory now (what a prove benchmark plans with)."""
        free, total = ctypes.c_uint64(0), ctypes.c_uint64(0)
        self._call("cz_device_memory", self.device, ctypes.byref(free), ctypes.byref(total))
        return free.value, total.value

    def bench_msm(self, log_n: int, repeat: int, *, g2: bool = False, seed: int = 1,
                  frac_bits: float = 0.0) -> tuple[list[float], bool]:
        """Wall milliseconds of ``repeat`` MSMs of 2^log_n random bases/scalars made on the
        device (a share ``frac_bits`` of the scalars in {0, 1}, as in a Filecoin witness), and
        whether the result matched (sum s_i k_i) G."""
        times = (ctypes.c_double * max(repeat, 1))()
        ok = ctypes.c_int(0)
        self._call("cz_bench_msm", self.context(), int(g2), log_n, repeat, seed, self.window_bits, int(self.profile),
                   float(frac_bits), times, ctypes.byref(ok))
        return list(times)[:repeat], bool(ok.value)

    def msm_streamed(self, bases: np.ndarray, scalars: np.ndarray, chunk: int, *, window_bits: int = 0,
                     cancel: bool | None = False) -> tuple[np.ndarray, int, int]:
        """sum_i scalars[i] bases[i] by the streamed MSM (``msm_streamed``: the bases in page-locked
        host memory, copied to the device ``chunk`` points at a time, one Pippenger over all the
        chunks). ``bases``: ``(n, 2, 6)`` (G1) or ``(n, 2, 2, 6)`` (G2) affine canonical limbs;
        ``scalars``: ``(n, 4)`` canonical, below r; ``window_bits`` 0 chooses by size. ``cancel``:
        None runs without a cancel flag, False with one never set, True with one set before the
        call (ProveCancelled). Returns the affine canonical sum, the device bytes the memory pool
        held at the MSM's peak beyond what it held before, and ``msm_streamed_scratch_bytes``'s
        bound for the call (0 where ``window_bits`` is set)."""
        pts = np.ascontiguousarray(bases, dtype=np.uint64)
        if pts.ndim < 3 or pts.shape[1:] not in ((2, 6), (2, 2, 6)):
            raise ValueError(f"msm_streamed: bases must be (n, 2, 6) or (n, 2, 2, 6) uint64, got {pts.shape}")
        k = np.ascontiguousarray(scalars, dtype=np.uint64)
        if k.shape != (pts.shape[0], FR_LIMBS):
            raise ValueError(f"msm_streamed: {pts.shape[0]} bases but scalars of shape {k.shape}")
        g2 = pts.shape[1:] == (2, 2, 6)
        out = np.zeros(pts.shape[1:], dtype=np.uint64)
        peak, bound = ctypes.c_uint64(0), ctypes.c_uint64(0)
        mode = 0 if cancel is None else 2 if cancel else 1
        self._call("cz_bench_msm_streamed", self.context(), int(g2), u64_ptr(pts), u64_ptr(k), pts.shape[0], chunk,
                   window_bits, mode, u64_ptr(out), ctypes.byref(peak), ctypes.byref(bound))
        return out, peak.value, bound.value

    def bench_ntt(self, log_n: int, repeat: int, *, inverse: bool = False, coset: bool = False) -> tuple[list[float], bool]:
        """Event-timed milliseconds of ``repeat`` device-resident NTTs (natural in, bit-reversed
        out), and whether forward-then-inverse returned the input."""
        times = (ctypes.c_double * max(repeat, 1))()
        ok = ctypes.c_int(0)
        self._call("cz_bench_ntt", self.context(), log_n, repeat, int(inverse), int(coset), times, ctypes.byref(ok))
        return list(times)[:repeat], bool(ok.value)

    def bench_prove(self, log_n: int, repeat: int, secrets: np.ndarray, *, n_inputs: int = 16,
                    frac_bits: float = 0.95, resident: tuple[str, ...] | None = None,
                    stream_chunk: int = 1 << 24, in_flight: int = 2,
                    memory_limit: int = 0) -> tuple[list[BenchProveRun], dict[str, float]]:
        """``repeat`` whole 2^log_n-constraint partitions of the benchmark circuit
        (``kernels/bench/instance.cuh``: key from ``secrets``, ``(5, 4) uint64`` tau, alpha, beta,
        gamma, delta; a fresh witness a run, made on the device) after one warm-up: each run's
        device time and what the host needs to assemble and verify its proof; and the stage
        split of the last run. ``resident`` names the key vectors kept on the device (None:
        all); the others move to a page-locked host copy and stream in ``stream_chunk`` points.
        ``in_flight``: partitions the context holds at once (1 as a small card's plan sets it);
        ``memory_limit``: the device bytes the proofs may plan with (0: all; the key is made
        on the whole device first), as ``[gpus] device_memory_limit`` sets it."""
        keys = np.ascontiguousarray(secrets, dtype=np.uint64)
        if keys.shape != (5, FR_LIMBS):
            raise ValueError(f"bench_prove: secrets must be (5, 4) uint64, got {keys.shape}")
        times = (ctypes.c_double * max(repeat, 1))()
        stages = (ctypes.c_double * 6)()
        sums = np.zeros((max(repeat, 1), 72), dtype=np.uint64)
        inputs = np.zeros((max(repeat, 1), n_inputs, FR_LIMBS), dtype=np.uint64)
        w_one = np.zeros((max(repeat, 1), FR_LIMBS), dtype=np.uint64)
        self._call("cz_context_set_partitions_in_flight", self.context(), in_flight)
        self._call("cz_context_set_memory_limit", self.context(), memory_limit)
        self._call("cz_bench_prove", self.context(), log_n, repeat, frac_bits, n_inputs, u64_ptr(keys),
                   resident_mask(SRS_VECTORS if resident is None else resident), stream_chunk, times, stages,
                   u64_ptr(sums), u64_ptr(inputs), u64_ptr(w_one))
        runs = [BenchProveRun(time_ms=times[r], sums=sums_from_limbs(sums[r]), inputs=limbs_to_ints(inputs[r]),
                              w_one=limbs_to_ints(w_one[r])[0]) for r in range(repeat)]
        stage_names = (*PROVE_TIMINGS[:4], "msm_in_turn", "msm_paired")  # the device's, and how its MSMs ran
        return runs, dict(zip(stage_names, list(stages), strict=True))

    def bench_pipeline(self, log_n: int, parts: int, *, overlap: bool,
                       frac_bits: float = 0.95) -> tuple[float, list[dict[str, float]]]:
        """Wall milliseconds to prove ``parts`` synthetic 2^log_n partitions from host memory
        (device-made key; witnesses made on the device, then copied to pageable host memory so
        uploads are timed), started all at once (``overlap``) or one at a time, and each
        partition's stage split (keys as :attr:`CudaPending.timings_ms`)."""
        k = len(PROVE_TIMINGS)
        total = ctypes.c_double(0)
        per_part = (ctypes.c_double * (k * max(parts, 1)))()
        self._call("cz_bench_pipeline", self.context(), log_n, parts, frac_bits, int(overlap), ctypes.byref(total),
                   per_part)
        vals = list(per_part)
        return total.value, [dict(zip(PROVE_TIMINGS, vals[i * k:(i + 1) * k], strict=True)) for i in range(parts)]

    def bench_r1cs(self, pce: PrecompiledCircuit, z: np.ndarray, repeat: int,
                   rows: np.ndarray) -> tuple[list[float], np.ndarray]:
        """Event-timed milliseconds of ``repeat`` evaluations a, b, c = A z, B z, C z of ``pce``
        resident on the device (z uploaded once), and rows ``rows`` of the last one:
        ``(len(rows), 3, 4) uint64`` (a, b, c of each row) for the caller to check."""
        handle, _, _ = load_circuit_into(self.context(), pce, lib=self._lib)
        try:
            zz = np.ascontiguousarray(z, dtype=np.uint64)
            idx = np.ascontiguousarray(rows, dtype=np.uint64)
            out = np.zeros((idx.shape[0], 3, FR_LIMBS), dtype=np.uint64)
            times = (ctypes.c_double * max(repeat, 1))()
            self._call("cz_bench_r1cs", self.context(), handle, u64_ptr(zz), zz.shape[0], repeat, times, u64_ptr(idx),
                       idx.shape[0], u64_ptr(out))
        finally:
            self._call("cz_circuit_free", handle)
        return list(times)[:repeat], out

    def point_adds(self, batch: int, log_n: int, log_adds: int, repeat: int) -> tuple[list[float], bool]:
        """Event-timed milliseconds of ``repeat`` runs of 2^log_adds G1 additions over 2^log_n
        random points as a bucket loop makes them: mixed XYZZ (``batch`` 0) or affine in batches
        of ``batch`` (8, 16, 32, 64) sharing one inversion; and whether the sum was right."""
        times = (ctypes.c_double * max(repeat, 1))()
        ok = ctypes.c_int(0)
        self._call("cz_bench_point_adds", self.context(), batch, log_n, log_adds, repeat, times, ctypes.byref(ok))
        return list(times)[:repeat], bool(ok.value)

    def mapped_gather(self, log_n: int, permille: int, repeat: int) -> tuple[list[float], list[float], int, bool]:
        """Event-timed milliseconds of ``repeat`` bulk copies of 2^log_n 96-byte records from
        page-locked host memory, and of ``repeat`` device reads (through the mapped address) of
        the records kept with probability ``permille`` / 1000; how many were kept, and whether
        they arrived intact."""
        copy, gather = (ctypes.c_double * max(repeat, 1))(), (ctypes.c_double * max(repeat, 1))()
        selected, ok = ctypes.c_uint64(0), ctypes.c_int(0)
        self._call("cz_bench_mapped_gather", self.context(), log_n, permille, repeat, copy, gather,
                   ctypes.byref(selected), ctypes.byref(ok))
        return list(copy)[:repeat], list(gather)[:repeat], selected.value, bool(ok.value)

    def msm_mapped(self, log_n: int, frac_bits: float, repeat: int) -> tuple[dict[str, list[float]], bool]:
        """Milliseconds of ``repeat`` G1 MSMs of 2^log_n random points (``frac_bits`` of the
        scalars 0 or 1) three ways: ``resident``, ``streamed`` from page-locked memory in chunks,
        and ``mapped`` (msm_device reading that memory through its mapped address); and whether
        all three sums were right."""
        names = ("resident", "streamed", "mapped")
        times = [(ctypes.c_double * max(repeat, 1))() for _ in names]
        ok = ctypes.c_int(0)
        self._call("cz_bench_msm_mapped", self.context(), log_n, frac_bits, repeat, *times, ctypes.byref(ok))
        return {name: list(t)[:repeat] for name, t in zip(names, times, strict=True)}, bool(ok.value)

    def host_affine_batch_selftest(self) -> int:
        """The batch-affine additions checked against mixed XYZZ ones on the host (copies,
        doublings, P + (-P), identities); how many checks ran."""
        checks = ctypes.c_uint64(0)
        self._call("cz_host_affine_batch_selftest", ctypes.byref(checks))
        return checks.value

    def host_mul_generator(self, k: np.ndarray, *, g2: bool) -> np.ndarray:
        """k * G (G1 or G2) with the kernels' field and curve code run on the host (no GPU):
        k canonical ``(4,) uint64``, result affine canonical ``(2, 6)`` / ``(2, 2, 6)``."""
        limbs = np.ascontiguousarray(k, dtype=np.uint64).copy()
        out = np.zeros((2, 2, 6) if g2 else (2, 6), np.uint64)
        self._call("cz_host_mul_generator", int(g2), u64_ptr(limbs), u64_ptr(out))
        return out

    def host_curve_selftest(self) -> int:
        """The kernels' curve equation and mixed additions checked on the host; how many checks ran."""
        checks = ctypes.c_uint64(0)
        self._call("cz_host_curve_selftest", ctypes.byref(checks))
        return checks.value
