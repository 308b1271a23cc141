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

import functools
import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from cuzk_plugin.backends.protocol import (
    resident_circuit_device_bytes,
    streamed_circuit_device_bytes,
    streamed_circuit_host_bytes,
)
from cuzk_plugin.errors import CuzkError

#: A key's vectors, in the library's order, and the device bytes of one point of each.
VECTORS = ("h", "l", "a", "b_g1", "b_g2")
POINT_BYTES = {"h": 96, "l": 96, "a": 96, "b_g1": 96, "b_g2": 192}
FR_BYTES = 32
#: Device memory a context holds beside any proof (streams, staging, CUB's scratch, the pool's
#: rounding): left out of every plan.
CONTEXT_BYTES = 1536 << 20
#: Points a streamed chunk holds (two chunks a streamed MSM: 3.2 GB in G1, 6.4 GB in G2), and
#: the fewest a plan goes down to where memory is short.
STREAM_CHUNK = 1 << 24
MIN_STREAM_CHUNK = 1 << 18
#: Device bytes of the lean H's small tables beside its two buffers (two twiddle tables of about
#: 2^13 entries and two power tables of at most 2^15: 1.7 MiB at 2^27), rounded up.
LEAN_H_TABLE_BYTES = 8 << 20
#: What streaming costs a partition beyond the resident MSMs (bench/residency/README.md),
#: measured while each chunk was an MSM of its own (its own reduction and host waits): an upper
#: bound for today's one Pippenger over all the chunks, until that is measured. The
#: copies (page-locked host memory, 54-55 GB/s on the H200 and the H100) overlap the MSMs of the
#: chunk before; what is left is each chunk's own MSM set-up and reduction, dearer for small
#: chunks: 2^27 keys streamed whole took 0.99 s more than resident in 40 chunks of 2^24 points
#: (H200), 11.9 s more in 160 of 2^22 (H200, 80 GiB), a 32 GiB PoRep 0.91 s more in 28 of 2^24
#: with its MSMs in turn (H100, 24 GiB). Seconds a chunk: CHUNK_SECONDS + CHUNK_SMALL_SECONDS *
#: STREAM_CHUNK / chunk (0.025 s at 2^24 points, 0.076 s at 2^22).
LINK_BYTES_PER_S = 54e9
CHUNK_SECONDS = 0.008
CHUNK_SMALL_SECONDS = 0.017


def chunk_seconds(chunk: int) -> float:
    """The estimated cost of one streamed chunk of ``chunk`` points beyond its resident MSM."""
    return CHUNK_SECONDS + CHUNK_SMALL_SECONDS * STREAM_CHUNK / max(1, chunk)


class DeviceMemoryTooSmall(CuzkError):
    """The lane cannot prove this key's partitions even with every vector streamed (the figures
    in the message); refused before any proof starts. ``need_bytes`` (0: not known) counts the
    other keys' copies on the lane, ``other_resident_bytes``: freeing them may make room."""

    def __init__(self, message: str, *, need_bytes: int = 0, available_bytes: int = 0,
                 other_resident_bytes: int = 0) -> None:
        super().__init__(message)
        self.need_bytes = need_bytes
        self.available_bytes = available_bytes
        self.other_resident_bytes = other_resident_bytes

    @property
    def fits_alone(self) -> bool:
        """The key would fit on the lane without the other keys' copies."""
        return self.other_resident_bytes > 0 and self.need_bytes - self.other_resident_bytes <= self.available_bytes


#: Room an MSM's scratch bound leaves for CUB's scratch and the pool's rounding of its
#: allocations: a resident MSM's, and a streamed one's (about 45 allocations), as kernels/msm.cu.
MSM_MARGIN = 64 << 20
STREAMED_MSM_MARGIN = 128 << 20


def msm_window(large: int) -> int:
    """The CUDA MSM's window for a Pippenger tail of ``large`` scalars (msm_default_window)."""
    if (1 << 20) <= large < (1 << 23):
        return 16
    if large >= 3 << 25:
        return 22
    if large >= 1 << 23:
        return 20
    return min(range(4, 23), key=lambda c: (-(-256 // c)) * (large + 2 * (1 << (c - 1))))


def msm_streamed_window(large: int, chunk: int) -> int:
    """The streamed MSM's window (msm_streamed_window of kernels/msm.cu): the whole vector's,
    at most a chunk's own."""
    return min(msm_window(large), msm_window(chunk))


def _next_pow2(x: int) -> int:
    return 1 << max(0, x - 1).bit_length()


def msm_streamed_scratch_bytes(count: int, large: int, point_bytes: int, chunk: int) -> int:
    """The device bytes an MSM of ``count`` points streamed in chunks of ``chunk``, ``large`` of
    its scalars Pippenger's, holds at its peak, its two chunk buffers included
    (msm_streamed_scratch_bytes of kernels/msm.cu: one Pippenger over all the chunks)."""
    if count == 0:
        return 0
    k = min(max(chunk, 1), count)
    sets = 2 if count > k else 1
    xyzz = 2 * point_bytes
    ones_threads = _next_pow2((k + 15) // 16 if k < 1 << 22 else 1 << 18)
    total = sets * k * point_bytes + sets * 8 * k + 16 + 2 * k + ones_threads * xyzz
    large = min(large, count)
    if large:
        c = msm_streamed_window(large, k)
        nwin, nb = -(-256 // c), 1 << (c - 1)
        m = min(k, large)
        items = m // min(1024, max(8, m >> 17)) + nb + 2
        state = 16 * m + 16 * (nb + 2) + items * (16 + xyzz) + 9 * max(m, items)
        segments = min(_next_pow2(max(1, (1 << 16) // nwin)), nb)
        total += nwin * (nb + 1) * xyzz + 4 * items + 2 * state + nwin * segments * xyzz
    return total + STREAMED_MSM_MARGIN


@functools.lru_cache(maxsize=256)
def msm_streamed_scratch_most(count: int, point_bytes: int, chunk: int) -> int:
    """The most :func:`msm_streamed_scratch_bytes` holds for ``count`` points, whatever number of
    them is large (a plan knows the count, not the partition's scalars). Not simply every scalar
    large: a chunk's items are its large scalars over an item length that steps up by one every
    2^17 of them, so just below a step there are up to 2^14 more items than at it (a few MB).
    Between steps the bound grows with the large scalars (and with the window they choose), so
    its most is at a step's last count or at ``count``."""
    if count == 0:
        return 0
    k = min(max(chunk, 1), count)
    before_steps = (((length + 1) << 17) - 1 for length in range(8, 1024))
    return max(msm_streamed_scratch_bytes(count, large, point_bytes, chunk)
               for large in itertools.chain((count,), itertools.takewhile(lambda m: m < k, before_steps)))


def msm_scratch_bytes(count: int, large: int, point_bytes: int) -> int:
    """The device bytes an MSM of ``count`` points, ``large`` of them Pippenger's, holds at its
    peak (msm_scratch_bytes of kernels/msm.cu)."""
    c = msm_window(large)
    windows, buckets = -(-256 // c), (1 << (c - 1)) + 1
    return 10 * count + 40 * large + windows * buckets * 2 * point_bytes + MSM_MARGIN


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

    def compute_bytes(self, stream_chunk: int, streaming: bool, witness: bool, *, roomy: bool = True,
                      lean: bool = False) -> int:
        """The partition that computes, at the larger of its two peaks (kernels/prove.cu), H made
        in b's buffer, a and c freed after it. ``roomy``: the dense A and B scalars and the
        transforms' twiddles sit beside a, b, c during H, and the MSMs beside them, the H MSM
        whole. Else (a small device) H first, the twiddles freed after it, the H MSM, then the
        scalars in H's room, and the other MSMs in turn, each in pieces of at most
        ``stream_chunk`` points. Where vectors stream, the largest streamed MSM (every scalar
        taken large: H's in G1 or B's in G2, with their chunk buffers). ``lean`` (a
        witness partition on a device without room for a, b, c and the twiddle tables; the MSMs
        in turn): H in two buffers, C evaluated in B's room once A B is formed, the twiddles
        from two small tables (quotient_h_lean in kernels/ntt.cu)."""
        n = self.domain
        scalars = (self.a_count + self.b_count) * FR_BYTES
        twiddles = n * FR_BYTES  # N/2 entries each way
        abc = 3 * n * FR_BYTES if witness else 0  # else uploaded with the partition (upload_bytes)
        piece = min(stream_chunk, n)
        stream = max(msm_streamed_scratch_most(n, POINT_BYTES["h"], stream_chunk),
                     msm_streamed_scratch_most(self.b_count, POINT_BYTES["b_g2"], stream_chunk)
                     ) if streaming else 0
        pieces = msm_scratch_bytes(piece, piece, POINT_BYTES["b_g2"])  # a resident vector's MSM in pieces
        msms_in_turn = max(n * FR_BYTES, scalars) + max(pieces, stream)
        if lean and witness:
            return max(2 * n * FR_BYTES + LEAN_H_TABLE_BYTES, msms_in_turn)
        if roomy:
            return max(abc + scalars + twiddles,
                       n * FR_BYTES + scalars + twiddles + msm_scratch_bytes(n, n, 96) + stream)
        return max(abc + twiddles, msms_in_turn)


def vector_bytes(counts: Mapping[str, int]) -> dict[str, int]:
    """Device bytes of each of a key's vectors."""
    return {v: int(counts[v]) * POINT_BYTES[v] for v in VECTORS}


@dataclass(frozen=True)
class CircuitFootprint:
    """Device bytes of the pre-compiled circuit a key's partitions load beside it: resident,
    and streamed (its rows copied in chunks each partition; 0 where it cannot stream); the
    bytes a streamed circuit copies each partition (its rows' compact form; 0: as resident);
    and its terms (what its evaluation costs, resident or streamed)."""

    resident: int
    streamed: int = 0
    streamed_copy: int = 0
    terms: int = 0

    @classmethod
    def of(cls, pce) -> CircuitFootprint:
        return cls(resident_circuit_device_bytes(pce), streamed_circuit_device_bytes(pce),
                   streamed_circuit_host_bytes(pce), sum(m.nnz for m in (pce.a, pce.b, pce.c)))


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
    #: The streaming's estimated cost a partition, seconds (chunk_seconds).
    stream_seconds: float = 0.0
    #: The circuit's matrices stay in host memory and stream by rows each partition.
    circuit_streamed: bool = False
    #: Partitions on the device at once (the next uploads while one computes: 2).
    in_flight: int = 2
    #: The MSMs run one after another (in pieces where needed), not side by side.
    msm_in_turn: bool = False
    #: H is made in two buffers of the domain instead of three (a witness partition on a device
    #: without room for a, b, c and the transforms' twiddle tables).
    h_lean: bool = False
    #: The lane's host -> device link measured at start, bytes a second (0: not measured).
    link_bytes_per_s: float = 0.0

    @property
    def all_resident(self) -> bool:
        return not self.streamed

    def describe(self) -> str:
        gb = 1e9
        where = ("all resident" if self.all_resident else
                 f"resident {'+'.join(self.resident) or 'none'} ({self.resident_bytes / gb:.1f} GB), streamed "
                 f"{'+'.join(self.streamed)} ({self.streamed_bytes / gb:.1f} GB a partition, chunks of "
                 f"{self.stream_chunk:,} points)")
        circuit = ("circuit a, b, c on the host" if self.circuit_on_host else
                   f"circuit streamed by rows ({self.circuit_bytes / gb:.1f} GB on the device)" if self.circuit_streamed
                   else f"circuit {self.circuit_bytes / gb:.1f} GB" if self.circuit_bytes else "no circuit")
        turns = ("; MSMs in turn" if self.msm_in_turn else "") + ("; H in two buffers" if self.h_lean else "")
        # Two bounds: a partition is never shorter than its key's copies at the lane's link (as
        # measured at start; else the PCIe 5.0 x16 link the model was measured on, where PCIe 4.0
        # x16 moves about half as much), and the model's streaming cost (chunk_seconds, fitted on
        # a PCIe 5.0 x16 link) is an upper bound there.
        link = (f"{self.link_bytes_per_s / 1e9:.1f} GB/s (this lane's link, measured)" if self.link_bytes_per_s else
                f"{LINK_BYTES_PER_S / 1e9:.0f} GB/s (PCIe 5.0 x16 assumed, not measured; twice that on 4.0)")
        cost = (f"; a partition at least the key's copies, "
                f"{self.streamed_bytes / (self.link_bytes_per_s or LINK_BYTES_PER_S):.1f} s at {link}, at most "
                f"~{self.stream_seconds:.1f} s more than resident (estimate)" if self.stream_seconds else "")
        return (f"{self.circuit_id} on {self.lane}: {where}; {circuit}; {self.in_flight} partition(s) in flight{turns}; "
                f"working set {self.working_bytes / gb:.1f} GB{cost}; {self.available_bytes / gb:.1f} GB usable")


#: Estimated costs a partition of the choices a small device forces, beyond the streamed bytes
#: (models, not measurements): the five MSMs one after another instead of overlapping H and
#: each other; H in two buffers (one more product a twiddle, an in-place bit reversal, C not
#: overlapped with A and B); a, b, c evaluated on the host (minutes of CPU at 2^27) and uploaded.
IN_TURN_SECONDS = 0.3
LEAN_H_SECONDS = 0.1
HOST_EVALUATION_SECONDS = 10.0
#: A circuit's evaluation on the device a term, resident or streamed alike (a 32 GiB PoRep's
#: 722.4 M terms took 34 ms resident on the H200, bench/e2e): a streamed circuit costs only
#: what its copies take beyond it (chunk i + 1 is copied while chunk i is evaluated; 110 ms
#: streamed on the H100, bench/residency/README.md).
EVALUATION_SECONDS_PER_TERM = 0.034 / 722.4e6


def plan_residency(circuit_id: str, lane: str, counts: Mapping[str, int], *, available_bytes: int,
                   in_flight: int = 2, min_in_flight: int | None = None, circuit: CircuitFootprint | None = None,
                   other_resident_bytes: int = 0, stream_chunk: int = STREAM_CHUNK,
                   link_bytes_per_s: float = 0.0) -> ResidencyPlan:
    """The plan for a key of ``counts`` (``ProvingKey.counts()``) on a lane with
    ``available_bytes`` usable, ``other_resident_bytes`` of it held by other keys' copies. A
    key whose partitions come with a ``circuit`` proves witness partitions (a, b, c made on the
    device from the circuit, resident or streamed by rows); else, or with the circuit's a, b, c
    on the host, they come from the host with each partition. ``min_in_flight``: the fewest
    partitions the lane can keep on the device at once (default ``in_flight``).
    ``link_bytes_per_s``: the lane's measured link (0: not measured), stated in the plan's floor;
    the choice itself is weighed on the link the model was fitted on (LINK_BYTES_PER_S).

    Every choice that fits is weighed by its estimated cost a partition: the key's streamed
    bytes and chunks, the circuit's streamed rows, the MSMs in turn, an upload no longer
    overlapped, a, b, c on the host. The cheapest wins (ties: more in flight, larger chunks);
    on a large device that is everything resident at no cost."""
    shape = PartitionShape.of_key(counts)
    sizes = vector_bytes(counts)
    stream_chunk = max(1, min(stream_chunk, max(int(counts[v]) for v in VECTORS)))  # no chunk beyond a vector
    free = available_bytes - CONTEXT_BYTES - other_resident_bytes
    flights_tried = sorted({max(1, in_flight), max(1, min(in_flight, min_in_flight or in_flight))}, reverse=True)
    chunks = [stream_chunk]
    while chunks[-1] > MIN_STREAM_CHUNK:
        chunks.append(max(MIN_STREAM_CHUNK, chunks[-1] // 2))
    # (placement, device bytes, witness partitions, seconds a partition)
    placements = [("none", 0, False, 0.0)]
    if circuit is not None and circuit.resident:
        placements = [("device", circuit.resident, True, 0.0)]
        if circuit.streamed:
            copied = circuit.streamed_copy or circuit.resident
            beyond = copied / LINK_BYTES_PER_S - circuit.terms * EVALUATION_SECONDS_PER_TERM
            placements.append(("streamed", circuit.streamed, True, max(0.0, beyond)))
        placements.append(("host", 0, False, HOST_EVALUATION_SECONDS))

    def key_seconds(resident: tuple[str, ...], chunk: int) -> float:
        streamed = [v for v in VECTORS if v not in resident]
        n_chunks = sum(-(-int(counts[v]) // chunk) for v in streamed)
        return n_chunks * chunk_seconds(chunk)

    subsets = [r for k in range(len(VECTORS) + 1) for r in itertools.combinations(VECTORS, k)]
    best: tuple | None = None
    for flights in flights_tried:
        for where, circuit_dev, witness, circuit_seconds in placements:
            upload = shape.upload_bytes(witness)
            serial = (in_flight - flights) * upload / LINK_BYTES_PER_S
            # (roomy, lean): side by side; in turn; in turn with H in two buffers (witness only)
            for roomy, lean in ((True, False), (False, False), (False, True)):
                if lean and not witness:
                    continue
                for chunk in chunks:
                    for resident in subsets:
                        streaming = len(resident) < len(VECTORS)
                        if not streaming and chunk != chunks[0]:
                            continue
                        working = flights * upload + shape.compute_bytes(chunk, streaming, witness, roomy=roomy,
                                                                         lean=lean)
                        if sum(sizes[v] for v in resident) + working + circuit_dev > free:
                            continue
                        cost = (key_seconds(resident, chunk) + circuit_seconds + serial
                                + (0.0 if roomy else IN_TURN_SECONDS) + (LEAN_H_SECONDS if lean else 0.0))
                        rank = (round(cost, 6), -flights, -chunk)
                        if best is None or rank < best[0]:
                            best = (rank, resident, chunk, where, circuit_dev, working, flights, roomy, lean)
    if best is not None:
        _, resident, chunk, where, circuit_dev, working, flights, roomy, lean = best
        streamed = tuple(v for v in VECTORS if v not in resident)
        return ResidencyPlan(circuit_id, lane, available_bytes, tuple(resident), streamed,
                             sum(sizes[v] for v in resident), sum(sizes[v] for v in streamed), circuit_dev,
                             where == "host", working, chunk, key_seconds(resident, chunk) if streamed else 0.0,
                             circuit_streamed=where == "streamed", in_flight=flights, msm_in_turn=not roomy,
                             h_lean=lean, link_bytes_per_s=link_bytes_per_s)
    # Refused: the least it would take is every vector streamed in the smallest chunks, the
    # fewest partitions in flight, the MSMs in turn (H in two buffers for witness partitions),
    # the circuit where it weighs least.
    flights = flights_tried[-1]
    need = CONTEXT_BYTES + other_resident_bytes + min(
        flights * shape.upload_bytes(witness)
        + shape.compute_bytes(MIN_STREAM_CHUNK, True, witness, roomy=False, lean=witness)
        + circuit_dev for _, circuit_dev, witness, _ in placements)
    gb = 1e9
    raise DeviceMemoryTooSmall(
        f"key of '{circuit_id}' cannot be proved on {lane}: even with its {sum(sizes.values()) / gb:.1f} GB of points "
        f"streamed, a partition needs {need / gb:.1f} GB of device memory ({flights} in flight, a "
        f"2^{shape.domain.bit_length() - 1} domain, circuit {(circuit.resident if circuit else 0) / gb:.1f} GB, "
        f"other keys {other_resident_bytes / gb:.1f} GB); the lane may use {available_bytes / gb:.1f} GB "
        "([gpus] device_memory_limit or the free memory at start)",
        need_bytes=need, available_bytes=available_bytes, other_resident_bytes=other_resident_bytes)
