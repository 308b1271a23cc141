"""Issue 15, section 2 (cancel): CancelProof interrupts the backend call running for the job,
so its GPU slot frees within a second (it freed only when the call returned: 3.8-5.8 s)."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
from daemon_helpers import CountingBackend, synthetic_request

from cuzk_plugin.server.proto import cuzk_pb2 as pb
from tests.large_partition import random_partition, repeated_key

LONG_LOG2 = 13  # ~4 s of cpu backend work on the 2-core CI machine


class LongCallBackend(CountingBackend):
    """The cpu backend, each partition replaced by a random 2^13 one on a repeated key: a real
    backend call of seconds, cancellable as any other (its result would not verify)."""

    def __init__(self) -> None:
        super().__init__("long")
        self.running = threading.Event()
        self.cancels = 0
        self._srs = None

    def prove_start(self, srs, part):
        self._count()
        if self._srs is None:
            self._srs = self.load_srs(repeated_key(LONG_LOG2))
        pending = super().prove_start(self._srs, random_partition(LONG_LOG2, np.random.default_rng()))
        self.running.set()
        return pending

    def prove_cancel(self, pending) -> None:
        with self._lock:
            self.cancels += 1
        super().prove_cancel(pending)


async def test_cancel_proof_interrupts_the_running_backend_call(make_daemon):
    backend = LongCallBackend()
    d = await make_daemon(backends=[backend], gpus={"gpu_workers_per_device": 1})
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("long-1", log2=4, partitions=3))
    await asyncio.get_running_loop().run_in_executor(None, backend.running.wait, 60)
    await asyncio.sleep(0.5)  # inside the call's work
    assert d.engine.status().gpus[0].current_job_id == "long-1"
    t0 = time.monotonic()
    assert (await stub.CancelProof(pb.CancelProofRequest(job_id="long-1"))).was_running
    while len(d.engine.slots.idle) < 1:
        assert time.monotonic() - t0 < 10, "the slot never freed"
        await asyncio.sleep(0.01)
    freed = time.monotonic() - t0
    assert freed <= 1.0, f"the GPU slot freed {freed:.2f}s after CancelProof"
    assert backend.cancels >= 1
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id="long-1"))
    assert res.status == pb.AwaitProofResponse.CANCELLED
    await asyncio.sleep(0.3)
    assert backend.calls == 1  # no further partition entered the backend


async def test_a_cancelled_backend_call_leaves_no_unretrieved_exception(make_daemon):
    """Issue 28 item 13d: the backend call of a cancelled proof ended with an exception nobody
    retrieved, and asyncio logged "Future exception was never retrieved" with a traceback."""
    import gc

    from daemon_helpers import SlowBackend

    backend = SlowBackend(0.8)
    d = await make_daemon(backends=[backend], gpus={"gpu_workers_per_device": 1})
    loop = asyncio.get_running_loop()
    reported: list[str] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context.get("message", "")))
    try:
        stub = d.stub()
        await stub.SubmitProof(synthetic_request("cancel-quiet", log2=4, seed=3))
        await loop.run_in_executor(None, backend.running.wait, 30)
        assert (await stub.CancelProof(pb.CancelProofRequest(job_id="cancel-quiet"))).was_running
        while len(d.engine.slots.idle) < 1:  # the call returned and its slot was released
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)
        gc.collect()  # an unretrieved future reports when it is freed
        await asyncio.sleep(0.1)
    finally:
        loop.set_exception_handler(previous)
    assert not [m for m in reported if "never retrieved" in m], reported
