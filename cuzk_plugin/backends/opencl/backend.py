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
from cuzk_plugin.backends.protocol import DeviceInfo, ProofSums
from cuzk_plugin.bls12_381.fields import FR_LIMBS
from cuzk_plugin.bls12_381.points import g1_limbs_to_raw, g2_limbs_to_raw
from cuzk_plugin.errors import BackendUnavailable, EncodingError, ProveCancelled
from cuzk_plugin.formats.params import ProvingKey, SetupSecrets
from cuzk_plugin.formats.partition import SynthesizedPartition, WitnessPartition
from cuzk_plugin.formats.pce import PrecompiledCircuit


@dataclass
class OpenclSrs:
    """A proving key's five vectors resident in device memory (Montgomery affine points)."""

    buffers: dict
    counts: dict
    nbytes: int
    released: bool = field(default=False)

    def release(self) -> None:
        for buf in self.buffers.values():
            buf.release()
        self.buffers = {}
        self.released = True


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
    def load_srs(self, key: ProvingKey, device: int = 0) -> OpenclSrs:
        """Decode the key's vectors chunk by chunk straight into device buffers (host memory
        holds one chunk, not a second copy of the key) and check every point is on its curve
        (the subgroup check is skipped, as production readers do)."""
        if device != 0:
            raise BackendUnavailable(f"this OpenclBackend drives one device (index 0), not {device}")
        counts = {name: int(getattr(key, name).shape[0]) for name in ("h", "l", "a", "b_g1", "b_g2")}
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

    def load_circuit(self, pce: PrecompiledCircuit, device: int = 0) -> OpenclCircuit:
        """Upload the circuit's matrices and coefficient table (resident until ``release``)."""
        if device != 0:
            raise BackendUnavailable(f"this OpenclBackend drives one device (index 0), not {device}")
        with self._lock, device_errors(f"load_circuit {pce.name}"):
            return self._r1cs.load(pce)

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
        return self.load_srs(proving_key_from_qap(qap, secrets, self._key_multiples)), input_sums(qap)

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
                sums = {"h": self._g1.msm(srs.buffers["h"], h, srs.counts["h"], check)}
                for name, scalars in (("l", part.aux_assignment), ("a", part.a_scalars()), ("b_g1", b_scalars)):
                    if scalars.shape[0] != srs.counts[name]:
                        raise ValueError(f"partition has {scalars.shape[0]} {name} scalars, the key {srs.counts[name]} points")
                    check()
                    d_scalars = upload(self.context, self.queue, np.ascontiguousarray(scalars))
                    sums[name] = self._g1.msm(srs.buffers[name], d_scalars, srs.counts[name], check)
                check()
                d_b = upload(self.context, self.queue, np.ascontiguousarray(b_scalars))
                sums["b_g2"] = self._g2.msm(srs.buffers["b_g2"], d_b, srs.counts["b_g2"], check)
            except ProveCancelled:
                self.queue.finish()  # nothing enqueued may outlive the buffers it reads
                raise
        return ProofSums(**sums)
