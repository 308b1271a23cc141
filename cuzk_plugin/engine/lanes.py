"""Lanes: one (backend, device) pair each, with ``gpu_workers_per_device`` worker slots, and the
blocking per-partition GPU step that runs on a worker's thread.

The step is prove_start (H and the G1 MSMs), a cancellation check, prove_finish (the G2 MSM,
wait for the device), then the backend-agnostic assembly with fresh r, s.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from cuzk_plugin.backends.protocol import Backend, DeviceInfo
from cuzk_plugin.backends.registry import get_backend
from cuzk_plugin.formats.partition import SynthesizedPartition
from cuzk_plugin.config import Config, ConfigError
from cuzk_plugin.formats.params import ProvingKey, VerifyingKey
from cuzk_plugin.formats.proof import Proof
from cuzk_plugin.groth16.prover import assemble, random_fr

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Lane:
    """A device of a backend; ``name`` is ``"<backend>:<device>"``."""

    name: str
    backend: Backend
    device: DeviceInfo

    def load_srs(self, key: ProvingKey):
        return self.backend.load_srs(key, self.device.index)


class PartitionCancelled(Exception):
    """The job was cancelled while its partition was on the device (result dropped)."""


@dataclass(frozen=True)
class GpuStepTimes:
    """perf_counter stamps of one GPU step."""

    start: float
    started: float
    finished: float
    assembled: float


def build_lanes(config: Config, backends: list[Backend] | None = None) -> tuple[list[Lane], str]:
    """Lanes of the configured backend (then the fallbacks), and a line saying what was chosen."""
    chosen = []
    if backends is None:
        backends = [get_backend(config.gpus.backend)]
        chosen.append(f"backend '{config.gpus.backend}' -> {backends[0].name}")
        for name in config.gpus.fallback_backends:
            backends.append(get_backend(name))
            chosen.append(f"fallback {name}")
    else:
        chosen.append("backends given by the caller: " + ", ".join(b.name for b in backends))
    lanes: list[Lane] = []
    for i, backend in enumerate(backends):
        devices = backend.devices()
        if config.gpus.devices and i == 0:
            wanted = set(config.gpus.devices)
            missing = wanted - {d.index for d in devices}
            if missing:
                raise ConfigError(f"[gpus] devices: {sorted(missing)} not among {backend.name}'s devices {[d.index for d in devices]}")
            devices = [d for d in devices if d.index in wanted]
        for dev in devices:
            name = f"{backend.name}:{dev.index}"
            while any(lane.name == name for lane in lanes):
                name += "'"
            lanes.append(Lane(name, backend, dev))
    if not lanes:
        raise ConfigError("no device to prove on (the backend reports none)")
    summary = "; ".join(chosen) + "; lanes " + ", ".join(f"{ln.name} ({ln.device.name})" for ln in lanes)
    return lanes, summary


def prove_step(lane: Lane, handle, part: SynthesizedPartition, vk: VerifyingKey,
               cancelled: threading.Event) -> tuple[Proof, GpuStepTimes]:
    """One partition on one device (blocking: runs on a GPU worker thread)."""
    t0 = time.perf_counter()
    pending = lane.backend.prove_start(handle, part)
    t1 = time.perf_counter()
    sums = lane.backend.prove_finish(pending)  # always: it frees what prove_start holds
    t2 = time.perf_counter()
    if cancelled.is_set():
        raise PartitionCancelled()
    proof = assemble(vk, sums, random_fr(), random_fr())
    return proof, GpuStepTimes(t0, t1, t2, time.perf_counter())
