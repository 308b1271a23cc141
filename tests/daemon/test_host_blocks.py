"""The engine's recycled partition blocks (engine/host_blocks.py): zeroed before they are
offered again, pinned once with the backend, never unlinked by the worker that borrows one,
freed beyond the bound, when idle and at stop; proofs from recycled blocks verify."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np
import pytest
from daemon_helpers import synthetic_request

from cuzk_plugin.adapters.synthetic import SyntheticTask
from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.engine import host_blocks
from cuzk_plugin.engine.host_blocks import HostBlockPool
from cuzk_plugin.engine.synthesis import SharedPartition, SynthesisFailed, output_block, run_task
from cuzk_plugin.server.proto import cuzk_pb2 as pb


class RecordingPinner:
    def __init__(self) -> None:
        self.pinned: dict[int, int] = {}
        self.calls: list[tuple[str, int]] = []

    def pin_host(self, address: int, nbytes: int) -> None:
        assert address not in self.pinned, "pinned twice"
        self.pinned[address] = nbytes
        self.calls.append(("pin", address))

    def unpin_host(self, address: int) -> None:
        del self.pinned[address]
        self.calls.append(("unpin", address))


class PinningCpuBackend(CpuBackend, RecordingPinner):
    def __init__(self) -> None:
        CpuBackend.__init__(self)
        RecordingPinner.__init__(self)


def _exists(name: str) -> bool:
    return os.path.exists(f"/dev/shm/{name.lstrip('/')}")


@pytest.fixture
def small_blocks_count(monkeypatch):
    """The test partitions' blocks (KBs) are pooled as a 32 GiB partition's 4 GB block is."""
    monkeypatch.setattr(host_blocks, "MIN_POOLED_BYTES", 1)


@pytest.fixture
def uploads_pinned(monkeypatch) -> list[bool]:
    """Whether each partition the engine maps uploads from a pinned block, in order."""
    pinned: list[bool] = []
    init = SharedPartition.__init__

    def recording_init(self, ref, blocks=None):
        init(self, ref, blocks)
        pinned.append(self.pinned)

    monkeypatch.setattr(SharedPartition, "__init__", recording_init)
    return pinned


def _block(nbytes: int, fill: int) -> str:
    shm = shared_memory.SharedMemory(create=True, size=nbytes)
    shm.buf[:] = bytes([fill]) * nbytes
    name = shm.name
    shm.close()
    return name


def test_a_released_block_comes_back_zeroed_pinned_once_and_offered_for_its_circuit(small_blocks_count):
    pinner = RecordingPinner()
    pool = HostBlockPool(2, pinner=pinner)
    try:
        name = _block(8192, 0xAB)
        shm = pool.attach(name)
        assert pool.offer("c") == ()  # nothing free yet, no size known
        pool.returned((), (name,), "c")
        pool.release(shm)
        assert pool.flush()
        assert bytes(shm.buf) == bytes(8192)  # zeroed
        assert list(pinner.pinned.values()) == [8192]
        assert pool.offer("other") == ()
        assert pool.offer("c") == ((name, 8192),)
        assert pool.offer("c") == ()  # offered once
        assert pool.attach(name) is shm  # the pool's mapping (the pinned one), not a new one
        pool.release(shm)
        assert pool.flush() and pinner.calls.count(("pin", next(iter(pinner.pinned)))) == 1
    finally:
        pool.close()
    assert not _exists(name) and pinner.pinned == {}


def test_blocks_beyond_the_bound_idle_ones_and_small_ones_are_freed():
    pool = HostBlockPool(1, idle_s=0.0)
    host_blocks_min = host_blocks.MIN_POOLED_BYTES
    try:
        small = _block(4096, 1)
        shm = pool.attach(small)
        assert not pool.owns(small)  # under MIN_POOLED_BYTES: freed on release, in the pool's thread
        pool.release(shm)
        assert pool.flush() and not _exists(small)
        host_blocks.MIN_POOLED_BYTES = 1
        a, b = _block(4096, 2), _block(4096, 3)
        sa, sb = pool.attach(a), pool.attach(b)
        pool.release(sa)
        pool.release(sb)
        assert pool.flush()
        assert _exists(a) != _exists(b) or not (_exists(a) or _exists(b))  # one kept at most (max_free 1)
        pool._trim()  # idle_s 0: the kept one goes too
        assert not _exists(a) and not _exists(b) and pool.stats() == (0, 0, 0)
    finally:
        host_blocks.MIN_POOLED_BYTES = host_blocks_min
        pool.close()


def test_a_full_pool_makes_room_for_the_size_in_use_not_for_an_ended_jobs(small_blocks_count):
    """Blocks of a job that ended (another size) give their places to the blocks coming back
    now, the longest idle first; blocks of the size coming back are never displaced by it."""
    pinner = RecordingPinner()
    pool = HostBlockPool(2, pinner=pinner)
    try:
        porep = [_block(8192, 1), _block(8192, 2)]
        for name in porep:
            pool.returned((), (name,), "porep")
            pool.release(pool.attach(name))
            assert pool.flush()
        snap = [_block(4096, 3), _block(4096, 4), _block(4096, 5)]
        shms = [pool.attach(name) for name in snap]
        pool.returned((), (snap[0],), "snap")
        pool.release(shms[0])
        assert pool.flush()
        assert not _exists(porep[0]) and _exists(porep[1])  # the longest idle PoRep block made room
        pool.release(shms[1])
        assert pool.flush() and not _exists(porep[1])
        pool.release(shms[2])  # the pool holds two SnapDeals blocks: this one is freed
        assert pool.flush() and not _exists(snap[2])
        assert sorted(pool.offer("snap") + pool.offer("snap")) == sorted([(snap[0], 4096), (snap[1], 4096)])
        assert pool.offer("porep") == ()
        assert sorted(pinner.pinned.values()) == [4096, 4096]  # the displaced blocks were unpinned
        assert pool.stats() == (2, 0, 8192)
        for shm in shms[:2]:  # the offered blocks come back; close frees them
            pool.release(shm)
    finally:
        pool.close()
    assert not any(_exists(n) for n in porep + snap) and pinner.pinned == {}


def test_the_thread_ends_after_close_once_the_last_block_is_back(small_blocks_count):
    """A stopped engine leaves no thread behind; what is released after that is freed inline."""
    pool = HostBlockPool(2)
    name = _block(4096, 4)
    shm = pool.attach(name)  # in use while the pool closes
    pool.close(timeout=0.2)
    assert pool._thread.is_alive() and _exists(name)
    pool.release(shm)
    pool._thread.join(5)
    assert not pool._thread.is_alive() and not _exists(name)
    late = _block(4096, 5)
    pool.release(shared_memory.SharedMemory(name=late))  # done in the caller's thread now
    assert not _exists(late) and pool.flush(0.1)


@dataclass(frozen=True)
class WritesBlocks:
    sizes: tuple[int, ...]

    def synthesize(self):
        names = []
        for n in self.sizes:
            shm = output_block(n)
            shm.buf[:n] = b"\x07" * n
            names.append(shm.name)
        raise ValueError(" ".join(names))


def test_the_worker_writes_into_an_offered_block_and_never_unlinks_it(small_blocks_count):
    pool = HostBlockPool(2, pinner=RecordingPinner())
    try:
        first = run_task(SyntheticTask(4, 1))  # no offer: a block of its own
        (name,) = first.blocks
        fresh = SharedPartition(first, pool)
        assert not fresh.pinned  # made for it: uploaded through staging
        fresh.release()  # adopted, recycled
        pool.returned((), first.blocks, "synthetic-k4")
        assert pool.flush()
        size = pool.attach(name).size
        offer = pool.offer("synthetic-k4")
        assert offer == ((name, size),)
        ref = run_task(SyntheticTask(4, 2), offer, processes=3)
        assert ref.blocks == (name,)  # written into the recycled block
        assert ref.processes == 3 and first.processes == 1  # the share it ran with (CUZK_TIMING)
        shared = SharedPartition(ref, pool)
        assert shared.pinned
        want, _ = SyntheticTask(4, 2).synthesize()
        for field in ("a", "b", "c", "input_assignment", "aux_assignment"):
            np.testing.assert_array_equal(getattr(shared.partition, field), getattr(want, field))
        shared.release()
        pool.returned(offer, ref.blocks, "synthetic-k4")
        assert pool.flush()

        # A task that fails after writing: the offered block stays (the engine's), its own goes.
        offer = pool.offer("synthetic-k4")
        assert offer == ((name, size),)
        with pytest.raises(SynthesisFailed, match="ValueError") as err:
            run_task(WritesBlocks((size, size + 64)), offer)
        mine = str(err.value).split(": ", 1)[1].split()  # the names the task wrote into
        assert mine[0] == name and _exists(name) and not _exists(mine[1])
        pool.returned(offer, (), None)  # zeroed again before the next offer
        assert pool.flush() and bytes(pool.attach(name).buf) == bytes(size)
    finally:
        pool.close()
    assert not _exists(name)


async def test_jobs_prove_from_recycled_pinned_blocks(make_daemon, small_blocks_count, monkeypatch):
    backend = PinningCpuBackend()
    d = await make_daemon(backends=[backend])
    seen: list[str] = []
    attach = HostBlockPool.attach

    def recording_attach(self, name):
        seen.append(name)
        return attach(self, name)

    monkeypatch.setattr(HostBlockPool, "attach", recording_attach)
    names = []
    for k in range(2):
        res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request(f"hb-{k}", log2=4, partitions=3,
                                                                            seed=k)))).result
        assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message  # self-verified
        assert d.engine.host_blocks.flush()
        names.append(set(seen))
        seen.clear()
    assert names[1] & names[0], "the second job reused none of the first job's blocks"
    mapped, free, nbytes = d.engine.host_blocks.stats()
    text = d.engine.metrics_text()
    assert f'cuzk_host_blocks{{state="mapped"}} {float(mapped)}' in text and mapped >= 1
    assert f'cuzk_host_blocks{{state="free"}} {float(free)}' in text and free >= 1
    assert f"cuzk_host_block_bytes {float(nbytes)}" in text and nbytes > 0
    assert backend.pinned and all(_exists(n) for n in names[0] | names[1] if d.engine.host_blocks.owns(n))
    await d.engine.stop()
    assert backend.pinned == {} and not any(_exists(n) for n in names[0] | names[1])


async def test_a_second_proof_uploads_every_partition_from_a_pinned_block(make_daemon, small_blocks_count,
                                                                         uploads_pinned, monkeypatch):
    """A GPU slot's partition frees its window place as it finishes, while its block is still
    being zeroed: the pool keeps a block a slot more than the window, so that the partition
    starting then takes a zeroed, pinned one instead of making one afresh."""
    import ctypes

    memset = ctypes.memset

    def slow_memset(address, value, nbytes):  # zeroing 4.2 GB takes ~0.45 s, a partition's GPU work ~2 s
        time.sleep(0.1)
        return memset(address, value, nbytes)

    class SlowGpu(PinningCpuBackend):
        def prove_finish(self, pending):
            time.sleep(0.3)
            return super().prove_finish(pending)

    monkeypatch.setattr(host_blocks.ctypes, "memset", slow_memset)
    d = await make_daemon(backends=[SlowGpu()], pipeline={"synthesis_lookahead": 2})
    for k in range(2):
        uploads_pinned.clear()
        res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request(f"pin-{k}", log2=4, partitions=8,
                                                                            seed=10 * k)))).result
        assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
        assert d.engine.host_blocks.flush()
    assert len(uploads_pinned) == 8 and all(uploads_pinned), str(uploads_pinned)


def _until(condition, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_prepared_blocks_are_pinned_offered_and_kept_through_idle_until_forgotten(small_blocks_count):
    pinner = RecordingPinner()
    pool = HostBlockPool(3, pinner=pinner, idle_s=0.0)  # idle at once: the trim runs every second
    try:
        assert pool.prepare("c", (8192,)) == 3
        assert pool.prepare("c", (8192,)) == 0  # ready already
        mapped, free, nbytes = pool.stats()
        assert (mapped, free, nbytes) == (3, 3, 3 * 8192)
        assert sorted(pinner.pinned.values()) == [8192] * 3
        time.sleep(1.5)  # a trim has run meanwhile
        assert pool.stats()[:2] == (3, 3)  # kept: its key is preloaded
        ((name, size),) = pool.offer("c")
        assert size == 8192 and name.startswith(f"cuzk_{os.getpid()}_")  # swept as the daemon's if it dies
        shm = pool.attach(name)
        assert bytes(shm.buf) == bytes(8192) and pool.pinned([shm])
        pool.release(shm)
        pool.forget("other")
        time.sleep(1.5)
        assert pool.stats()[0] == 3
        pool.forget("c")
        # Idle, no longer kept: freed and unpinned (the trim unpins after it has let go of the
        # blocks under its lock: the count reaches 0 first).
        assert _until(lambda: pool.stats()[0] == 0 and pinner.pinned == {} and not _exists(name))
    finally:
        pool.close()


def test_prepare_counts_the_blocks_in_use_and_the_sizes_partitions_use_win(small_blocks_count):
    pool = HostBlockPool(3, pinner=RecordingPinner(), idle_s=0.0)
    try:
        name = _block(4096, 1)
        shm = pool.attach(name)  # a partition's own block, adopted
        pool.returned((), (name,), "c")  # c's partitions use 4096-byte blocks
        assert pool.prepare("c", (8192,)) == 2  # its sizes as used, beside the one in use
        assert pool.stats() == (3, 2, 3 * 4096)
        pool.release(shm)
        assert pool.flush() and pool.stats()[:2] == (3, 3)

        assert pool.prepare("d", (8192,)) == 3  # another circuit prepared: it is kept, c's free ones make room now
        assert pool.stats() == (3, 3, 3 * 8192)
        # d's partitions turn out to use another size: the predicted blocks go when idle
        other = _block(2048, 2)
        pool.returned((), (pool.attach(other).name,), "d")
        pool.release(pool.attach(other))
        assert _until(lambda: pool.stats() == (1, 1, 2048))
    finally:
        pool.close()


def test_a_preload_takes_only_the_room_it_needs_from_another_circuits_free_blocks(small_blocks_count):
    pinner = RecordingPinner()
    pool = HostBlockPool(4, pinner=pinner)
    try:
        for fill in (1, 2):  # circuit c's job is over: two free blocks
            shm = pool.attach(_block(4096, fill))
            pool.returned((), (shm.name,), "c")
            pool.release(shm)
        in_use = [pool.attach(_block(8192, 3)), pool.attach(_block(8192, 4))]  # d's partitions, running
        for shm in in_use:
            pool.returned((), (shm.name,), "d")
        assert pool.flush() and pool.stats() == (4, 2, 2 * 4096 + 2 * 8192)
        assert pool.prepare("d", (8192,)) == 2  # d's window is 4: two more, and room for them
        assert pool.stats() == (6, 4, 2 * 4096 + 4 * 8192)  # c's stay: 4 free, the bound
        assert pool.prepare("e", (2048,)) == 4  # four more free: the four free ones go, c's first
        assert pool.stats() == (6, 4, 2 * 8192 + 4 * 2048)
        assert sorted(pinner.pinned.values()) == [2048] * 4  # d's in-use blocks were never pinned here
        for shm in in_use:
            pool.release(shm)
        assert pool.flush()
    finally:
        pool.close()


def test_two_preloads_at_once_make_one_windows_worth(small_blocks_count, monkeypatch):
    """Two PreloadSRS of one circuit at once (two Curio workers warming it): the blocks the
    first is still making count for the second, so the host holds max_free blocks, not twice."""
    import threading

    started, go = threading.Event(), threading.Event()
    memset = host_blocks.ctypes.memset

    def held_memset(address, value, nbytes):  # the first prepare() stays in its making
        started.set()
        go.wait(5)
        return memset(address, value, nbytes)

    pool = HostBlockPool(3, pinner=RecordingPinner())
    try:
        monkeypatch.setattr(host_blocks.ctypes, "memset", held_memset)
        made: list[int] = []
        first = threading.Thread(target=lambda: made.append(pool.prepare("c", (8192,))))
        first.start()
        assert started.wait(5)
        assert pool.prepare("c", (8192,)) == 0  # all three are being made already
        go.set()
        first.join(5)
        assert made == [3] and pool.stats() == (3, 3, 3 * 8192)
    finally:
        go.set()
        pool.close()


def test_prepare_makes_nothing_below_the_pooled_size_or_after_close():
    pool = HostBlockPool(3, pinner=RecordingPinner())
    try:
        assert pool.prepare("c", (4096,)) == 0 and pool.stats() == (0, 0, 0)
        assert pool.prepare("c", ()) == 0
    finally:
        pool.close()
    assert pool.prepare("d", (host_blocks.MIN_POOLED_BYTES,)) == 0 and pool.stats() == (0, 0, 0)


async def test_a_preloaded_circuits_first_proof_uploads_every_partition_from_a_pinned_block(
        make_daemon, small_blocks_count, uploads_pinned, monkeypatch):
    """PreloadSRS makes the circuit's partition blocks ahead (pinned), so its first proof
    uploads none from pageable memory; EvictSRS lets them go when idle."""
    from cuzk_plugin.engine.key_supply import KeySupply

    first = run_task(SyntheticTask(4, 1))  # the synthetic partitions' block size
    size = shared_memory.SharedMemory(name=first.blocks[0]).size
    SharedPartition(first).release()
    uploads_pinned.clear()  # that one was the probe's
    asked: list[str] = []

    def blocks_of(self, circuit_id):
        asked.append(circuit_id)
        return (size,)

    monkeypatch.setattr(KeySupply, "partition_blocks", blocks_of)
    backend = PinningCpuBackend()
    d = await make_daemon(backends=[backend], pipeline={"synthesis_lookahead": 2})
    await d.stub().PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k4"))
    pool = d.engine.host_blocks
    assert asked == ["synthetic-k4"] and pool.stats()[:2] == (pool.max_free, pool.max_free)
    assert len(backend.pinned) == pool.max_free
    res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request("pre-0", log2=4, partitions=6,
                                                                        seed=3)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert len(uploads_pinned) == 6 and all(uploads_pinned), str(uploads_pinned)
    assert pool.flush() and pool.stats()[0] == pool.max_free  # none made beyond them
    st = await d.stub().GetStatus(pb.GetStatusRequest())
    assert (st.host_blocks, st.host_blocks_free, st.host_block_bytes, st.host_blocks_kept_for) == (
        pool.max_free, pool.max_free, pool.max_free * size, "synthetic-k4")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "cuzk_plugin.cli.bench", "status", "-a", d.tcp,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    text = (await proc.communicate())[0].decode()
    assert f"partition blocks: {pool.max_free} mapped ({pool.max_free} free)" in text, text
    assert "kept ready for synthetic-k4" in text
    await d.stub().EvictSRS(pb.EvictSrsRequest(circuit_id="synthetic-k4"))
    assert (await d.stub().GetStatus(pb.GetStatusRequest())).host_blocks_kept_for == ""
