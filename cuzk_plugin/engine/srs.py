"""The SRS manager: proving keys by circuit id, in three tiers, under one memory budget.

    COLD  the `.params` file on disk (or a key we can generate: synthetic circuits, test keys)
    WARM  ProvingKey.open(): memory-mapped, checked, verifying key decoded and pinned
    HOT   loaded on a lane (backend.load_srs) and ready for prove_start

Keys load on demand (the first partition that needs one waits for it, concurrent callers
share one load) or on PreloadSRS. Every byte of host memory a key holds counts against one
budget ([memory] total_budget - safety_margin): WARM keys by their file size, HOT copies by the
host memory they hold (all of it on a CPU lane; on a GPU, page-locked circuit rows), the
page-locked host copy a key streams from once; a copy on a device that no residency plan
governs (its memory unknown) counts whole, as nothing else bounds it. Keys stay loaded (a PoSt
key is there when its deadline comes): only a load that would exceed the budget evicts, and
only keys idle (ref count 0) for at least [memory] eviction_min_idle, least recently used
first, as cuzk does; until one is, the load waits.
EvictSRS releases the handles and drops the mapping, so the memory really goes.

Each lane holds its own copy of a key's resident part (in device memory on a GPU: the lane's
residency plan governs it); the page-locked host copy that lanes stream the rest from is one
per key and counts once.
A partition holds its key (``ref_count``) and the copy on its lane (``lane_refs``) while it
proves; to make room a lane evicts the least recently used idle copy (of another key, or of
the same key on another lane) or an idle key as a whole, and otherwise waits until a copy goes
idle: it never fails for want of room unless the key alone is larger than the budget. Loads in
progress reserve their bytes, so lanes loading at once cannot overrun the budget together.
Device memory the same way: a key whose residency plan finds no room on a lane beside other
keys' copies there, where it would fit alone, has the least recently used idle one released
(or waits for one to go idle) instead of being refused.

A key is checked once when it loads and its verifying key is pinned (:func:`pin_verifying_key`):
a file replaced by another valid key of the same circuit is refused, so self-verification never
checks a proof only against the file that made it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import hashlib
import json
import logging
import os
import struct
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuzk_plugin.engine.circuits import KeySource
from cuzk_plugin.engine.device_key import DeviceKey
from cuzk_plugin.engine.errors import SrsBudgetExceeded, SrsInUse
from cuzk_plugin.engine.residency import DeviceMemoryTooSmall
from cuzk_plugin.errors import ParamsError
from cuzk_plugin.filecoin import param_files
from cuzk_plugin.formats.params import VK_BYTES, ProvingKey
from cuzk_plugin.formats.pce import MappedCircuit

log = logging.getLogger(__name__)

HOT, WARM, COLD = 0, 1, 2
TIER_NAMES = {HOT: "hot", WARM: "warm", COLD: "cold"}
#: How often a daemon waiting for another process's key generation checks the lock.
KEY_LOCK_POLL_S = 0.2


@dataclass
class SrsEntry:
    """One circuit's key: the mapping, its handles per lane, and who uses it."""

    circuit_id: str
    path: Path
    key: ProvingKey | DeviceKey | None = None
    handles: dict[str, Any] = field(default_factory=dict)
    ref_count: int = 0
    last_used: float = field(default_factory=time.monotonic)
    load_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: Partitions proving with the copy on each lane (a copy in use is never evicted).
    lane_refs: dict[str, int] = field(default_factory=dict)
    #: When each lane's copy was last used (least recently used copies go first).
    lane_used: dict[str, float] = field(default_factory=dict)
    #: One load at a time per lane (a load on one lane never waits for another lane's).
    lane_locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    #: Loads in progress (the entry is in use while it loads, refs or not).
    loading: int = 0

    def copy_bytes(self, lane: str) -> int:
        return int(getattr(self.handles[lane], "nbytes", 0)) if lane in self.handles else 0

    def idle_copies(self) -> list[str]:
        return [lane for lane in self.handles if not self.lane_refs.get(lane)]

    @property
    def tier(self) -> int:
        return HOT if self.handles else WARM if self.key is not None else COLD

    @property
    def warm_bytes(self) -> int:
        """The file's mapping: its size, but none while a page-locked host copy of the key
        exists. The copy then serves every lane, and the mapping's pages are clean page cache
        that the kernel reclaims: the budget counts one copy of the key in host memory."""
        if not isinstance(self.key, ProvingKey) or self.host_bytes:
            return 0
        return self.path.stat().st_size if self.path.exists() else 0

    @property
    def hot_bytes(self) -> int:
        """The lanes' copies as the budget counts them: a device's copies live in device memory,
        which each lane's residency plan governs, not this budget (LaneKey.host_memory_bytes; a
        handle that does not say counts whole)."""
        return sum(int(getattr(h, "host_memory_bytes", getattr(h, "nbytes", 0))) for h in self.handles.values())

    @property
    def host_bytes(self) -> int:
        """The page-locked host copy the lanes' copies stream from: one per key, however many
        lanes share it."""
        copies = {id(c): int(getattr(c, "nbytes", 0)) for h in self.handles.values()
                  if (c := getattr(h, "host_copy", None)) is not None}
        return sum(copies.values())

    @property
    def held_bytes(self) -> int:
        """Bytes this key holds now, as the budget counts them (0 when cold)."""
        return self.warm_bytes + self.hot_bytes + self.host_bytes

    @property
    def size_bytes(self) -> int:
        """Bytes this key holds now, or its file size when cold."""
        if self.tier == COLD:
            return self.path.stat().st_size if self.path.exists() else 0
        return self.held_bytes


def _embedded_vk_bytes(path: Path) -> bytes:
    """The verifying key at the front of a .params file, as stored (868 + 96 * |ic| bytes)."""
    with open(path, "rb") as fh:
        head = fh.read(VK_BYTES + 4)
        if len(head) < VK_BYTES + 4:
            raise ParamsError(f"{path}: {len(head)} bytes, too short for a parameter file")
        (n_ic,) = struct.unpack_from(">I", head, VK_BYTES)
        return head + fh.read(96 * n_ic)


def vk_pin_path(params: Path) -> Path:
    """Where the digest of a key's verifying key is recorded: ``<stem>.vk-pin`` beside it."""
    return params.with_name(f"{params.stem}.vk-pin")


def record_vk_pin(params: Path, circuit_id: str) -> str:
    """Record the SHA-256 of ``params``' verifying key beside it (tmp file + rename); the digest."""
    digest = hashlib.sha256(_embedded_vk_bytes(params)).hexdigest()
    pin = vk_pin_path(params)
    tmp = pin.with_name(f".{pin.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"circuit_id": circuit_id, "file": params.name, "vk_sha256": digest}) + "\n")
    os.replace(tmp, pin)
    return digest


def open_checked_once(path: Path) -> ProvingKey:
    """Map a `.params` file, its points' encodings checked (flags, coordinates below p) only the
    first time this file is opened: the verdict is kept by the file's identity (param-checks.json
    in [srs] state_dir), so a restart does not read 47 GB again (100 s for porep-32g). A file that
    changes (size, mtime, inode) is checked again; backends check each point on its curve as they load it."""
    verdicts = param_files.VERDICTS
    key = ProvingKey.open(path, check=False)
    if verdicts.get(path, "points", None) != "ok":
        threads = max(1, min(8, (os.cpu_count() or 1) // 2))
        key.check_vectors(threads=threads, progress=_check_progress(path, key.vectors_nbytes, threads))
        verdicts.put(path, "points", "ok", None)
    return key


def _check_progress(path: Path, nbytes: int, threads: int) -> Callable[[int, int], None]:
    """What an operator sees while a large key's points are checked the first time (~100 s of
    one core for 47 GB): the size up front, then how far it is every 10 s, then its time."""
    progress = param_files.LongReadLog(f"srs: {path.name}", "points checked", nbytes)
    if progress.loud:
        log.info("srs: checking the points of %s (%.1f GB) on %d thread(s), once: the verdict is kept", path.name,
                 nbytes / 1e9, threads)

    def report(done: int, total: int) -> None:
        progress.update(done)
        if done == total:
            progress.finish()

    return report


def pin_verifying_key(source: KeySource, key: ProvingKey) -> None:
    """Refuse a key whose verifying key is not the pinned one, so that self-verification (which
    uses ``key.vk``) checks proofs against the pinned key, never just against the file itself.

    Filecoin circuits: the pin is Filecoin's `.vk` (or the `.params`), checked against the
    manifest's digests once (verdict cached). Other circuits: the SHA-256 recorded in
    ``<stem>.vk-pin`` when the key was made or first loaded."""
    embedded = _embedded_vk_bytes(source.path)
    if source.filecoin is not None:
        pinned = source.filecoin.pinned_vk_bytes()
        if embedded != pinned:
            files = source.filecoin
            against = files.vk if files.vk.is_file() else "the digest Filecoin publishes"
            raise ParamsError(f"{source.path}: its verifying key differs from the pinned one ({against}): "
                              f"a different key for circuit '{source.circuit_id}'; refusing it")
        return
    pin = vk_pin_path(source.path)
    if not pin.exists():
        digest = record_vk_pin(source.path, source.circuit_id)
        log.info("srs %s: verifying key pinned on first load (sha256 %s, in %s)", source.circuit_id, digest[:16], pin.name)
        return
    try:
        recorded = json.loads(pin.read_text())["vk_sha256"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ParamsError(f"{pin}: unreadable verifying-key pin ({exc}); delete it to pin {source.path.name} again") from None
    got = hashlib.sha256(embedded).hexdigest()
    if got != recorded:
        raise ParamsError(
            f"{source.path}: its verifying key (sha256 {got[:16]}...) is not the one pinned in {pin.name} "
            f"({str(recorded)[:16]}...): the file was replaced by another key for '{source.circuit_id}'; refusing it "
            f"(delete {pin} only if the new key is meant)")


@asynccontextmanager
async def key_file_lock(path: Path, circuit_id: str) -> AsyncIterator[None]:
    """Held while a key is made at ``path`` (an flock on ``<path>.lock``): two daemons sharing a
    param cache make it once, the second waiting and then using the first's (each making its own
    would replace the file and pin under the other). Polled, so a cancelled job stops waiting."""
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        t0 = None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if t0 is None:
                    t0 = time.perf_counter()
                    log.info("srs %s: another process is making this key (%s.lock held); waiting for it",
                             circuit_id, path.name)
                await asyncio.sleep(KEY_LOCK_POLL_S)
        if t0 is not None:
            log.info("srs %s: waited %.1fs for the other process's key", circuit_id, time.perf_counter() - t0)
        yield
    finally:
        os.close(fd)  # releases the lock


@dataclass(frozen=True)
class SrsSnapshot:
    circuit_id: str
    tier: int
    size_bytes: int
    ref_count: int


class SrsManager:
    """Keys by circuit id. ``resolve`` maps an id to its :class:`KeySource`; ``run_blocking``
    runs file and setup work off the event loop (a process for key generation)."""

    def __init__(self, resolve: Callable[[str], KeySource], budget_bytes: int, min_idle_s: float,
                 run_blocking: Callable[..., Any], generate: Callable[[Any], Any]):
        self._resolve = resolve
        self.budget_bytes = budget_bytes
        self.min_idle_s = min_idle_s
        self._run_blocking = run_blocking
        self._generate = generate
        self._entries: dict[str, SrsEntry] = {}
        self._changed = asyncio.Condition()
        #: Bytes of loads in progress (counted against the budget before they land).
        self._reserved = 0

    # -- queries ---------------------------------------------------------------------------
    @property
    def used_bytes(self) -> int:
        return sum(e.held_bytes for e in self._entries.values())

    def hot_bytes_on(self, lane: str) -> int:
        return sum(e.copy_bytes(lane) for e in self._entries.values())

    def resident_on(self, lane: str) -> list[SrsSnapshot]:
        """The keys HOT on ``lane``: bytes of that lane's copy, partitions proving with it."""
        return [SrsSnapshot(e.circuit_id, HOT, e.copy_bytes(lane), e.lane_refs.get(lane, 0))
                for e in self._entries.values() if lane in e.handles]

    def snapshot(self) -> list[SrsSnapshot]:
        return [SrsSnapshot(e.circuit_id, e.tier, e.size_bytes, e.ref_count) for e in self._entries.values()]

    def allocations(self) -> list[tuple[str, int, float, bool]]:
        """Loaded keys: (circuit id, bytes, seconds since last use, evictable now under pressure)."""
        now = time.monotonic()
        return [(e.circuit_id, e.held_bytes, now - e.last_used,
                 e.ref_count == 0 and not e.loading and now - e.last_used >= self.min_idle_s)
                for e in self._entries.values() if e.tier != COLD]

    def lanes_of(self, circuit_id: str) -> set[str]:
        """Lanes where the key is HOT."""
        entry = self._entries.get(circuit_id)
        return set(entry.handles) if entry else set()

    def is_loaded(self, circuit_id: str) -> bool:
        e = self._entries.get(circuit_id)
        return e is not None and e.tier != COLD

    # -- loading ---------------------------------------------------------------------------
    def _entry(self, circuit_id: str) -> SrsEntry:
        entry = self._entries.get(circuit_id)
        if entry is None:
            source = self._resolve(circuit_id)
            entry = self._entries[circuit_id] = SrsEntry(circuit_id, source.path)
        return entry

    async def warm(self, circuit_id: str) -> ProvingKey | DeviceKey:
        """The key mapped and checked (generated first when it is ours and missing); for a key
        made on the lanes, its circuit mapped and its secrets drawn."""
        entry = self._entry(circuit_id)
        try:
            return await self._warm(entry)
        finally:
            self._forget_if_unused(entry)

    def _forget_if_unused(self, entry: SrsEntry) -> None:
        """Drop an entry that never got a key and that nobody uses (a refused preload or job):
        it would show in status as a COLD 0-byte key."""
        if (entry.key is None and not entry.handles and not entry.loading and not entry.ref_count
                and not entry.load_lock.locked() and self._entries.get(entry.circuit_id) is entry):
            del self._entries[entry.circuit_id]

    async def _warm(self, entry: SrsEntry) -> ProvingKey | DeviceKey:
        circuit_id = entry.circuit_id
        async with entry.load_lock:
            if entry.key is None:
                source = self._resolve(circuit_id)
                if source.device_key is not None:
                    entry.key = await self._draw_device_key(source)
                    entry.last_used = time.monotonic()
                    return entry.key
                what = "TEST KEY (made here, not Filecoin's)" if source.test_key else "key"
                if not source.path.exists():
                    if source.generate is None:
                        raise FileNotFoundError(f"{source.path} ({what} of circuit '{circuit_id}') does not exist")
                    async with key_file_lock(source.path, circuit_id):
                        if not source.path.exists():  # else another daemon made it while this one waited
                            t0 = time.perf_counter()
                            log.warning("srs %s: no key in the param cache, generating a %s at %s (once)", circuit_id,
                                        what, source.path)
                            await self._generate(source.generate)
                            await self._run_blocking(record_vk_pin, source.path, circuit_id)
                            log.info("srs %s: generated in %.2fs", circuit_id, time.perf_counter() - t0)
                size = source.path.stat().st_size
                await self._make_room(size, keep=circuit_id)
                t0 = time.perf_counter()
                self._reserved += size
                entry.loading += 1
                try:
                    key = await self._run_blocking(open_checked_once, source.path)
                    await self._run_blocking(pin_verifying_key, source, key)
                finally:
                    self._reserved -= size
                    entry.loading -= 1
                entry.key = key
                log.info("srs %s: mapped %s (%.1f MB, %s, verifying key pinned) in %.3fs", circuit_id, source.path.name,
                         size / 1e6, what, time.perf_counter() - t0)
            entry.last_used = time.monotonic()
            return entry.key

    async def _draw_device_key(self, source: KeySource) -> DeviceKey:
        t0 = time.perf_counter()
        pce_path = await self._run_blocking(source.device_key)
        mapped = await self._run_blocking(MappedCircuit.open, pce_path)
        key = await self._run_blocking(DeviceKey.draw, source.circuit_id, mapped, source.path.with_suffix(".vk"))
        log.warning("srs %s: a TEST KEY (not Filecoin's) will be made on each lane from the pre-compiled circuit %s "
                    "(%.1f GB a lane, held in device memory only; %.2fs)", source.circuit_id, Path(pce_path).name,
                    key.vectors_nbytes / 1e9, time.perf_counter() - t0)
        return key

    async def hot(self, circuit_id: str, lane: str, load: Callable[[Any], Any]) -> tuple[Any, Any]:
        """The key's handle on ``lane`` (``load(key)`` makes one: backend.load_srs on a device)."""
        entry = self._entry(circuit_id)
        entry.loading += 1  # held from here: the mapping is not evicted under the load
        try:
            key = await self.warm(circuit_id)
            async with entry.lane_locks.setdefault(lane, asyncio.Lock()):
                handle = entry.handles.get(lane)
                if handle is None:
                    need = key.vectors_nbytes
                    while True:  # until it loads, freeing other keys' copies on the lane where they are in the way
                        await self._make_room(need, keep=circuit_id, lane=lane)
                        t0 = time.perf_counter()
                        self._reserved += need
                        try:
                            handle = await self._run_blocking(load, key)
                            break
                        except DeviceMemoryTooSmall as exc:
                            if not exc.fits_alone:
                                raise
                            refused = exc
                        finally:
                            self._reserved -= need
                        log.info("srs %s: no room on %s beside the other keys' copies (%.1f GB of them); freeing one",
                                 circuit_id, lane, refused.other_resident_bytes / 1e9)
                        if not await self._free_device_copy(keep=circuit_id, lane=lane):
                            raise refused
                    entry.handles[lane] = handle
                    log.info("srs %s: loaded on %s (%.1f MB; %.1f of %.1f MB in use) in %.3fs", circuit_id, lane,
                             getattr(handle, "nbytes", 0) / 1e6, self.used_bytes / 1e6, self.budget_bytes / 1e6,
                             time.perf_counter() - t0)
        finally:
            entry.loading -= 1
            self._forget_if_unused(entry)
        entry.last_used = entry.lane_used[lane] = time.monotonic()
        return key, handle

    def add_ref(self, circuit_id: str, lane: str = "") -> None:
        """Hold the key, and its copy on ``lane`` when given (in use: never evicted), until
        :meth:`drop_ref` with the same arguments."""
        entry = self._entry(circuit_id)
        entry.ref_count += 1
        if lane:
            entry.lane_refs[lane] = entry.lane_refs.get(lane, 0) + 1

    def drop_ref(self, circuit_id: str, lane: str = "") -> None:
        entry = self._entries[circuit_id]
        entry.ref_count -= 1
        entry.last_used = time.monotonic()
        if lane:
            entry.lane_refs[lane] -= 1
            entry.lane_used[lane] = entry.last_used
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- eviction --------------------------------------------------------------------------
    async def _make_room(self, need: int, keep: str, lane: str = "") -> None:
        """Evict until ``need`` more bytes fit, else wait for a key or a copy to go idle long enough.

        Candidates, least recently used first, each idle for at least ``min_idle_s``: an idle key
        as a whole (not ``keep``), an idle copy of a key still in use elsewhere; ``keep``'s own
        idle copies on other lanes last."""
        if need > self.budget_bytes:
            raise SrsBudgetExceeded(
                f"key of '{keep}' needs {need:,} bytes, more than the whole budget of {self.budget_bytes:,} "
                "([memory] total_budget - safety_margin)"
            )
        while self.used_bytes + self._reserved + need > self.budget_bytes:
            candidates: list[tuple[bool, float, SrsEntry, str]] = []  # (own key, last use, entry, lane or "" = whole)
            for e in self._entries.values():
                if e.tier == COLD:
                    continue
                if e.circuit_id != keep and e.ref_count == 0 and not e.loading:
                    candidates.append((False, e.last_used, e, ""))
                    continue
                candidates += [(e.circuit_id == keep, e.lane_used.get(ln, e.last_used), e, ln)
                               for ln in e.idle_copies() if ln != lane]
            now = time.monotonic()
            ripe = [c for c in candidates if now - c[1] >= self.min_idle_s]
            if ripe:
                _, last, victim, on = min(ripe, key=lambda c: (c[0], c[1]))
                freed = self._drop_copy(victim, on) if on else self._drop(victim)
                log.info("srs %s: evicted%s (idle %.0fs) to make room for '%s'%s (%.1f MB freed, %.1f MB needed)",
                         victim.circuit_id, f" from {on}" if on else "", now - last, keep, f" on {lane}" if lane else "",
                         freed / 1e6, need / 1e6)
                continue
            await self._wait_for_idle(
                [c[1] for c in candidates],
                f"'{keep}'{f' on {lane}' if lane else ''} waits for a key to go idle (need {need / 1e6:.1f} MB, "
                f"{self.used_bytes / 1e6:.1f} of {self.budget_bytes / 1e6:.1f} MB in use, {self._reserved / 1e6:.1f} MB loading)")

    async def _wait_for_idle(self, idle_since: list[float], waiting: str) -> None:
        """Wake when a key or a copy is released, or when the first of those idle since
        ``idle_since`` reaches min_idle_s; ``waiting`` says who waits, for the log."""
        until = min((self.min_idle_s - (time.monotonic() - last) for last in idle_since), default=None)
        log.info("srs: %s%s", waiting, f" ([memory] eviction_min_idle: {until:.0f}s more)" if until is not None else "")
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), until)

    async def _free_device_copy(self, keep: str, lane: str) -> bool:
        """Release the least recently used copy of another key on ``lane`` (its device memory),
        idle there for at least ``min_idle_s``; until one is, wait. False where no other key
        has a copy there (nothing this manager holds is in the way)."""
        while True:
            others = [(e.lane_used.get(lane, e.last_used), e) for e in self._entries.values()
                      if e.circuit_id != keep and lane in e.handles]
            if not others:
                return False
            idle = [(last, e) for last, e in others if not e.lane_refs.get(lane)]
            now = time.monotonic()
            ripe = [(last, e) for last, e in idle if now - last >= self.min_idle_s]
            if ripe:
                last, victim = min(ripe, key=lambda c: c[0])
                freed = self._drop_copy(victim, lane)
                log.info("srs %s: evicted from %s (idle %.0fs) for the device memory '%s' needs there (%.1f MB freed)",
                         victim.circuit_id, lane, now - last, keep, freed / 1e6)
                await self._notify()
                return True
            await self._wait_for_idle([last for last, _ in idle],
                                      f"'{keep}' waits for a copy of another key on {lane} to go idle")

    def replan_copy(self, circuit_id: str, lane: str) -> None:
        """Release ``circuit_id``'s copy on ``lane`` so that the next :meth:`hot` there plans it
        afresh (the lane's room shrank). Only for a caller that holds every worker of the lane:
        no other partition proves with that copy."""
        entry = self._entries.get(circuit_id)
        if entry is not None and lane in entry.handles:
            self._drop_copy(entry, lane)

    def _drop_copy(self, entry: SrsEntry, lane: str) -> int:
        """Release ``entry``'s copy on ``lane`` (the mapping and other lanes' copies stay). The
        bytes freed: the copy's, and the host copy's with its last lane (less the mapping's,
        counted again once no host copy serves the lanes)."""
        before = entry.held_bytes
        handle = entry.handles.pop(lane)
        entry.lane_used.pop(lane, None)
        release = getattr(handle, "release", None)
        if release is not None:
            release()
        return before - entry.held_bytes

    def _drop(self, entry: SrsEntry) -> int:
        freed = entry.held_bytes
        for handle in entry.handles.values():
            release = getattr(handle, "release", None)
            if release is not None:
                release()
        entry.handles.clear()
        entry.lane_used.clear()
        entry.key = None
        gc.collect()  # the memmap closes when its last view goes
        return freed

    async def evict(self, circuit_id: str) -> tuple[bool, int]:
        """(was_loaded, freed_bytes). Refuses a key that partitions are proving with."""
        entry = self._entries.get(circuit_id)
        if entry is None or entry.tier == COLD:
            return False, 0
        if entry.ref_count or entry.loading:
            raise SrsInUse(f"key of '{circuit_id}' is in use by {entry.ref_count} partition(s); evict it when they finish")
        async with entry.load_lock:
            freed = self._drop(entry)
        log.info("srs %s: evicted (%.1f MB freed)", circuit_id, freed / 1e6)
        await self._notify()
        return True, freed

    def close(self) -> None:
        for entry in self._entries.values():
            self._drop(entry)
