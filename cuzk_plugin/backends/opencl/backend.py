"""`OpenclBackend`: the Backend protocol over OpenCL (any GPU vendor, or PoCL on a CPU).

One instance drives one device (see :mod:`.device` for how it is chosen). Device work is
serialised by a lock; ``prove_start`` hands the partition to a single worker thread, so the
caller may synthesize the next partition while this one runs (pyopencl releases the GIL in
its blocking calls).
"""

from __future__ import annotations

import threading
import warnings
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuzk_plugin.backends.opencl.constants import LIMB_WIDTHS
from cuzk_plugin.backends.opencl.device import (
    BuiltPrograms,
    default_limb_bits,
    device_errors,
    import_pyopencl,
    probe_devices,
    select_device,
)
from cuzk_plugin.backends.opencl.fixed_base import FixedBaseDriver, table_bits
from cuzk_plugin.backends.opencl.launch import download, upload
from cuzk_plugin.backends.opencl.msm import MsmDriver
from cuzk_plugin.backends.opencl.multi import OpenclDevices
from cuzk_plugin.backends.opencl.ntt import NttDriver, log2_exact
from cuzk_plugin.backends.opencl.r1cs import OpenclCircuit, R1csDriver
from cuzk_plugin.backends.protocol import CIRCUIT_CHUNK_ROWS, DeviceInfo, ProofSums
from cuzk_plugin.bls12_381.fields import FR_LIMBS
from cuzk_plugin.bls12_381.points import (
    g1_from_limbs,
    g1_limbs_to_raw,
    g1_to_limbs,
    g2_from_limbs,
    g2_limbs_to_raw,
    g2_to_limbs,
)
from cuzk_plugin.errors import BackendUnavailable, EncodingError, ProveCancelled
from cuzk_plugin.formats.params import ProvingKey, SetupSecrets
from cuzk_plugin.formats.partition import SynthesizedPartition, WitnessPartition
from cuzk_plugin.formats.pce import PrecompiledCircuit


@dataclass
class OpenclHostKey:
    """A proving key's vectors decoded once into host memory (canonical affine limbs, every point
    checked on its curve): the copy that keys of any OpenCL device attach to, their streamed
    vectors uploaded from it a chunk at a time during each MSM."""

    vectors: dict
    counts: dict
    nbytes: int
    released: bool = field(default=False)

    def release(self) -> None:
        self.vectors = {}
        self.released = True


@dataclass
class OpenclSrs:
    """A proving key on one device: each vector resident in device memory (Montgomery affine
    points, in ``buffers``), or streamed from ``host`` in chunks of ``stream_chunk`` points."""

    buffers: dict
    counts: dict
    #: Device bytes of the resident vectors.
    nbytes: int
    released: bool = field(default=False)
    host: OpenclHostKey | None = None
    owns_host: bool = False
    stream_chunk: int = 0
    #: The key a generated key was loaded from (its host copy is made from it).
    source: ProvingKey | None = None

    @property
    def resident(self) -> tuple[str, ...]:
        return tuple(name for name in SRS_VECTORS if name in self.buffers)

    def release(self) -> None:
        for buf in self.buffers.values():
            buf.release()
        self.buffers = {}
        self.released = True
        if self.owns_host and self.host is not None:
            self.host.release()


#: A key's vectors in prove order.
SRS_VECTORS = ("h", "l", "a", "b_g1", "b_g2")


@dataclass
class OpenclPending:
    """A partition handed to the proving thread, and its cancel flag (set by prove_cancel)."""

    future: Future | None = None
    cancel: threading.Event = field(default_factory=threading.Event)


def _check_msm_shapes(bases: np.ndarray, scalars: np.ndarray, point_shape: tuple) -> None:
    if bases.shape[1:] != point_shape or bases.dtype != np.uint64:
        raise ValueError(f"MSM bases: expected (n, {', '.join(map(str, point_shape))}) uint64, got {bases.dtype} {bases.shape}")
    if scalars.ndim != 2 or scalars.shape[1] != FR_LIMBS:
        raise ValueError(f"MSM scalars: expected (n, 4) uint64, got {scalars.shape}")
    if bases.shape[0] != scalars.shape[0]:
        raise ValueError(f"MSM: {bases.shape[0]} bases but {scalars.shape[0]} scalars")


class OpenclBackend:
    """Groth16 backend on one OpenCL device.

    Args:
        platform: platform index or a substring of its name (None: any).
        device: device index within the platform, or a substring of its name (None: the
            ``CUZK_OPENCL_DEVICE`` environment variable, else the first GPU, else the first device).
        limb_bits: 32 or 64, the limb width of the field kernels (None: 64 on CPUs, 32 on GPUs).
    """

    name = "opencl"

    def __init__(self, platform: int | str | None = None, device: int | str | None = None,
                 limb_bits: int | None = None):
        cl = import_pyopencl()
        self.device = select_device(platform, device)
        self.limb_bits = default_limb_bits(self.device) if limb_bits is None else int(limb_bits)
        if self.limb_bits not in LIMB_WIDTHS:
            raise ValueError(f"limb_bits must be one of {LIMB_WIDTHS}, got {limb_bits}")
        self.context = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.context)
        self._programs = BuiltPrograms(self.context, self.limb_bits)
        self._drivers: dict[str, object] = {}
        self._lock = threading.RLock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="opencl-prove")

    def __repr__(self) -> str:
        return (f"OpenclBackend(device={self.device.name.strip()!r}, "
                f"platform={self.device.platform.name.strip()!r}, limb_bits={self.limb_bits})")

    def close(self) -> None:
        """Stop the proving worker thread (pending work finishes first)."""
        self._worker.shutdown(wait=True)

    def __enter__(self) -> OpenclBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @classmethod
    def probe(cls) -> str | None:
        """None when pyopencl imports and some OpenCL device exists, else the reason."""
        return probe_devices()

    def every_device(self) -> OpenclDevices:
        """This device and the host's other GPUs, one lane each (what the daemon proves on)."""
        return OpenclDevices.around(self)

    def devices(self) -> list[DeviceInfo]:
        cl = import_pyopencl()
        kind = "gpu" if self.device.type & cl.device_type.GPU else "cpu" if self.device.type & cl.device_type.CPU else "accelerator"
        return [DeviceInfo(index=0, name=self.device.name.strip(), memory_bytes=int(self.device.global_mem_size), kind=kind)]

    # -- drivers, built on first use -----------------------------------------------------
    def _driver(self, name: str):
        if name not in self._drivers:
            with warnings.catch_warnings():  # PoCL's harmless "loop not unrolled" remarks
                warnings.simplefilter("ignore")
                program = self._programs.get(name)
            if name == "ntt":
                self._drivers[name] = NttDriver(self.context, self.queue, program)
            elif name == "r1cs":
                self._drivers[name] = R1csDriver(self.context, self.queue, program)
            else:
                self._drivers[name] = MsmDriver(self.context, self.queue, program, group=1 if name == "g1" else 2)
        return self._drivers[name]

    @property
    def _ntt(self) -> NttDriver:
        return self._driver("ntt")

    @property
    def _r1cs(self) -> R1csDriver:
        return self._driver("r1cs")

    @property
    def _g1(self) -> MsmDriver:
        return self._driver("g1")

    @property
    def _g2(self) -> MsmDriver:
        return self._driver("g2")

    # -- primitives ----------------------------------------------------------------------
    def ntt(self, x: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
        n = x.shape[0]
        log2_exact(n)
        with self._lock, device_errors(f"ntt of size {n}"):
            drv = self._ntt
            out = drv.transform(drv.upload_fr(x), n, inverse=inverse, coset=coset)
            drv.from_mont(out, n)
            return download(self.queue, out, (n, FR_LIMBS))

    def quotient_h(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        with self._lock, device_errors(f"quotient_h of {a.shape[0]} rows"):
            h, n = self._ntt.quotient_h(a, b, c)
            return download(self.queue, h, (n, FR_LIMBS))[: n - 1]

    def _msm(self, drv: MsmDriver, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        n = bases.shape[0]
        if n == 0:
            return drv.identity()
        d_bases = drv.points_to_device(bases)
        d_scalars = upload(self.context, self.queue, np.ascontiguousarray(scalars, dtype=np.uint64))
        return drv.msm(d_bases, d_scalars, n)

    def msm_g1(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        _check_msm_shapes(bases, scalars, (2, 6))
        with self._lock, device_errors(f"msm_g1 of {bases.shape[0]} points"):
            return self._msm(self._g1, bases, scalars)

    def msm_g2(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        _check_msm_shapes(bases, scalars, (2, 2, 6))
        with self._lock, device_errors(f"msm_g2 of {bases.shape[0]} points"):
            return self._msm(self._g2, bases, scalars)

    # -- proving -------------------------------------------------------------------------
    def device_memory(self, device: int = 0) -> tuple[int, int]:
        """(free, total) device bytes: OpenCL reports no free memory, so both are the device's
        global memory (PoCL's is host memory)."""
        total = int(self.device.global_mem_size)
        return total, total

    def set_memory_limit(self, limit_bytes: int, device: int = 0) -> None:
        """Nothing to do: the proving steps here run one after another (no side-by-side MSMs)."""

    def host_key(self, key: ProvingKey | OpenclSrs, device: int = 0) -> OpenclHostKey:
        """The key's host copy: its vectors decoded to limbs, every point checked on its curve
        on this device a chunk at a time. A key made here (generate_srs) from the key it was
        loaded from."""
        if isinstance(key, OpenclSrs):
            if key.source is None:
                raise ValueError("host_key: this device key keeps no host form to copy")
            key = key.source
        vectors = {name: key.vector_limbs(name) for name in SRS_VECTORS}
        with self._lock, device_errors("host copy of a key"):
            for name, limbs in vectors.items():
                drv = self._g2 if name == "b_g2" else self._g1
                for start in range(0, limbs.shape[0], 1 << 20):
                    chunk = limbs[start:start + (1 << 20)]
                    buf = drv.points_to_device(chunk)
                    try:
                        bad = drv.points_off_curve(buf, chunk.shape[0])
                    finally:
                        buf.release()
                    if bad.size:
                        raise EncodingError(f"{name}[{start + int(bad[0])}]: not on the curve")
        return OpenclHostKey(vectors=vectors, counts={n: int(v.shape[0]) for n, v in vectors.items()},
                             nbytes=sum(int(v.nbytes) for v in vectors.values()))

    def load_srs(self, key: ProvingKey | OpenclHostKey, device: int = 0, *, resident=None,
                 stream_chunk: int = 1 << 24) -> OpenclSrs:
        """Decode the key's vectors chunk by chunk straight into device buffers (host memory
        holds one chunk, not a second copy of the key) and check every point is on its curve
        (the subgroup check is skipped, as production readers do). With ``resident`` (or from
        a host copy) only the vectors named go to the device; the others stream from the host
        copy in chunks of ``stream_chunk`` points during each MSM."""
        if device != 0:
            raise BackendUnavailable(f"this OpenclBackend drives one device (index 0), not {device}")
        if isinstance(key, OpenclHostKey) or resident is not None:
            return self._attach(key, SRS_VECTORS if resident is None else tuple(resident), stream_chunk)
        counts = {name: int(getattr(key, name).shape[0]) for name in SRS_VECTORS}
        buffers: dict = {}
        with self._lock, device_errors("load_srs"):
            try:
                for name, n in counts.items():
                    drv = self._g2 if name == "b_g2" else self._g1
                    buffers[name] = drv.points_to_device_chunked(
                        n, lambda start, stop, name=name: key.vector_limbs(name, start, stop))
                    bad = drv.points_off_curve(buffers[name], n)
                    if bad.size:
                        raise EncodingError(f"{name}[{int(bad[0])}]: not on the curve")
            except Exception:
                for buf in buffers.values():
                    buf.release()
                raise
        return OpenclSrs(buffers=buffers, counts=counts, nbytes=key.vectors_nbytes)

    def _attach(self, key: ProvingKey | OpenclHostKey, resident: tuple[str, ...], stream_chunk: int) -> OpenclSrs:
        unknown = set(resident) - set(SRS_VECTORS)
        if unknown:
            raise ValueError(f"resident vectors: no {sorted(unknown)} (one of {', '.join(SRS_VECTORS)})")
        if stream_chunk < 1:
            raise ValueError(f"load_srs: stream_chunk must be at least 1 point, got {stream_chunk}")
        owns = isinstance(key, ProvingKey)
        host = self.host_key(key) if isinstance(key, ProvingKey) else key
        if host.released:
            raise ValueError("load_srs: the host copy of the key has been released")
        buffers: dict = {}
        try:
            with self._lock, device_errors("load_srs from a host copy"):
                for name in resident:
                    drv = self._g2 if name == "b_g2" else self._g1
                    limbs = host.vectors[name]
                    buffers[name] = drv.points_to_device_chunked(limbs.shape[0], lambda a, b, v=limbs: v[a:b])
        except BaseException:
            for buf in buffers.values():
                buf.release()
            if owns:
                host.release()
            raise
        nbytes = sum(int(host.vectors[name].nbytes) for name in resident)
        return OpenclSrs(buffers=buffers, counts=dict(host.counts), nbytes=nbytes, host=host, owns_host=owns,
                         stream_chunk=stream_chunk)

    def _msm_of(self, srs: OpenclSrs, name: str, scalars, check) -> np.ndarray:
        """The MSM of key vector ``name`` with ``scalars`` (a device buffer, or host limbs): on
        its resident buffer, or chunk by chunk from the host copy, the chunks' sums added on
        the host."""
        drv = self._g2 if name == "b_g2" else self._g1
        n = srs.counts[name]
        if name in srs.buffers:
            d = scalars if not isinstance(scalars, np.ndarray) else upload(self.context, self.queue,
                                                                             np.ascontiguousarray(scalars))
            return drv.msm(srs.buffers[name], d, n, check)
        assert srs.host is not None
        host_scalars = (scalars if isinstance(scalars, np.ndarray)
                        else download(self.queue, scalars, (n, FR_LIMBS), np.uint64))
        points = srs.host.vectors[name]
        to_points: Any = g2_from_limbs if name == "b_g2" else g1_from_limbs
        to_limbs: Any = g2_to_limbs if name == "b_g2" else g1_to_limbs
        total: Any = None
        for start in range(0, n, srs.stream_chunk):
            stop = min(n, start + srs.stream_chunk)
            d_points = drv.points_to_device(points[start:stop])
            d_scalars = upload(self.context, self.queue, np.ascontiguousarray(host_scalars[start:stop]))
            try:
                (part,) = to_points(drv.msm(d_points, d_scalars, stop - start, check)[None])
            finally:
                d_points.release()
                d_scalars.release()
            total = part if total is None else total + part
        return drv.identity() if total is None else to_limbs(total)

    def load_circuit(self, pce: PrecompiledCircuit, device: int = 0, *, streamed: bool = False,
                     chunk_rows: int = CIRCUIT_CHUNK_ROWS) -> OpenclCircuit:
        """Upload the circuit's coefficient table and its matrices (resident until ``release``),
        or, ``streamed``, two buffers of ``chunk_rows`` rows that each evaluation copies the
        matrices through from the circuit's own host arrays."""
        if device != 0:
            raise BackendUnavailable(f"this OpenclBackend drives one device (index 0), not {device}")
        with self._lock, device_errors(f"load_circuit {pce.name}"):
            return self._r1cs.load(pce, streamed=streamed, chunk_rows=chunk_rows)

    def evaluate_r1cs(self, circuit: OpenclCircuit, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m = circuit.circuit.num_constraints
        with self._lock, device_errors(f"evaluate_r1cs of {m} rows"):
            d_z = self._r1cs.upload_z(circuit, z)
            outs = self._r1cs.evaluate(circuit, d_z)
            return tuple(download(self.queue, o, (m, FR_LIMBS)) for o in outs)  # type: ignore[return-value]

    def prove_start(self, srs: OpenclSrs, part: SynthesizedPartition | WitnessPartition) -> OpenclPending:
        if srs.released:
            raise ValueError("prove_start: the SRS handle has been released")
        pending = OpenclPending()
        pending.future = self._worker.submit(self._prove, srs, part, pending.cancel)
        return pending

    def prove_finish(self, pending: OpenclPending) -> ProofSums:
        assert pending.future is not None
        try:
            return pending.future.result()
        except CancelledError:  # cancelled before the proving thread took it
            raise ProveCancelled("partition cancelled (prove_cancel) before it started") from None

    def prove_cancel(self, pending: OpenclPending) -> None:
        """A partition still queued never starts; a running one stops at its next check (the
        host waits for the queue between the transforms of H and between MSM stages)."""
        pending.cancel.set()
        if pending.future is not None:
            pending.future.cancel()

    def generate_srs(self, circuit: OpenclCircuit, secrets: SetupSecrets) -> tuple[OpenclSrs, np.ndarray]:
        """A test key of the circuit, loaded, with its input columns at tau for the verifying
        key: the QAP on the host (backends/cpu/keygen.py), the points on this device."""
        from cuzk_plugin.backends.cpu.keygen import input_sums, proving_key_from_qap, qap_from_pce

        qap = qap_from_pce(circuit.circuit, secrets)
        key = proving_key_from_qap(qap, secrets, self._key_multiples)
        srs = self.load_srs(key)
        srs.source = key  # the host form a host copy is made from, where a lane streams it
        return srs, input_sums(qap)

    def _key_multiples(self, vectors: list[tuple[str, np.ndarray]]) -> list[np.ndarray]:
        """k * G for each ``(group, scalars)`` on this device (fixed_base.cl), as Filecoin's
        uncompressed bytes: one table a group, its window sized for all of that group's points,
        freed when done."""
        counts = {group: sum(s.shape[0] for g, s in vectors if g == group) for group, _ in vectors}
        total = sum(counts.values())
        out = []
        with self._lock, device_errors(f"key points ({total} fixed-base multiples)"):
            drivers = {group: FixedBaseDriver(self.context, self.queue, (self._g1 if group == "g1" else self._g2).k,
                                              1 if group == "g1" else 2) for group in counts}
            try:
                for group, scalars in vectors:
                    limbs = drivers[group].multiples(scalars, table_bits(counts[group]))
                    out.append(g1_limbs_to_raw(limbs) if group == "g1" else g2_limbs_to_raw(limbs))
            finally:
                for drv in drivers.values():
                    drv.release()
        return out

    def _prove(self, srs: OpenclSrs, part: SynthesizedPartition | WitnessPartition,
               cancel: threading.Event) -> ProofSums:
        """H on the device (it never leaves it; for a WitnessPartition a, b, c are evaluated there
        too), then the four G1 MSMs and the G2 MSM; ProveCancelled at the first check after
        ``cancel`` is set (what was enqueued is waited for, so the buffers go only after it)."""

        def check() -> None:
            self.queue.finish()
            if cancel.is_set():
                raise ProveCancelled("partition cancelled (prove_cancel)")

        if cancel.is_set():
            raise ProveCancelled("partition cancelled (prove_cancel)")
        if part.domain_size - 1 != srs.counts["h"]:
            raise ValueError(f"partition needs {part.domain_size - 1} H points, the key has {srs.counts['h']}")
        b_scalars = part.b_scalars()
        with self._lock, device_errors(f"proving a partition of {part.num_constraints} constraints"):
            try:
                if isinstance(part, WitnessPartition):
                    n = part.domain_size
                    d_z = self._r1cs.upload_z(part.circuit, part.z())
                    abc = self._r1cs.evaluate(part.circuit, d_z, pad_to=n, to_mont=True)
                    check()
                    h, _ = self._ntt.quotient_h_device(abc, n, check)
                else:
                    h, _ = self._ntt.quotient_h(part.a, part.b, part.c, check)
                check()
                sums = {"h": self._msm_of(srs, "h", h, check)}
                for name, scalars in (("l", part.aux_assignment), ("a", part.a_scalars()), ("b_g1", b_scalars)):
                    if scalars.shape[0] != srs.counts[name]:
                        raise ValueError(f"partition has {scalars.shape[0]} {name} scalars, the key {srs.counts[name]} points")
                    check()
                    sums[name] = self._msm_of(srs, name, scalars, check)
                check()
                sums["b_g2"] = self._msm_of(srs, "b_g2", b_scalars, check)
            except ProveCancelled:
                self.queue.finish()  # nothing enqueued may outlive the buffers it reads
                raise
        return ProofSums(**sums)
