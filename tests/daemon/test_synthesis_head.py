"""A job that finds synthesis idle starts with its head: its first partition alone with every
synthesis process, then the next ones (one a GPU slot) splitting every process between them,
and the rest wait for them; a job that arrives while another synthesizes takes the workers' own
share."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from daemon_helpers import ShareRecordingProvider, synthetic_request

from cuzk_plugin.engine.circuits import ProviderRegistry
from cuzk_plugin.engine.synthesis import SynthesisPool
from cuzk_plugin.server.proto import cuzk_pb2 as pb


@pytest.fixture(scope="module")
def four_workers():
    pool = SynthesisPool(4)  # four one-process workers: partition 0 gets four, the next two two each
    pool.warm_up()
    yield pool
    pool.shutdown()


def _shares(record: Path, seeds: range) -> list[int]:
    return [int((record / str(s)).read_text()) for s in seeds]


def _spans(engine, job_id: str) -> dict[int, tuple[float, float]]:
    return {e.partition: (e.start_ms, e.end_ms) for e in engine.job(job_id).events if e.stage == "synthesis"}


async def _prove(stub, job_id: str) -> None:
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id=job_id))
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message


async def test_an_idle_engine_gives_a_job_s_head_every_process(make_daemon, four_workers, tmp_path):
    reg = ProviderRegistry(load_plugins=False)
    reg.register(ShareRecordingProvider(0.4, tmp_path))
    d = await make_daemon(providers=reg, synthesis_pool=four_workers, pipeline={"max_parallel_synthesis": 4})
    assert len(d.engine.slots.slots) == 2
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("a", log2=4, partitions=4, seed=100))
    await _prove(stub, "a")
    assert _shares(tmp_path, range(100, 104)) == [4, 2, 2, 1]
    spans = _spans(d.engine, "a")
    assert min(spans[p][0] for p in (1, 2)) >= spans[0][1] - 1.0  # after partition 0
    assert spans[3][0] >= max(spans[p][1] for p in (1, 2)) - 1.0  # after the head

    # A job that arrives while "c" synthesizes does not take its cores: its partitions
    # synthesize with their own share, beside c's.
    await stub.SubmitProof(synthetic_request("c", log2=4, partitions=4, seed=200))
    await asyncio.sleep(0.1)
    await stub.SubmitProof(synthetic_request("b", log2=4, partitions=2, seed=300))
    await _prove(stub, "c")
    await _prove(stub, "b")
    assert _shares(tmp_path, range(200, 204)) == [4, 2, 2, 1]
    assert _shares(tmp_path, range(300, 302)) == [1, 1]
