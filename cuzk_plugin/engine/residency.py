"""A lane's residency plan for a key: which of its vectors live in device memory and which
stream from the key's page-locked host copy during every partition, and whether the circuit's
matrices stay on the device or a, b, c are evaluated on the host.

The plan is made from the device memory the daemon may use on the lane (the free memory when
the lane was built, capped by ``[gpus] device_memory_limit``) less what a partition needs
beside the key: the partitions in flight (their a, b, c and assignment), the working set of
the one computing (the dense scalars, H, the transforms' twiddles, the largest MSM's scratch,
the two chunks a streamed MSM holds) and the other keys resident on the lane. The figures
follow the CUDA library's own allocations (``kernels/prove.cu``, ``msm.cu``, ``upload.cu``).
What is left holds the key's vectors, the largest set that fits (every vector where all fit:
nothing streams on a large card). A lane that cannot hold even a partition with everything
streamed refuses the key up front with the figures (:class:`DeviceMemoryTooSmall`), so a job
never dies of an out-of-memory error half way through a proof.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from cuzk_plugin.errors import CuzkError

#: A key's vectors, in the library's order, and the device bytes of one point of each.
VECTORS = ("h", "l", "a", "b_g1", "b_g2")
POINT_BYTES = {"h": 96, "l": 96, "a": 96, "b_g1": 96, "b_g2": 192}
FR_BYTES = 32
#: Device memory a context holds beside any proof (streams, staging, CUB's scratch, the pool's
#: rounding): left out of every plan.
CONTEXT_BYTES = 768 << 20
#: Points a streamed chunk holds (two chunks a streamed MSM: 3.2 GB in G1, 6.4 GB in G2), and
#: the fewest a plan goes down to where memory is short.
STREAM_CHUNK = 1 << 24
MIN_STREAM_CHUNK = 1 << 18
#: What streaming costs a partition, measured on the H200 (bench/residency/README.md): page-locked
#: host memory copies at ~54 GB/s, and each chunk is an MSM of its own, ~0.08 s beyond its copy
#: (a 2^27 key streamed whole: 2.35 s a partition in 2^24-point chunks, 13.3 s in 2^22-point
#: ones, against 1.36 s resident).
LINK_BYTES_PER_S = 50e9
CHUNK_SECONDS = 0.08


class DeviceMemoryTooSmall(CuzkError):
    """The lane cannot prove this key's partitions even with every vector streamed (the figures
    in the message); refused before any proof starts."""


def msm_window(large: int) -> int:
    """The CUDA MSM's window for a Pippenger tail of ``large`` scalars (msm_default_window)."""
    if (1 << 20) <= large < (1 << 23):
        return 16
    if large >= 3 << 25:
        return 22
    if large >= 1 << 23:
        return 20
    return min(range(4, 23), key=lambda c: (-(-256 // c)) * (large + 2 * (1 << (c - 1))))


def msm_scratch_bytes(count: int, large: int, point_bytes: int) -> int:
    """The device bytes an MSM of ``count`` points, ``large`` of them Pippenger's, holds at its
    peak (msm_scratch_bytes of kernels/msm.cu)."""
    c = msm_window(large)
    windows, buckets = -(-256 // c), (1 << (c - 1)) + 1
    return 10 * count + 40 * large + windows * buckets * 2 * point_bytes + (64 << 20)


@dataclass(frozen=True)
class PartitionShape:
    """The counts that size one partition's device work: the domain, the assignment, and the
    lengths of the key's A and B queries."""

    domain: int
    num_inputs: int
    num_aux: int
    a_count: int
    b_count: int

    @classmethod
    def of_key(cls, counts: Mapping[str, int]) -> PartitionShape:
        """From a key's point counts (``ProvingKey.counts()``: ic, h, l, a, b_g1, b_g2)."""
        return cls(domain=counts["h"] + 1, num_inputs=counts["ic"], num_aux=counts["l"], a_count=counts["a"],
                   b_count=counts["b_g1"])

    def upload_bytes(self, witness: bool) -> int:
        """One partition in flight: its assignment and density flags, and a, b, c over the
        domain where they come from the host (a witness partition's are made on the device
        when it computes)."""
        abc = 0 if witness else 3 * self.domain
        return (abc + self.num_inputs + self.num_aux) * FR_BYTES + 2 * self.num_aux + self.num_inputs

    def compute_bytes(self, stream_chunk: int, streaming: bool, witness: bool) -> int:
        """The partition that computes, MSMs in turn, at the larger of its two peaks: H (a, b, c
        where made on the device, H, the NTT's twiddles, the dense A and B scalars) and the MSMs
        (H, the twiddles, the scalars, the largest MSM's scratch, H's with every value large,
        and, where vectors stream, its two chunks of G2 points). a, b, c are freed after H."""
        n = self.domain
        scalars = (self.a_count + self.b_count) * FR_BYTES
        h_phase = ((3 * n if witness else 0) + 2 * n) * FR_BYTES + scalars
        stream = 2 * stream_chunk * POINT_BYTES["b_g2"] if streaming else 0
        msm_phase = 2 * n * FR_BYTES + scalars + msm_scratch_bytes(n, n, 96) + stream
        return max(h_phase, msm_phase)


def vector_bytes(counts: Mapping[str, int]) -> dict[str, int]:
    """Device bytes of each of a key's vectors."""
    return {v: int(counts[v]) * POINT_BYTES[v] for v in VECTORS}


def circuit_device_bytes(circuit) -> int:
    """Device bytes of a pre-compiled circuit resident for its partitions (its matrices and
    densities, the coefficient table in both forms)."""
    return int(circuit.nbytes) + int(circuit.coeffs.nbytes)


@dataclass(frozen=True)
class ResidencyPlan:
    """What lives where for one key on one lane, and what each partition moves over PCIe."""

    circuit_id: str
    lane: str
    #: Device bytes the daemon may use on the lane.
    available_bytes: int
    resident: tuple[str, ...]
    streamed: tuple[str, ...]
    resident_bytes: int
    #: Host -> device bytes of the key a partition copies (every streamed vector once).
    streamed_bytes: int
    #: Device bytes of the circuit kept beside the key (0: none, or evaluated on the host).
    circuit_bytes: int
    #: The circuit's a, b, c are evaluated on the host: its matrices do not fit beside the key.
    circuit_on_host: bool
    #: Partitions in flight and the working set of the one computing, bytes.
    working_bytes: int
    stream_chunk: int
    #: The streaming's estimated cost a partition, seconds (LINK_BYTES_PER_S, CHUNK_SECONDS).
    stream_seconds: float = 0.0

    @property
    def all_resident(self) -> bool:
        return not self.streamed

    def describe(self) -> str:
        gb = 1e9
        where = ("all resident" if self.all_resident else
                 f"resident {'+'.join(self.resident) or 'none'} ({self.resident_bytes / gb:.1f} GB), streamed "
                 f"{'+'.join(self.streamed)} ({self.streamed_bytes / gb:.1f} GB a partition, chunks of "
                 f"{self.stream_chunk:,} points, ~{self.stream_seconds:.1f} s)")
        circuit = ("circuit a, b, c on the host" if self.circuit_on_host else
                   f"circuit {self.circuit_bytes / gb:.1f} GB" if self.circuit_bytes else "no circuit")
        return (f"{self.circuit_id} on {self.lane}: {where}; {circuit}; working set {self.working_bytes / gb:.1f} GB; "
                f"{self.available_bytes / gb:.1f} GB usable")


def plan_residency(circuit_id: str, lane: str, counts: Mapping[str, int], *, available_bytes: int,
                   in_flight: int = 2, circuit_bytes: int = 0, other_resident_bytes: int = 0,
                   stream_chunk: int = STREAM_CHUNK) -> ResidencyPlan:
    """The plan for a key of ``counts`` (``ProvingKey.counts()``) on a lane with
    ``available_bytes`` usable, ``other_resident_bytes`` of it held by other keys' copies. A
    key whose partitions come with a circuit (``circuit_bytes``) proves witness partitions
    (a, b, c made on the device); else a, b, c come from the host with each partition.

    Every vector resident where the key, the circuit and the working set fit; else the circuit
    stays if it fits beside a fully streamed key, and the vectors that fit in what is left
    stay resident (those that save the most streaming time: bytes over PCIe and chunks), the
    rest stream, in the chunk size that costs least."""
    shape = PartitionShape.of_key(counts)
    sizes = vector_bytes(counts)
    stream_chunk = max(1, min(stream_chunk, max(int(counts[v]) for v in VECTORS)))  # no chunk beyond a vector
    key_bytes = sum(sizes.values())
    free = available_bytes - CONTEXT_BYTES - other_resident_bytes
    witness = circuit_bytes > 0
    flights = max(1, in_flight)

    def working(chunk: int, streaming: bool, on_host: bool) -> int:
        wit = witness and not on_host  # a, b, c evaluated on the host come with each partition
        return flights * shape.upload_bytes(wit) + shape.compute_bytes(chunk, streaming, wit)

    def stream_seconds(resident: tuple[str, ...], chunk: int) -> float:
        streamed = [v for v in VECTORS if v not in resident]
        chunks = sum(-(-int(counts[v]) // chunk) for v in streamed)
        return sum(sizes[v] for v in streamed) / LINK_BYTES_PER_S + chunks * CHUNK_SECONDS

    def plan(resident: tuple[str, ...], chunk: int, on_host: bool) -> ResidencyPlan:
        streamed = tuple(v for v in VECTORS if v not in resident)
        return ResidencyPlan(circuit_id, lane, available_bytes, resident, streamed,
                             sum(sizes[v] for v in resident), sum(sizes[v] for v in streamed),
                             0 if on_host else circuit_bytes, on_host and circuit_bytes > 0,
                             working(chunk, bool(streamed), on_host), chunk,
                             stream_seconds(resident, chunk) if streamed else 0.0)

    whole = working(stream_chunk, False, False)
    if key_bytes + circuit_bytes + whole <= free:
        return plan(VECTORS, stream_chunk, False)
    # Every feasible (chunk, circuit placement, resident set); the best keeps the circuit on the
    # device, then costs the least streaming time a partition (bytes over the link, and a fixed
    # cost a chunk), then uses the largest chunks. A larger budget only adds options.
    options = []
    chunk = stream_chunk
    while True:
        for on_host in (False, True) if circuit_bytes else (False,):
            room = free - working(chunk, True, on_host) - (0 if on_host else circuit_bytes)
            if room < 0:
                continue
            best = min((r for k in range(len(VECTORS) + 1) for r in itertools.combinations(VECTORS, k)
                        if sum(sizes[v] for v in r) <= room), key=lambda r: stream_seconds(r, chunk))
            options.append((on_host, stream_seconds(best, chunk), -chunk, best))
        if chunk <= MIN_STREAM_CHUNK:
            break
        chunk = max(MIN_STREAM_CHUNK, chunk // 2)
    if options:
        on_host, _, neg_chunk, best = min(options)
        return plan(tuple(best), -neg_chunk, on_host)
    # Refused: the least it would take is every vector streamed, the circuit's a, b, c on the
    # host (synthesized partitions, then), the smallest chunks.
    need = CONTEXT_BYTES + other_resident_bytes + min(working(MIN_STREAM_CHUNK, True, True),
                                                      working(MIN_STREAM_CHUNK, True, False) + circuit_bytes)
    gb = 1e9
    raise DeviceMemoryTooSmall(
        f"key of '{circuit_id}' cannot be proved on {lane}: even with its {key_bytes / gb:.1f} GB of points streamed, "
        f"a partition needs {need / gb:.1f} GB of device memory ({flights} in flight, a 2^{shape.domain.bit_length() - 1} "
        f"domain, circuit {circuit_bytes / gb:.1f} GB, other keys {other_resident_bytes / gb:.1f} GB); "
        f"the lane may use {available_bytes / gb:.1f} GB ([gpus] device_memory_limit or the free memory at start)")
