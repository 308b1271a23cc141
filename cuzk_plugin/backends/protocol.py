"""The backend protocol: what every proving backend (cpu, opencl, cuda) implements.

Arrays at the boundary are numpy, canonical (not Montgomery), little-endian uint64 limbs:
Fr ``(n, 4)``, G1 affine ``(n, 2, 6)`` (x, y), G2 affine ``(n, 2, 2, 6)``
((x.c0, x.c1), (y.c0, y.c1)). The identity is all-zero limbs ((0, 0) is not on either curve).
Backends read a key's vectors through ``ProvingKey.vector_limbs(name, start, stop)``, which
turns the file's flagged identities (possible in ``l``) into that form.
A backend computes the five multi-scalar multiplications of a Groth16 proof; the final
assembly with r and s is done once, backend-agnostically, in :mod:`cuzk_plugin.groth16.prover`,
so two backends given the same r and s produce the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from cuzk_plugin.formats.params import ProvingKey, SetupSecrets
    from cuzk_plugin.formats.partition import SynthesizedPartition, WitnessPartition
    from cuzk_plugin.formats.pce import CsrMatrix, PrecompiledCircuit


#: Rows of a streamed circuit's matrices copied to the device at a time (each of A, B, C).
CIRCUIT_CHUNK_ROWS = 1 << 22


def streamed_coeff_index_bytes(pce: PrecompiledCircuit) -> int:
    """Bytes of a coefficient index in a streamed chunk: 2 where the table has at most 2^16
    entries (every Filecoin circuit: 2466 for porep-32g), else 4."""
    return 2 if int(pce.coeffs.shape[0]) <= 1 << 16 else 4


def most_chunk_terms(mat: CsrMatrix, rows: int, chunk_rows: int) -> int:
    """The most terms any chunk of ``chunk_rows`` of the matrix's ``rows`` rows holds (what a
    streamed circuit's chunk buffers must hold)."""
    starts = np.asarray(mat.row_ptr[0:rows + 1:chunk_rows], dtype=np.int64)
    ends = np.append(starts[1:], np.int64(mat.row_ptr[rows]))
    return int((ends - starts).max(initial=0))


def _circuit_table_bytes(pce: PrecompiledCircuit) -> int:
    """The coefficient table (canonical and Montgomery Fr, one kind byte each) and the
    densities: what a loaded circuit holds on the device beside its matrices."""
    return int(pce.coeffs.shape[0]) * (2 * 32 + 1) + 2 * pce.num_aux + pce.num_inputs


def streamed_circuit_device_bytes(pce: PrecompiledCircuit, chunk_rows: int = CIRCUIT_CHUNK_ROWS) -> int:
    """Device bytes of ``pce`` loaded streamed: its coefficient table (canonical and Montgomery
    Fr, one kind byte each), its densities, and two chunk buffers, each holding for A, B and C
    ``chunk_rows + 1`` row offsets from the chunk's first term (uint32) and the most terms any
    chunk of that many rows has (a uint32 column and a coefficient index of
    :func:`streamed_coeff_index_bytes`). The compact form: every streamed byte crosses the link
    at every partition, and a row pointer of 8 bytes, an index of 4, carry nothing more."""
    m = pce.num_constraints
    chunk_rows = max(1, min(chunk_rows, m))
    most_terms = sum(most_chunk_terms(mat, m, chunk_rows) for mat in (pce.a, pce.b, pce.c))
    return _circuit_table_bytes(pce) + 2 * (3 * (chunk_rows + 1) * 4
                                            + most_terms * (4 + streamed_coeff_index_bytes(pce)))


def streamed_circuit_host_bytes(pce: PrecompiledCircuit, chunk_rows: int = CIRCUIT_CHUNK_ROWS) -> int:
    """Page-locked host bytes of ``pce``'s matrices in the compact streamed form: per matrix and
    chunk of ``chunk_rows`` rows, its rows + 1 offsets (uint32), then every term's column (uint32)
    and coefficient index (:func:`streamed_coeff_index_bytes`)."""
    m = pce.num_constraints
    chunk_rows = max(1, min(chunk_rows, m))
    chunks = -(-m // chunk_rows)
    terms = sum(mat.nnz for mat in (pce.a, pce.b, pce.c))
    return 3 * (m + chunks) * 4 + terms * (4 + streamed_coeff_index_bytes(pce))


def resident_circuit_device_bytes(pce: PrecompiledCircuit, chunk_rows: int = CIRCUIT_CHUNK_ROWS) -> int:
    """Device bytes of ``pce`` loaded resident: its coefficient table (canonical and Montgomery
    Fr, one kind byte each), its densities, and its matrices in the compact form
    (:func:`streamed_circuit_host_bytes`), every chunk at once."""
    return _circuit_table_bytes(pce) + streamed_circuit_host_bytes(pce, chunk_rows)


@dataclass(frozen=True)
class DeviceInfo:
    """One device a backend can run on."""

    index: int
    name: str
    memory_bytes: int
    #: "cpu", "gpu", "accelerator".
    kind: str


@dataclass(frozen=True)
class ProofSums:
    """The five MSM results of one partition (affine limb arrays, see module doc).

    h = sum_i h_i * H_i (quotient coefficients), l = sum aux_i * L_i, a = A query over the
    A-dense variables, b_g1 / b_g2 = B queries over the B-dense variables.
    """

    h: np.ndarray  # (2, 6) uint64
    l: np.ndarray  # (2, 6)
    a: np.ndarray  # (2, 6)
    b_g1: np.ndarray  # (2, 6)
    b_g2: np.ndarray  # (2, 2, 6)


class SrsHandle(Protocol):
    """A proving key made resident on a device (until ``release``)."""

    nbytes: int

    def release(self) -> None: ...


class CircuitHandle(Protocol):
    """A pre-compiled circuit loaded for a device (until ``release``), beside the SRS: resident,
    or streamed by rows from page-locked host memory (``load_circuit(streamed=True)``)."""

    #: Device bytes, and page-locked host bytes (0 unless streamed).
    nbytes: int
    host_bytes: int
    #: The circuit it holds (counts, densities, digest; the matrices may live on the device only).
    circuit: PrecompiledCircuit

    def release(self) -> None: ...


@runtime_checkable
class HostPinning(Protocol):
    """Optional: a backend whose uploads run faster from page-locked host memory (cuda). The
    engine pins the shared-memory blocks it recycles for partitions, once each."""

    def pin_host(self, address: int, nbytes: int) -> None: ...

    def unpin_host(self, address: int) -> None: ...


@runtime_checkable
class LinkBandwidth(Protocol):
    """Optional: a backend that can measure its host -> device link from page-locked memory
    (cuda): the floor a streamed key's copies are stated against (engine/residency.py)."""

    def link_bytes_per_s(self, device: int = 0) -> float: ...


@runtime_checkable
class KeyStreaming(Protocol):
    """Optional: a backend that keeps a key in page-locked host memory (one copy a host) and
    streams the vectors a device does not hold during each MSM (cuda). The engine plans, per
    lane, which vectors stay resident (engine/residency.py)."""

    def device_memory(self, device: int = 0) -> tuple[int, int]:
        """(free, total) bytes of the device's memory now."""
        ...

    def set_memory_limit(self, limit_bytes: int, device: int = 0) -> None:
        """Keep the process's transient device work under ``limit_bytes`` (0: no limit)."""
        ...

    def host_key(self, key: Any, device: int = 0) -> Any:
        """The key's host copy (a handle with ``nbytes`` and ``release``), from a ProvingKey
        or from a key resident on a device."""
        ...

    def load_srs(self, key: Any, device: int = 0, *, resident: Iterable[str] | None = None,
                 stream_chunk: int = 1 << 24) -> SrsHandle:
        """The key on ``device`` with the vectors named in ``resident`` on it (None: all), the
        others streamed from the host copy ``key`` in chunks of ``stream_chunk`` points."""
        ...


@runtime_checkable
class Backend(Protocol):
    """What the engine and the conformance suite need from a backend."""

    name: str

    def devices(self) -> list[DeviceInfo]: ...

    def load_srs(self, key: ProvingKey, device: int = 0) -> SrsHandle: ...

    def prove_start(self, srs: SrsHandle, part: SynthesizedPartition | WitnessPartition) -> Any:
        """Start the partition's work (a, b, c from the resident circuit for a WitnessPartition,
        then H, then the G1 MSMs); may return before it is done."""
        ...

    def prove_finish(self, pending: Any) -> ProofSums:
        """Wait for ``prove_start``'s work (and the G2 MSM) and return the five sums; raises
        :class:`~cuzk_plugin.errors.ProveCancelled` if :meth:`prove_cancel` stopped it."""
        ...

    def prove_cancel(self, pending: Any) -> None:
        """Ask ``prove_start``'s work to stop at its next check (between kernels / stages / MSMs),
        so that a waiting :meth:`prove_finish` returns (raising ProveCancelled) within a second
        and frees what the partition held; the backend stays usable. Returns at once, from any
        thread; idempotent, and a no-op once the work is done or finished."""
        ...

    def load_circuit(self, pce: PrecompiledCircuit, device: int = 0, *, streamed: bool = False) -> CircuitHandle:
        """Make a pre-compiled circuit resident on ``device`` for :meth:`evaluate_r1cs` and
        WitnessPartitions. ``streamed``: only its coefficient table and densities go to the
        device; the matrices stay in page-locked host memory and each evaluation copies their
        rows in chunks of :data:`CIRCUIT_CHUNK_ROWS` (the copy of chunk i + 1 beside the
        evaluation of chunk i), for a device too small to hold them beside the key. The handle's
        ``nbytes`` is its device bytes (:func:`resident_circuit_device_bytes`, or
        :func:`streamed_circuit_device_bytes` when streamed, for a backend that holds the
        compact form), ``host_bytes`` its page-locked host bytes (0 when resident)."""
        ...

    def evaluate_r1cs(self, circuit: CircuitHandle, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """a = A z, b = B z, c = C z over every row: z (num_vars, 4) uint64 canonical (inputs then
        aux), results (num_constraints, 4) uint64 canonical."""
        ...

    def generate_srs(self, circuit: CircuitHandle, secrets: SetupSecrets) -> tuple[SrsHandle, np.ndarray]:
        """A TEST proving key of ``circuit``'s pre-compiled circuit made from ``secrets`` on the
        circuit's device (QAP at tau through the matrices, fixed-base multiplications), and
        ``input_sums``: ``(num_inputs, 3, 4)`` uint64 canonical u, v, w at tau of each input
        column, from which the host makes the verifying key (groth16.setup.verifying_key_from)."""
        ...

    # Primitives, for the conformance suite and kernel benchmarks.
    def ntt(self, x: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
        """Natural order in and out. Forward: X_k = sum_j x_j w^(jk); coset: evaluate on 7*w^k;
        inverse: the exact inverse of the matching forward transform (1/N scaling included)."""
        ...

    def quotient_h(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """H coefficients (N - 1 of them) from the constraint evaluations, per Filecoin's prover."""
        ...

    def msm_g1(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray: ...

    def msm_g2(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray: ...
