"""`OpenclDevices`: every OpenCL device of a host as one Backend, a device index each.

An :class:`~cuzk_plugin.backends.opencl.backend.OpenclBackend` drives one device; the engine
makes a lane per device a backend reports, so the daemon proves with an ``OpenclDevices`` of one
``OpenclBackend`` per device (``OpenclBackend.every_device``). The set owns its backends: it
makes the other devices' backends of the first one's class and closes them all; it knows a
device's backend only through :class:`DeviceBackend`, so it imports none.
Handles made on a device (keys, circuits) remember their backend, so ``prove_start`` and
``evaluate_r1cs`` run on the device that holds them.

Which devices (:meth:`OpenclDevices.around`): the one ``CUZK_OPENCL_DEVICE`` names, alone;
else the chosen device and every other GPU of every platform (a multi-GPU host); a chosen
device that is no GPU (PoCL on the host CPU) alone.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from cuzk_plugin.backends.opencl.device import ENV_DEVICE, all_devices, describe, import_pyopencl, probe_devices
from cuzk_plugin.backends.protocol import CIRCUIT_CHUNK_ROWS, DeviceInfo, ProofSums
from cuzk_plugin.errors import BackendUnavailable
from cuzk_plugin.formats.params import ProvingKey, SetupSecrets
from cuzk_plugin.formats.partition import SynthesizedPartition, WitnessPartition
from cuzk_plugin.formats.pce import PrecompiledCircuit

log = logging.getLogger(__name__)


class DeviceBackend(Protocol):
    """What the set uses of one OpenCL device's backend (an ``OpenclBackend``): its pyopencl
    device and limb width, a constructor for another device of the host, and the Backend
    calls the set forwards (handles are the device backend's own)."""

    device: Any
    limb_bits: int

    def __init__(self, platform: int | str | None = None, device: int | str | None = None,
                 limb_bits: int | None = None) -> None: ...

    def close(self) -> None: ...

    def devices(self) -> list[DeviceInfo]: ...

    def load_srs(self, key: Any, device: int = 0, *, resident: Any = None, stream_chunk: int = 1 << 24) -> Any: ...

    def device_memory(self, device: int = 0) -> tuple[int, int]: ...

    def set_memory_limit(self, limit_bytes: int, device: int = 0) -> None: ...

    def host_key(self, key: Any, device: int = 0) -> Any: ...

    def load_circuit(self, pce: PrecompiledCircuit, device: int = 0, *, streamed: bool = False,
                     chunk_rows: int = CIRCUIT_CHUNK_ROWS) -> Any: ...

    def evaluate_r1cs(self, circuit: Any, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def prove_start(self, srs: Any, part: SynthesizedPartition | WitnessPartition) -> Any: ...

    def prove_finish(self, pending: Any) -> ProofSums: ...

    def prove_cancel(self, pending: Any) -> None: ...

    def generate_srs(self, circuit: Any, secrets: SetupSecrets) -> tuple[Any, np.ndarray]: ...

    def ntt(self, x: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray: ...

    def quotient_h(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray: ...

    def msm_g1(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray: ...

    def msm_g2(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray: ...


def _is_gpu(device: Any) -> bool:
    """``device`` (a pyopencl Device) is a GPU."""
    return bool(device.type & import_pyopencl().device_type.GPU)


@dataclass
class OnDevice:
    """A handle (key or circuit) of one device's backend, with that backend."""

    inner: Any
    backend: DeviceBackend
    device: int

    @property
    def nbytes(self) -> int:
        return int(self.inner.nbytes)

    @property
    def circuit(self) -> PrecompiledCircuit:
        """The circuit a circuit handle holds (what WitnessPartition.on checks)."""
        return self.inner.circuit

    @property
    def streamed(self) -> bool:
        """A circuit handle's matrices stream from the host."""
        return bool(self.inner.streamed)

    @property
    def host_bytes(self) -> int:
        """A circuit handle's host bytes (its streamed matrices; 0 resident)."""
        return int(self.inner.host_bytes)

    def release(self) -> None:
        self.inner.release()


class OpenclDevices:
    """The Backend protocol over several OpenCL devices (index = position in ``backends``)."""

    name = "opencl"

    def __init__(self, backends: list[DeviceBackend]):
        if not backends:
            raise BackendUnavailable("OpenclDevices: no device")
        self.backends = list(backends)

    @classmethod
    def probe(cls) -> str | None:
        return probe_devices()

    @classmethod
    def around(cls, first: DeviceBackend) -> OpenclDevices:
        """``first``'s device and, unless ``CUZK_OPENCL_DEVICE`` names one device or ``first``
        is no GPU, every other GPU of the host (one backend of ``first``'s class each, ``first`` reused)."""
        if os.environ.get(ENV_DEVICE) or not _is_gpu(first.device):
            return cls([first])
        others = [e for e in all_devices() if _is_gpu(e[2]) and e[2] != first.device]
        if others:
            log.info("opencl: proving on every GPU: %s and %s", first.device.name.strip(), describe(others))
        return cls([first] + [type(first)(p, d, first.limb_bits) for p, d, _ in others])

    def __repr__(self) -> str:
        return f"OpenclDevices({self.backends!r})"

    def close(self) -> None:
        for b in self.backends:
            b.close()

    def devices(self) -> list[DeviceInfo]:
        out = []
        for i, b in enumerate(self.backends):
            (info,) = b.devices()
            out.append(DeviceInfo(index=i, name=info.name, memory_bytes=info.memory_bytes, kind=info.kind))
        return out

    def _on(self, device: int) -> DeviceBackend:
        if not 0 <= device < len(self.backends):
            raise BackendUnavailable(f"no OpenCL device {device} (devices 0..{len(self.backends) - 1})")
        return self.backends[device]

    # -- proving -------------------------------------------------------------------------
    def device_memory(self, device: int = 0) -> tuple[int, int]:
        return self._on(device).device_memory()

    def set_memory_limit(self, limit_bytes: int, device: int = 0) -> None:
        self._on(device).set_memory_limit(limit_bytes)

    def host_key(self, key: Any, device: int = 0) -> Any:
        """A key's host copy (checked on ``device``), which keys on every device can attach to."""
        inner = key.inner if isinstance(key, OnDevice) else key
        return self._on(device).host_key(inner)

    def load_srs(self, key: Any, device: int = 0, *, resident=None, stream_chunk: int = 1 << 24) -> OnDevice:
        backend = self._on(device)
        if resident is None and isinstance(key, ProvingKey):
            return OnDevice(backend.load_srs(key), backend, device)
        return OnDevice(backend.load_srs(key, resident=resident, stream_chunk=stream_chunk), backend, device)

    def load_circuit(self, pce: PrecompiledCircuit, device: int = 0, *, streamed: bool = False,
                     chunk_rows: int = CIRCUIT_CHUNK_ROWS) -> OnDevice:
        backend = self._on(device)
        return OnDevice(backend.load_circuit(pce, streamed=streamed, chunk_rows=chunk_rows), backend, device)

    def evaluate_r1cs(self, circuit: OnDevice, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return circuit.backend.evaluate_r1cs(circuit.inner, z)

    def prove_start(self, srs: OnDevice, part: SynthesizedPartition | WitnessPartition) -> tuple[DeviceBackend, Any]:
        if isinstance(part, WitnessPartition):
            circuit = part.circuit
            if not isinstance(circuit, OnDevice) or circuit.device != srs.device:
                raise ValueError(f"prove_start: the circuit handle {circuit!r} is not on the key's device {srs.device}")
            part = part.on(circuit.inner)
        return srs.backend, srs.backend.prove_start(srs.inner, part)

    def prove_finish(self, pending: tuple[DeviceBackend, Any]) -> ProofSums:
        backend, inner = pending
        return backend.prove_finish(inner)

    def prove_cancel(self, pending: tuple[DeviceBackend, Any]) -> None:
        backend, inner = pending
        backend.prove_cancel(inner)

    def generate_srs(self, circuit: OnDevice, secrets: SetupSecrets) -> tuple[OnDevice, np.ndarray]:
        """A test key made on the device that holds ``circuit`` (OpenclBackend.generate_srs)."""
        srs, input_sums = circuit.backend.generate_srs(circuit.inner, secrets)
        return OnDevice(srs, circuit.backend, circuit.device), input_sums

    # -- primitives (device 0) -----------------------------------------------------------
    def ntt(self, x: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
        return self.backends[0].ntt(x, inverse=inverse, coset=coset)

    def quotient_h(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        return self.backends[0].quotient_h(a, b, c)

    def msm_g1(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        return self.backends[0].msm_g1(bases, scalars)

    def msm_g2(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        return self.backends[0].msm_g2(bases, scalars)
