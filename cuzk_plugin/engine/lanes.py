"""Lanes: one (backend, device) pair each, with ``gpu_workers_per_device`` worker slots, and the
blocking per-partition GPU step that runs on a worker's thread.

The step is prove_start (H and the G1 MSMs), prove_finish (the G2 MSM, wait for the device),
a cancellation check, then the backend-agnostic assembly with fresh r, s. A job's
:class:`CancelFlag` interrupts the step while prove_finish waits: setting it calls the backend's
``prove_cancel``, so the call returns (and the worker slot frees) within a second.

A lane's key handle (:class:`LaneKey`) holds the backend's SRS and, beside it, the pre-compiled
circuits its partitions come with (``load_circuit`` once per circuit, counted in the handle's
``nbytes`` and so in the SRS memory budget, released with the key). A :class:`WitnessPartition`
reaches the backend on the lane's resident copy of its circuit; a backend without
``load_circuit`` gets a, b, c evaluated on the host instead.

On a backend that can stream a key from host memory (``host_key``), each key gets a residency
plan on each lane (:mod:`.residency`) from the memory the lane may use: the whole key resident
where it fits beside its partitions, else the vectors that fit, the rest streamed from the
key's one page-locked host copy (:mod:`.host_keys`, shared by every lane), and the circuit's
a, b, c evaluated on the host where even its matrices do not fit.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from cuzk_plugin.backends.protocol import Backend, DeviceInfo, KeyStreaming, LinkBandwidth
from cuzk_plugin.backends.registry import auto_choice, get_backend
from cuzk_plugin.config import Config, ConfigError
from cuzk_plugin.engine.device_key import DeviceKey
from cuzk_plugin.engine.errors import CircuitUnavailable
from cuzk_plugin.engine.host_keys import HostKeyCopies
from cuzk_plugin.engine.residency import (
    CONTEXT_BYTES,
    LINK_BYTES_PER_S,
    STREAM_CHUNK,
    CircuitFootprint,
    DeviceMemoryTooSmall,
    ResidencyPlan,
    plan_residency,
)
from cuzk_plugin.errors import DeviceOutOfMemory, ProveCancelled
from cuzk_plugin.formats.params import ProvingKey, VerifyingKey
from cuzk_plugin.formats.partition import SynthesizedPartition, WitnessPartition
from cuzk_plugin.formats.proof import Proof
from cuzk_plugin.groth16.prover import assemble, random_fr

log = logging.getLogger(__name__)


#: What a lane's room shrinks by after a partition ran out of memory under its plan: this share
#: of what plans may use beside the context, and at least SHRINK_MIN_BYTES.
SHRINK_FRACTION = 0.05
SHRINK_MIN_BYTES = 1 << 30


@dataclass(frozen=True)
class Lane:
    """A device of a backend; ``name`` is ``"<backend>:<device>"``."""

    name: str
    backend: Backend
    device: DeviceInfo

    #: Largest key (log2 of its domain) a backend that makes keys on the host may make for a
    #: DeviceKey ([srs] max_generated_log2); a backend making them on its device is bounded by
    #: the memory budget alone.
    max_host_keygen_log2: int = 30
    #: Device bytes the daemon may use on this lane (the free memory when the lane was built,
    #: capped by [gpus] device_memory_limit); 0: unknown, every key resident as loaded.
    device_budget: int = 0
    #: Host -> device bytes a second from page-locked memory, measured when the lane was built
    #: (0: not measured: the backend cannot, or it failed).
    link_bytes_per_s: float = 0.0
    #: Partitions in flight on the lane at once ([gpus] gpu_workers_per_device).
    in_flight: int = 2
    #: Points a streamed chunk holds at most (the plan may choose fewer where memory is short).
    stream_chunk: int = STREAM_CHUNK
    #: The host's page-locked key copies, shared by every lane built together.
    host_keys: HostKeyCopies = field(default_factory=HostKeyCopies, compare=False, hash=False)
    #: The key copies alive on this lane, and their residency plans by circuit id.
    _keys: weakref.WeakSet = field(default_factory=weakref.WeakSet, compare=False, hash=False, repr=False)
    plans: dict[str, ResidencyPlan] = field(default_factory=dict, compare=False, hash=False, repr=False)
    #: Guards _keys and plans: keys of several circuits load on one lane at once (worker threads).
    _keys_lock: threading.Lock = field(default_factory=threading.Lock, compare=False, hash=False, repr=False)
    #: Bytes taken off device_budget after partitions ran out of memory under its plans.
    _shortfall: list[int] = field(default_factory=lambda: [0], compare=False, hash=False, repr=False)

    @property
    def room(self) -> int:
        """Device bytes the lane's plans may use: device_budget, less what :meth:`shrink_room`
        took off after a plan proved too generous."""
        return max(0, self.device_budget - self._shortfall[0])

    def shrink_room(self) -> int:
        """A partition ran out of device memory alone under this lane's plan (the planner's
        estimates fell short on this device): plan with less room from now on (SHRINK_FRACTION,
        SHRINK_MIN_BYTES). Returns the room left."""
        with self._keys_lock:
            self._shortfall[0] += max(SHRINK_MIN_BYTES, int((self.device_budget - CONTEXT_BYTES) * SHRINK_FRACTION))
        return self.room

    @property
    def streams_keys(self) -> bool:
        """Keys get a residency plan here (the backend streams vectors from a host copy)."""
        return self.device_budget > 0 and callable(getattr(self.backend, "host_key", None))

    def resident_bytes(self, exclude: LaneKey | None = None) -> int:
        """Device bytes of the key copies (and their circuits) alive on this lane."""
        with self._keys_lock:
            keys = list(self._keys)
        return sum(k.device_bytes for k in keys if k is not exclude and not k.released)

    def key_plans(self) -> tuple[ResidencyPlan, ...]:
        """The residency plans of the keys loaded on this lane (for status)."""
        with self._keys_lock:
            return tuple(self.plans.values())

    def _record_plan(self, circuit_id: str, plan: ResidencyPlan) -> None:
        with self._keys_lock:
            self.plans[circuit_id] = plan
        self._apply_in_flight()

    def _forget_plan(self, circuit_id: str, plan: ResidencyPlan | None) -> None:
        with self._keys_lock:
            if self.plans.get(circuit_id) is plan:
                self.plans.pop(circuit_id, None)
        self._apply_in_flight()

    @property
    def _sets_in_flight(self) -> Callable[..., Any] | None:
        fn = getattr(self.backend, "set_partitions_in_flight", None)
        return fn if callable(fn) else None

    def _apply_in_flight(self) -> None:
        """The device keeps as many partitions at once as the tightest plan of the lane allows."""
        if self._sets_in_flight is None or not self.streams_keys:
            return
        with self._keys_lock:
            count = min([self.in_flight, 2, *(p.in_flight for p in self.plans.values())])
        self._sets_in_flight(max(1, count), self.device.index)

    def plan(self, circuit_id: str, counts: Mapping[str, int], circuit: CircuitFootprint | None = None,
             exclude: LaneKey | None = None) -> ResidencyPlan | None:
        """The residency plan of a key of ``counts`` here (None where keys are not planned);
        DeviceMemoryTooSmall, with the figures, where even a streamed key cannot be proved."""
        if not self.streams_keys:
            return None
        plan = plan_residency(circuit_id, self.name, counts, available_bytes=self.room,
                              in_flight=self.in_flight, min_in_flight=1 if self._sets_in_flight else self.in_flight,
                              circuit=circuit, other_resident_bytes=self.resident_bytes(exclude),
                              stream_chunk=self.stream_chunk, link_bytes_per_s=self.link_bytes_per_s)
        (log.info if plan.all_resident else log.warning)("residency %s", plan.describe())
        return plan

    def load_srs(self, key: ProvingKey | DeviceKey, *, circuit_id: str = "",
                 circuit: CircuitFootprint | None = None) -> LaneKey:
        """``key``'s copy on this lane, as its residency plan says (``circuit``: the device bytes
        of the circuit its partitions will load beside it, where known)."""
        if isinstance(key, DeviceKey):
            return self._make_key(key)
        name = circuit_id or (key.path.name if key.path else "key")
        plan = self.plan(name, key.counts(), circuit)
        if plan is not None:
            self._record_plan(name, plan)
        if plan is None or plan.all_resident:
            return LaneKey(self, self.backend.load_srs(key, self.device.index), plan, name)
        handle = LaneKey(self, None, plan, name)
        streaming = cast(KeyStreaming, self.backend)
        try:
            self._attach(handle, key, lambda: streaming.host_key(key, self.device.index))
        except BaseException:
            handle.release()
            raise
        return handle

    def _attach(self, handle: LaneKey, key: Any, make_host: Callable[[], Any]) -> None:
        """Point ``handle`` at a device key attached to ``key``'s shared host copy, as planned."""
        plan = handle.plan
        assert plan is not None
        host = self.host_keys.acquire(key, make_host)
        handle.streams_from = key
        resident = None if plan.all_resident else plan.resident
        streaming = cast(KeyStreaming, self.backend)
        handle.srs = streaming.load_srs(host, self.device.index, resident=resident, stream_chunk=plan.stream_chunk)

    def _make_key(self, key: DeviceKey) -> LaneKey:
        """Make ``key``'s copy on this lane from the lane's resident copy of its circuit, or attach
        to the host copy another lane made of it; moved to the host copy where the plan streams."""
        generate = getattr(self.backend, "generate_srs", None)
        if not callable(generate):
            raise CircuitUnavailable(f"key of '{key.circuit_id}' is made on the lanes, and backend "
                                     f"{self.backend.name} cannot make keys")
        log2 = (key.mapped.circuit.domain_size - 1).bit_length()
        if not getattr(self.backend, "keygen_on_device", False) and log2 > self.max_host_keygen_log2:
            raise CircuitUnavailable(f"key of '{key.circuit_id}' (2^{log2}) would be made on the host by backend "
                                     f"{self.backend.name}: refused, [srs] max_generated_log2 = {self.max_host_keygen_log2}")
        handle = LaneKey(self, None, None, key.circuit_id)
        try:
            t0 = time.perf_counter()
            # Planned as a key read from a file would be (the circuit resident, streamed by rows or
            # on the host), not as keygen needs it: keygen's resident circuit is dropped after it.
            plan = self.plan(key.circuit_id, {"ic": key.mapped.circuit.num_inputs, **key.counts()},
                             circuit=CircuitFootprint.of(key.mapped.circuit), exclude=handle)
            if plan is not None and self.host_keys.existing(key) is not None:
                handle.plan = plan
                self._record_plan(key.circuit_id, plan)
                self._attach(handle, key, lambda: None)  # another lane made it: no second generation
                log.info("srs %s: TEST KEY attached on %s to the host copy another lane made (%.2fs)", key.circuit_id,
                         self.name, time.perf_counter() - t0)
                return handle
            circuit = handle.circuit(key.mapped)  # resident: keygen reads the matrices on the device
            if isinstance(circuit, _HostCircuit):  # a backend that makes keys from the host's copy
                circuit = circuit.handle
            # A key the plan streams is made straight into host memory where the backend can: the
            # device then holds one vector at a time, not the whole key. Keygen sizes itself from
            # the device's free memory, not from [gpus] device_memory_limit (TEST keys only).
            streams = plan is not None and not plan.all_resident
            into_host = streams and getattr(self.backend, "keygen_into_host", False)
            try:
                srs, input_sums = generate(circuit, key.secrets, to_host=True) if into_host else generate(circuit, key.secrets)
            except DeviceOutOfMemory as exc:
                raise DeviceMemoryTooSmall(
                    f"key of '{key.circuit_id}' is a TEST KEY made on the lanes, and {self.name} cannot make it: {exc}. "
                    f"Make it once on a larger card and write it as a .params file (cuzk params write-test-key)") from exc
            key.accept(input_sums, self.name)
            handle.plan = plan
            if plan is not None:
                if plan.circuit_streamed or plan.circuit_on_host:
                    handle.drop_circuit(key.mapped.circuit)  # loaded again as the plan says, at the first partition
                self._record_plan(key.circuit_id, plan)
            if streams:
                try:
                    self._attach(handle, key, lambda: cast(KeyStreaming, self.backend).host_key(srs))
                finally:
                    srs.release()
            else:
                handle.srs = srs
        except BaseException:
            handle.release()
            raise
        log.warning("srs %s: TEST KEY made on %s in %.2fs (%.1f GB on the device)", key.circuit_id, self.name,
                    time.perf_counter() - t0, handle.nbytes / 1e9)
        return handle


class LaneKey:
    """A key on a lane (resident, or partly streamed from its host copy as ``plan`` says), and
    the pre-compiled circuits loaded beside it."""

    def __init__(self, lane: Lane, srs, plan: ResidencyPlan | None = None, circuit_id: str = ""):
        self.lane = lane
        self.srs = srs
        self.plan = plan
        self.circuit_id = circuit_id
        #: The key whose host copy (in the lane's HostKeyCopies) this copy streams from, or None.
        self.streams_from: Any = None
        self.released = False
        self._circuits: dict[str, Any] = {}  # a backend's CircuitHandle, or the CPU's host copy
        self._lock = threading.Lock()
        with lane._keys_lock:
            lane._keys.add(self)

    @property
    def nbytes(self) -> int:
        """Bytes of this copy (counted in the memory budget): the resident vectors, the circuits
        (a streamed one's page-locked host copy too)."""
        return int(getattr(self.srs, "nbytes", 0)) + sum(int(getattr(c, "nbytes", 0)) + int(getattr(c, "host_bytes", 0))
                                                         for c in self._circuits.values())

    @property
    def host_memory_bytes(self) -> int:
        """The bytes of this copy the [memory] budget counts: all of them on a lane whose device
        is the host CPU, or whose device memory no residency plan governs (nothing else bounds
        them); else only its host memory, the page-locked rows of a streamed circuit and a
        circuit prepared for evaluation on the host. (The shared host copy of a streamed key is
        counted by the key, once.)"""
        if self.lane.device.kind == "cpu" or not self.lane.streams_keys:
            return self.nbytes
        return sum(int(getattr(c, "nbytes", 0)) if isinstance(c, _HostCircuit) else int(getattr(c, "host_bytes", 0))
                   for c in self._circuits.values())

    @property
    def device_bytes(self) -> int:
        """Device bytes of this copy: the resident vectors and the circuits loaded on the device."""
        return int(getattr(self.srs, "nbytes", 0)) + sum(int(getattr(c, "nbytes", 0)) for c in self._circuits.values()
                                                         if not isinstance(c, _HostCircuit))

    @property
    def host_copy(self) -> Any:
        """The page-locked host copy this key streams from (shared with other lanes), or None."""
        return None if self.streams_from is None else self.lane.host_keys.existing(self.streams_from)

    @property
    def evaluates_on_device(self) -> bool:
        """The backend evaluates a, b, c itself (else the host does, on a prepared copy): where
        it can, and the circuit fits beside the key (the residency plan)."""
        return callable(getattr(self.lane.backend, "load_circuit", None)) and not (self.plan and self.plan.circuit_on_host)

    def circuit(self, mapped) -> Any:
        """The lane's handle of ``mapped``'s circuit, loaded on first use: on the backend, or
        prepared for host evaluation where the backend cannot evaluate matrices."""
        pce = mapped.circuit
        with self._lock:
            handle = self._circuits.get(pce.digest)
            if handle is None:
                t0 = time.perf_counter()
                on_device = self.evaluates_on_device and self._circuit_fits(pce)
                if on_device and self.plan is not None and self.plan.circuit_streamed:
                    handle = self.lane.backend.load_circuit(pce, self.lane.device.index, streamed=True)
                elif on_device:
                    handle = self.lane.backend.load_circuit(pce, self.lane.device.index)
                else:
                    from cuzk_plugin.backends.cpu.backend import CpuBackend

                    handle = _HostCircuit(CpuBackend().load_circuit(pce))
                self._circuits[pce.digest] = handle
                how = (" (a, b, c on the host)" if not on_device else
                       f" (rows streamed from {getattr(handle, 'host_bytes', 0) / 1e6:.1f} MB of page-locked host memory)"
                       if getattr(handle, "host_bytes", 0) else "")
                log.info("pce %s: loaded for %s%s (%.1f MB on the device) in %.3fs", pce.name, self.lane.name, how,
                         getattr(handle, "nbytes", 0) / 1e6, time.perf_counter() - t0)
            return handle

    def drop_circuit(self, pce) -> None:
        """Free this copy's handle of ``pce``'s circuit (the next :meth:`circuit` loads it again)."""
        with self._lock:
            handle = self._circuits.pop(pce.digest, None)
        if handle is not None:
            handle.release()

    def _circuit_fits(self, pce) -> bool:
        """Room for the circuit on the device beside every key copy of the lane and the plan's
        working set (always, where keys are not planned)."""
        if self.plan is None:
            return True
        footprint = CircuitFootprint.of(pce)
        need = footprint.streamed if self.plan.circuit_streamed else footprint.resident
        room = self.lane.room - CONTEXT_BYTES - self.lane.resident_bytes() - self.plan.working_bytes
        if need <= room:
            return True
        log.warning("pce %s: %.1f GB does not fit on %s beside the key copies (%.1f GB free of the plan's); its a, b, c "
                    "are evaluated on the host (slower)", pce.name, need / 1e9, self.lane.name, max(room, 0) / 1e9)
        return False

    def release(self) -> None:
        with self._lock:
            if self.released:
                return
            self.released = True
            for handle in self._circuits.values():
                handle.release()
            self._circuits.clear()
        if self.srs is not None:
            self.srs.release()
        if self.streams_from is not None:
            key, self.streams_from = self.streams_from, None
            self.lane.host_keys.release(key)
        self.lane._forget_plan(self.circuit_id, self.plan)


class _HostCircuit:
    """A circuit prepared for a, b, c on the host (the CPU backend's handle), beside a lane's key."""

    def __init__(self, handle):
        self.handle = handle
        self.nbytes = int(getattr(handle, "nbytes", 0))

    def release(self) -> None:
        self.handle.release()


class PartitionCancelled(Exception):
    """The job was cancelled while its partition was on the device (result dropped)."""


class CancelFlag(threading.Event):
    """A job's cancellation, seen by GPU worker threads: :meth:`set` also interrupts the backend
    calls running for the job (the hooks :meth:`interrupting` registered: their prove_cancel)."""

    def __init__(self) -> None:
        super().__init__()
        self._hooks: dict[int, Callable[[], None]] = {}
        self._hooks_lock = threading.Lock()
        self._next = 0

    def set(self) -> None:
        super().set()
        with self._hooks_lock:
            hooks = list(self._hooks.values())
        for hook in hooks:  # the flag first, then the hooks: a hook registered meanwhile sees the flag
            try:
                hook()
            except Exception:
                log.exception("interrupting a backend call failed (it will end on its own)")

    @contextlib.contextmanager
    def interrupting(self, hook: Callable[[], None]) -> Iterator[None]:
        """While the block runs, :meth:`set` calls ``hook`` (at once when already set)."""
        with self._hooks_lock:
            key = self._next
            self._next += 1
            self._hooks[key] = hook
        try:
            if self.is_set():
                hook()
            yield
        finally:
            with self._hooks_lock:
                del self._hooks[key]


@dataclass(frozen=True)
class GpuStepTimes:
    """perf_counter stamps of one GPU step."""

    start: float
    started: float
    finished: float
    assembled: float
    #: seconds of a, b, c evaluation measured apart (on the host, for a backend without
    #: load_circuit); 0 where the backend evaluates inside prove_start.
    evaluate_s: float = 0.0
    #: the backend's own stage times of the call, ms (CUDA: upload, queue, r1cs, h, g1 msm,
    #: g2 wait, total device work); empty where the backend keeps none.
    device_ms: dict[str, float] = field(default_factory=dict)


def build_lanes(config: Config, backends: list[Backend] | None = None) -> tuple[list[Lane], str]:
    """Lanes of the configured backend (then the fallbacks), and a line saying what was chosen.

    Every device the backend reports is a lane unless ``[gpus] devices`` picks some: every
    visible CUDA device, every OpenCL GPU."""
    chosen = []
    if backends is None:
        reasons = auto_choice()[1] if config.gpus.backend == "auto" else []
        backends = [get_backend(config.gpus.backend)]
        every_device = getattr(backends[0], "every_device", None)
        if callable(every_device):  # a backend instance that drives one device (OpenCL): all of them
            backends[0] = every_device()
        chosen.append(f"backend '{config.gpus.backend}' -> {backends[0].name}" + (f" ({'; '.join(reasons)})" if reasons else ""))
        for name in config.gpus.fallback_backends:
            backends.append(get_backend(name))
            chosen.append(f"fallback {name}")
    else:
        chosen.append("backends given by the caller: " + ", ".join(b.name for b in backends))
    lanes: list[Lane] = []
    host_keys = HostKeyCopies()  # one page-locked copy of a key for every lane of the host
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
            budget = device_budget(backend, dev, config.gpus.device_memory_limit)
            lanes.append(Lane(name, backend, dev, max_host_keygen_log2=config.srs.max_generated_log2,
                              device_budget=budget, link_bytes_per_s=link_bandwidth(backend, dev) if budget else 0.0,
                              in_flight=config.gpus.gpu_workers_per_device, host_keys=host_keys))
    if not lanes:
        raise ConfigError("no device to prove on (the backend reports none)")
    summary = "; ".join(chosen) + "; lanes " + ", ".join(f"{ln.name} ({ln.device.name})" for ln in lanes)
    return lanes, summary


def device_budget(backend: Backend, device: DeviceInfo, limit: int) -> int:
    """Device bytes the daemon may use on ``device``: what is free now, capped by ``limit``
    ([gpus] device_memory_limit, 0: none), which the backend also keeps its transient work
    under. 0 for a backend that cannot stream keys (its keys stay resident as loaded)."""
    if not isinstance(backend, KeyStreaming):
        return 0
    free, total = backend.device_memory(device.index)
    if limit:
        if limit > total:
            log.warning("[gpus] device_memory_limit %.1f GB is above %s's %.1f GB: the device's memory is the limit",
                        limit / 1e9, device.name, total / 1e9)
        backend.set_memory_limit(limit, device.index)
    budget = min(free, limit) if limit else free
    log.info("lane %s:%d may use %.1f GB of device memory (%.1f of %.1f GB free%s)", backend.name, device.index,
             budget / 1e9, free / 1e9, total / 1e9, f", limit {limit / 1e9:.1f} GB" if limit else "")
    return budget


def link_bandwidth(backend: Backend, device: DeviceInfo) -> float:
    """The host -> device link of ``device`` measured from page-locked memory, bytes a second
    (~30 ms); 0 where the backend cannot measure it or the measurement fails (logged: the lane
    proves as before, its plans state the copies' floor at an assumed PCIe 5.0 x16 link)."""
    if not isinstance(backend, LinkBandwidth):
        return 0.0
    try:
        rate = float(backend.link_bytes_per_s(device.index))
        if not rate > 0:  # NaN too
            raise ValueError(f"the measure gave {rate} bytes a second")
    except Exception as exc:  # a measurement, never a reason to lose the lane
        log.warning("lane %s:%d: the host -> device link could not be measured (%s); plans assume %.0f GB/s",
                    backend.name, device.index, exc, LINK_BYTES_PER_S / 1e9)
        return 0.0
    log.info("lane %s:%d: host -> device link %.1f GB/s from page-locked memory (measured)", backend.name,
             device.index, rate / 1e9)
    return rate


def on_lane(lane: Lane, handle: LaneKey, part: SynthesizedPartition | WitnessPartition):
    """``part`` as ``lane``'s backend takes it: a WitnessPartition on the lane's resident copy of
    its circuit, or evaluated on the host where the backend cannot evaluate matrices."""
    if not isinstance(part, WitnessPartition):
        return part
    circuit = handle.circuit(part.circuit)
    if not isinstance(circuit, _HostCircuit):
        return part.on(circuit)
    from cuzk_plugin.backends.cpu.backend import CpuBackend, witness_to_synthesized

    return witness_to_synthesized(part, *CpuBackend().evaluate_r1cs(circuit.handle, part.z()))


#: A backend's own stage times (``device_ms`` keys, in the order they run in one call) and the
#: timeline stage each becomes: the wait for the upload (the partition ahead still reading its
#: assignment, or uploading), the upload, the wait for the partition computing, a, b, c taken
#: from the pool, then evaluated from the circuit, H, the G1 MSMs, the wait for the G2 MSM,
#: the partition's buffers freed.
DEVICE_STAGES = (("upload_wait", "upload_wait"), ("upload", "upload"), ("queue", "gpu_queue"),
                 ("abc_alloc", "abc_alloc"), ("r1cs", "abc"),
                 ("h", "h"), ("g1_msm", "msm_g1"), ("g2_wait", "msm_g2_wait"), ("release", "release"))


def device_stages(times: GpuStepTimes) -> list[tuple[str, float, float]]:
    """(timeline stage, start, end) perf_counter stamps of the backend's stages in one call, laid
    end to end back from the moment its results were back on the host (the backend reports
    durations, not times), then the proof's assembly on the host. Empty for a backend that
    keeps no stage times."""
    if not times.device_ms:
        return []
    s = {key: max(0.0, float(v)) / 1e3 for key, v in times.device_ms.items()}
    # the device work before H that total_ms counts and no stage names (the scalars' selection)
    unnamed = max(0.0, s.get("total", 0.0) - s.get("h", 0.0) - s.get("g1_msm", 0.0) - s.get("g2_wait", 0.0))
    spans, end = [], times.finished
    for key, stage in reversed(DEVICE_STAGES):
        seconds = s.get(key, 0.0)
        if key == "r1cs":
            end -= unnamed
        if seconds > 0:
            spans.append((stage, end - seconds, end))
        end -= seconds
    spans.reverse()
    return [*spans, ("assemble", times.finished, times.assembled)]


def prove_step(lane: Lane, handle: LaneKey, part: SynthesizedPartition | WitnessPartition, vk: VerifyingKey,
               cancelled: threading.Event) -> tuple[Proof, GpuStepTimes]:
    """One partition on one device (blocking: runs on a GPU worker thread)."""
    t0 = time.perf_counter()
    witness = isinstance(part, WitnessPartition)
    part = on_lane(lane, handle, part)
    t_eval = time.perf_counter() - t0 if witness and isinstance(part, SynthesizedPartition) else 0.0
    pending = lane.backend.prove_start(handle.srs, part)
    t1 = time.perf_counter()
    prove_cancel = getattr(lane.backend, "prove_cancel", None)
    interrupt = (cancelled.interrupting(lambda: prove_cancel(pending))
                 if isinstance(cancelled, CancelFlag) and callable(prove_cancel) else contextlib.nullcontext())
    try:
        with interrupt:
            sums = lane.backend.prove_finish(pending)  # always: it frees what prove_start holds
    except ProveCancelled:
        raise PartitionCancelled() from None
    t2 = time.perf_counter()
    if cancelled.is_set():
        raise PartitionCancelled()
    proof = assemble(vk, sums, random_fr(), random_fr())
    device_ms = dict(getattr(pending, "timings_ms", None) or {})
    return proof, GpuStepTimes(t0, t1, t2, time.perf_counter(), t_eval, device_ms)
