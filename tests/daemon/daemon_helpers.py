"""Test doubles for the daemon suite: backends with injected faults or delays, a slow
synthesis provider, circom file writers, and client-side verification of synthetic proofs.

Everything a synthesis worker process unpickles lives at module level here (the workers get
the test session's sys.path)."""

from __future__ import annotations

import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cuzk_plugin.adapters.synthetic import SyntheticProvider, SyntheticTask, synthetic_circuit_id
from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.backends.protocol import ProofSums
from cuzk_plugin.bls12_381.fields import R, limbs_to_ints
from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.config import Config, load_config
from cuzk_plugin.engine.circuits import JobPlan, ProviderRegistry
from cuzk_plugin.engine.types import ProofRequest
from cuzk_plugin.errors import BackendError, DeviceOutOfMemory, TransientBackendError
from cuzk_plugin.formats.params import VerifyingKey
from cuzk_plugin.formats.proof import decode_proofs
from cuzk_plugin.groth16.verifier import batch_verify
from cuzk_plugin.server.proto import cuzk_pb2 as pb


# -- backends --------------------------------------------------------------------------------
class CountingBackend(CpuBackend):
    """The cpu backend, counting prove_start calls (thread-safe)."""

    name = "cpu"

    def __init__(self, name: str = "cpu") -> None:
        self.name = name
        self.calls = 0
        self._lock = threading.Lock()

    def _count(self) -> int:
        with self._lock:
            self.calls += 1
            return self.calls


class SlowBackend(CountingBackend):
    """prove_start sleeps ``delay`` seconds first (a long GPU partition)."""

    def __init__(self, delay: float, name: str = "slow") -> None:
        super().__init__(name)
        self.delay = delay
        self.running = threading.Event()

    def prove_start(self, srs, part):
        self._count()
        self.running.set()
        time.sleep(self.delay)
        return super().prove_start(srs, part)


class FlakyBackend(CountingBackend):
    """Fails the first ``failures`` prove_start calls with a transient fault."""

    def __init__(self, failures: int, name: str = "flaky") -> None:
        super().__init__(name)
        self.failures = failures

    def prove_start(self, srs, part):
        if self._count() <= self.failures:
            raise TransientBackendError(f"injected transient fault #{self.calls}")
        return super().prove_start(srs, part)


class BrokenBackend(CountingBackend):
    """Every prove_start fails permanently."""

    def __init__(self, message: str = "injected: device lost", name: str = "broken") -> None:
        super().__init__(name)
        self.message = message

    def prove_start(self, srs, part):
        self._count()
        raise BackendError(self.message)


class TightMemoryBackend(CountingBackend):
    """A device with memory for one partition at a time: a partition started while another is in
    flight runs out of device memory (as a 2^27 WindowPoSt partition beside another does on an
    H200 holding its 73 GB key). Records the most partitions it saw in flight at once."""

    def __init__(self, name: str = "tight") -> None:
        super().__init__(name)
        self.in_flight = 0
        self.most_in_flight = 0
        self.out_of_memory = 0

    def prove_start(self, srs, part):
        self._count()
        with self._lock:
            if self.in_flight:
                self.out_of_memory += 1
                raise DeviceOutOfMemory("injected: out of memory (cudaErrorMemoryAllocation, 2)")
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(0.2)  # long enough for the other worker to try beside it
        return super().prove_start(srs, part)

    def prove_finish(self, pending) -> ProofSums:
        try:
            return super().prove_finish(pending)
        finally:
            with self._lock:
                self.in_flight -= 1


class WrongProofBackend(CountingBackend):
    """Returns sums with H replaced by L: a well-formed proof that does not verify."""

    def __init__(self, name: str = "liar") -> None:
        super().__init__(name)

    def prove_finish(self, pending) -> ProofSums:
        self._count()
        sums = super().prove_finish(pending)
        return ProofSums(h=sums.l, l=sums.l, a=sums.a, b_g1=sums.b_g1, b_g2=sums.b_g2)


# -- slow synthesis --------------------------------------------------------------------------
@dataclass(frozen=True)
class SlowSyntheticTask(SyntheticTask):
    delay: float = 1.0

    def synthesize(self):
        time.sleep(self.delay)
        return super().synthesize()


class SlowSyntheticProvider(SyntheticProvider):
    """SYNTHETIC partitions whose synthesis takes ``delay`` seconds each."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def plan(self, request: ProofRequest, param_cache: Path) -> JobPlan:
        plan = super().plan(request, param_cache)
        return JobPlan(plan.circuit_id, tuple(SlowSyntheticTask(t.log2, t.seed, self.delay) for t in plan.tasks))


@dataclass(frozen=True)
class ShareRecordingTask(SlowSyntheticTask):
    """Writes the processes its worker let it use (``task_processes()``) to ``record/<seed>``."""

    record: str = ""

    def synthesize(self):
        from cuzk_plugin.engine.workers import task_processes

        Path(self.record, str(self.seed)).write_text(str(task_processes()))
        return super().synthesize()


class ShareRecordingProvider(SyntheticProvider):
    """SYNTHETIC partitions of ``delay`` seconds that record their process share in ``record``."""

    def __init__(self, delay: float, record: Path) -> None:
        self.delay, self.record = delay, record

    def plan(self, request: ProofRequest, param_cache: Path) -> JobPlan:
        plan = super().plan(request, param_cache)
        return JobPlan(plan.circuit_id,
                       tuple(ShareRecordingTask(t.log2, t.seed, self.delay, str(self.record)) for t in plan.tasks))


def slow_synthesis_registry(delay: float) -> ProviderRegistry:
    reg = ProviderRegistry(load_plugins=False)
    reg.register(SlowSyntheticProvider(delay))
    return reg


# -- client-side verification ---------------------------------------------------------------
def synthetic_public_inputs(log2: int, seed: int) -> list[int]:
    _, inputs, _ = filecoin_like(1 << log2, seed=seed).finish()
    return limbs_to_ints(inputs)[1:]


def verify_synthetic(param_cache: Path, log2: int, first_seed: int, proof: bytes) -> bool:
    """Decode the concatenated proofs and batch-verify them against the cached key."""
    vk = VerifyingKey.load(param_cache / f"{synthetic_circuit_id(log2)}.params")
    proofs = decode_proofs(proof)
    return batch_verify(vk, proofs, [synthetic_public_inputs(log2, first_seed + p) for p in range(len(proofs))])


# -- circom files ------------------------------------------------------------------------------
def _section(stype: int, data: bytes) -> bytes:
    return struct.pack("<IQ", stype, len(data)) + data


def write_circom_r1cs(path: Path, r1cs) -> None:
    """Our R1CS as a circom .r1cs (bls12381 prime; wires = our variables, ONE first)."""
    field = struct.pack("<I", 32) + R.to_bytes(32, "little")
    n_pub = r1cs.num_inputs - 1
    header = field + struct.pack("<IIIIQI", r1cs.num_vars, 0, n_pub, 0, r1cs.num_vars, r1cs.num_constraints)
    body = bytearray()
    for j in range(r1cs.num_constraints):
        for mat in (r1cs.a, r1cs.b, r1cs.c):
            idx = np.flatnonzero(mat.rows == j)
            body += struct.pack("<I", len(idx))
            for i in idx:
                body += struct.pack("<I", int(mat.cols[i])) + int(mat.coeffs[i]).to_bytes(32, "little")
    path.write_bytes(b"r1cs" + struct.pack("<II", 1, 2) + _section(1, header) + _section(2, bytes(body)))


def circom_wtns(inputs: np.ndarray, aux: np.ndarray) -> bytes:
    """A circom .wtns from our input (ONE first) and aux limb arrays."""
    values = np.concatenate([inputs, aux]).astype("<u8")
    header = struct.pack("<I", 32) + R.to_bytes(32, "little") + struct.pack("<I", values.shape[0])
    return b"wtns" + struct.pack("<II", 2, 2) + _section(1, header) + _section(2, values.tobytes())


# -- config and requests ---------------------------------------------------------------------
def daemon_config(param_cache: Path, **sections) -> Config:
    base = {"srs": {"param_cache": str(param_cache)}, "daemon": {"status_listen": ""}, "synthesis": {"threads": 2},
            "gpus": {"backend": "cpu"}, "memory": {"total_budget": "4GiB", "safety_margin": 0}}
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return load_config(None, base)


def synthetic_request(request_id: str, log2: int = 4, partitions: int = 1, seed: int = 0,
                      priority: int = 0) -> pb.SubmitProofRequest:
    return pb.SubmitProofRequest(request_id=request_id, proof_kind=pb.SYNTHETIC, priority=priority,
                                 synthetic=pb.SyntheticInput(log2_constraints=log2, partitions=partitions, seed=seed))


class StageTimedBackend(CountingBackend):
    """The cpu backend reporting CUDA-like stage times (ms) for each call, as CudaPending does."""

    def __init__(self, name: str = "timed") -> None:
        super().__init__(name)
        self.stages = {"h": 3.0, "g1_msm": 5.0, "g2_wait": 1.0, "total": 12.0, "upload": 2.0, "queue": 0.0,
                       "r1cs": 4.0, "msm_in_turn": 0.0, "msm_paired": 0.0, "h_lean": 0.0,
                       "upload_handed_on": 0.0, "abc_alloc": 0.5, "release": 0.5, "upload_wait": 1.5, "h_msm": 3.0}

    def prove_finish(self, pending) -> ProofSums:
        sums = super().prove_finish(pending)
        time.sleep(0.03)  # the stages above fit in the call
        pending.timings_ms = dict(self.stages)
        return sums
