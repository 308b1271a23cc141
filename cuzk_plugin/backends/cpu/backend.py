"""`CpuBackend`: the reference every other backend is checked against."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_plugin.backends.cpu.keygen import input_sums, proving_key_from_qap, qap_from_pce
from cuzk_plugin.backends.cpu.r1cs_eval import CoefficientTable, SplitMatrix, evaluate_r1cs
from cuzk_plugin.backends.protocol import CircuitHandle, DeviceInfo, ProofSums
from cuzk_plugin.bls12_381.fields import FR_LIMBS, ints_to_limbs, limbs_to_objects
from cuzk_plugin.bls12_381.ntt import ntt_objects, quotient_h_objects
from cuzk_plugin.bls12_381.points import (
    g1_from_limbs,
    g1_limbs_to_xy_bytes,
    g1_raw_to_limbs,
    g1_to_limbs,
    g2_from_limbs,
    g2_limbs_to_arkworks_bytes,
    g2_raw_to_limbs,
    g2_to_limbs,
)
from cuzk_plugin.errors import EncodingError, ProveCancelled
from cuzk_plugin.formats.params import ProvingKey, SetupSecrets
from cuzk_plugin.formats.partition import SynthesizedPartition, WitnessPartition
from cuzk_plugin.formats.pce import PrecompiledCircuit


def scalars_from_limbs(scalars: np.ndarray) -> list[Scalar]:
    """``(n, 4) uint64`` canonical Fr -> arkworks Scalars (values must already be < r)."""
    raw = np.ascontiguousarray(scalars, dtype="<u8").tobytes()
    return [Scalar.from_le_bytes_mod_order(raw[i : i + 32]) for i in range(0, len(raw), 32)]


#: Points per arkworks call in a partition's MSMs, by group: a cancel is seen between chunks
#: (each ~0.3 s or less on one core; a G2 addition costs ~3 G1 ones).
MSM_CHUNK = {G1Point: 1 << 12, G2Point: 1 << 10}


def _msm(group, bases: list, scalars: np.ndarray, between: Callable[[], None] | None = None):
    """sum scalars[i] * bases[i]; with ``between``, in chunks of MSM_CHUNK[group] points,
    calling it before each (a cancellation check may raise there)."""
    if len(bases) != scalars.shape[0]:
        # arkworks silently truncates mismatched lists; refuse instead.
        raise ValueError(f"MSM: {len(bases)} bases but {scalars.shape[0]} scalars")
    if not bases:
        return group.identity()
    if between is None:
        return group.multiexp_unchecked(bases, scalars_from_limbs(scalars))
    acc = group.identity()
    chunk = MSM_CHUNK[group]
    for start in range(0, len(bases), chunk):
        between()
        stop = start + chunk
        acc = acc + group.multiexp_unchecked(bases[start:stop], scalars_from_limbs(scalars[start:stop]))
    return acc


def _points_from_raw(group, data: bytes, width: int, what: str) -> list:
    """Decode checked-structure uncompressed points (curve equation checked by arkworks);
    arkworks reads all-zero xy bytes as the identity, which is what flagged identities become."""
    out = []
    for i in range(0, len(data), width):
        try:
            out.append(group.from_xy_bytes_unchecked_be(data[i : i + width]))
        except Exception as exc:
            raise EncodingError(f"{what}[{i // width}]: not on the curve") from exc
    return out


def g1_points_from_raw(raw: np.ndarray, what: str) -> list[G1Point]:
    """Uncompressed Filecoin G1 bytes ``(n, 96)`` -> arkworks points."""
    return _points_from_raw(G1Point, g1_limbs_to_xy_bytes(g1_raw_to_limbs(raw)).tobytes(), 96, what)


def g2_points_from_raw(raw: np.ndarray, what: str) -> list[G2Point]:
    """Uncompressed Filecoin G2 bytes ``(n, 192)`` (c1 first) -> arkworks points."""
    return _points_from_raw(G2Point, g2_limbs_to_arkworks_bytes(g2_raw_to_limbs(raw)).tobytes(), 192, what)


@dataclass
class CpuSrs:
    """A proving key decoded into arkworks points."""

    h: list
    l: list
    a: list
    b_g1: list
    b_g2: list
    nbytes: int
    released: bool = field(default=False)

    def release(self) -> None:
        self.h = self.l = self.a = self.b_g1 = self.b_g2 = []
        self.released = True


@dataclass
class CpuCircuit:
    """A pre-compiled circuit prepared for :func:`evaluate_r1cs` (coefficient forms, one-term
    rows split off); the matrices stay memory-mapped."""

    circuit: PrecompiledCircuit
    table: CoefficientTable
    split: tuple
    nbytes: int
    #: Never: the host is the device here, so nothing streams.
    streamed: bool = False
    host_bytes: int = 0

    def release(self) -> None:
        self.split = ()


@dataclass
class CpuPending:
    """A partition :meth:`CpuBackend.prove_finish` proves on its caller's thread, checking
    ``cancel`` (set by prove_cancel) between stages and MSM chunks."""

    srs: CpuSrs
    part: SynthesizedPartition | WitnessPartition
    cancel: threading.Event = field(default_factory=threading.Event)

    def check(self) -> None:
        if self.cancel.is_set():
            raise ProveCancelled("partition cancelled (prove_cancel)")


def witness_to_synthesized(part: WitnessPartition, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> SynthesizedPartition:
    """The SynthesizedPartition of a witness whose a, b, c were evaluated from its circuit."""
    return SynthesizedPartition(
        a=a, b=b, c=c, input_assignment=part.input_assignment, aux_assignment=part.aux_assignment,
        a_aux_density=part.a_aux_density, b_input_density=part.b_input_density, b_aux_density=part.b_aux_density,
    )


class CpuBackend:
    """Reference backend. Slow, simple, and the oracle for the conformance suite."""

    name = "cpu"

    def devices(self) -> list[DeviceInfo]:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return [DeviceInfo(index=0, name=f"host CPU ({os.cpu_count()} cores)", memory_bytes=mem, kind="cpu")]

    # -- primitives --------------------------------------------------------------------
    def ntt(self, x: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
        return ints_to_limbs(ntt_objects(limbs_to_objects(x), inverse=inverse, coset=coset), FR_LIMBS)

    def quotient_h(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        h = quotient_h_objects(limbs_to_objects(a), limbs_to_objects(b), limbs_to_objects(c))
        return ints_to_limbs(h, FR_LIMBS)

    def msm_g1(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        return g1_to_limbs(_msm(G1Point, g1_from_limbs(bases), scalars))

    def msm_g2(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        return g2_to_limbs(_msm(G2Point, g2_from_limbs(bases), scalars))

    # -- proving -------------------------------------------------------------------------
    def load_srs(self, key: ProvingKey, device: int = 0) -> CpuSrs:
        return CpuSrs(
            h=g1_points_from_raw(key.h, "h"),
            l=g1_points_from_raw(key.l, "l"),
            a=g1_points_from_raw(key.a, "a"),
            b_g1=g1_points_from_raw(key.b_g1, "b_g1"),
            b_g2=g2_points_from_raw(key.b_g2, "b_g2"),
            nbytes=key.vectors_nbytes,
        )

    def load_circuit(self, pce: PrecompiledCircuit, device: int = 0, *, streamed: bool = False) -> CpuCircuit:
        """The circuit prepared for evaluation; ``streamed`` changes nothing (the matrices are
        read in place from host memory either way)."""
        split = (SplitMatrix.of(pce.a), SplitMatrix.of(pce.b), SplitMatrix.of(pce.c))
        return CpuCircuit(pce, CoefficientTable(pce.coeffs), split, sum(m.nbytes for m in split) + pce.coeffs.nbytes)

    def evaluate_r1cs(self, circuit: CpuCircuit, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not isinstance(circuit, CpuCircuit):  # another holder of a circuit (a host mapping): prepare it now
            circuit = self.load_circuit(circuit.circuit)
        return evaluate_r1cs(circuit.circuit, z, circuit.table, circuit.split)

    def prove_start(self, srs: CpuSrs, part: SynthesizedPartition | WitnessPartition) -> CpuPending:
        """Nothing runs yet: the work is prove_finish's, on its caller's thread (cancellable)."""
        return CpuPending(srs, part)

    def prove_finish(self, pending: CpuPending) -> ProofSums:
        srs, part, check = pending.srs, pending.part, pending.check
        check()
        if isinstance(part, WitnessPartition):
            part = witness_to_synthesized(part, *self.evaluate_r1cs(part.circuit, part.z()))
        a, b, c = (limbs_to_objects(v) for v in (part.a, part.b, part.c))
        h = ints_to_limbs(quotient_h_objects(a, b, c, between=check), FR_LIMBS)
        if h.shape[0] != len(srs.h):
            raise ValueError(f"partition needs {h.shape[0]} H points, the key has {len(srs.h)}")
        b_scalars = part.b_scalars()
        return ProofSums(
            h=g1_to_limbs(_msm(G1Point, srs.h, h, check)),
            l=g1_to_limbs(_msm(G1Point, srs.l, part.aux_assignment, check)),
            a=g1_to_limbs(_msm(G1Point, srs.a, part.a_scalars(), check)),
            b_g1=g1_to_limbs(_msm(G1Point, srs.b_g1, b_scalars, check)),
            b_g2=g2_to_limbs(_msm(G2Point, srs.b_g2, b_scalars, check)),
        )

    def prove_cancel(self, pending: CpuPending) -> None:
        """prove_finish raises ProveCancelled at its next check (between the transforms of H and
        the MSM chunks: well under a second)."""
        pending.cancel.set()

    # -- test keys -----------------------------------------------------------------------
    def generate_srs(self, circuit: CircuitHandle, secrets: SetupSecrets) -> tuple[CpuSrs, np.ndarray]:
        """A test key of ``circuit``'s pre-compiled circuit made on the host (keygen.py) and
        loaded, and its input columns at tau ``(num_inputs, 3, 4)`` for the verifying key."""
        qap = qap_from_pce(circuit.circuit, secrets)
        return self.load_srs(proving_key_from_qap(qap, secrets)), input_sums(qap)
