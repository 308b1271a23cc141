"""[pipeline] synthesis_concurrency counts proofs in synthesis at once, as cuzk counts it, beside
max_parallel_synthesis (partitions at once); a cuzk config that sets both starts."""

from __future__ import annotations

import asyncio

from daemon_helpers import slow_synthesis_registry, synthetic_request

from cuzk_plugin.config import load_config
from cuzk_plugin.server.proto import cuzk_pb2 as pb


def _synthesis_spans(engine, job_id: str) -> list[tuple[float, float]]:
    job = engine.job(job_id)
    return [(job.submitted + e.start_ms / 1e3, job.submitted + e.end_ms / 1e3) for e in job.events if e.stage == "synthesis"]


def test_both_keys_load_with_their_own_meaning(tmp_path):
    path = tmp_path / "cuzk.toml"
    path.write_text("[pipeline]\nsynthesis_concurrency = 1\nmax_parallel_synthesis = 4\n")
    c = load_config(path)
    assert (c.pipeline.synthesis_concurrency, c.pipeline.max_parallel_synthesis) == (1, 4)
    assert c.parallel_synthesis() == 4  # one proof at a time, its partitions four at a time


async def _two_jobs(make_daemon, **pipeline) -> list[list[tuple[float, float]]]:
    d = await make_daemon(providers=slow_synthesis_registry(0.5), pipeline={"max_parallel_synthesis": 2, **pipeline})
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("a", log2=4))
    await stub.SubmitProof(synthetic_request("b", log2=4, seed=7))
    for job_id in ("a", "b"):
        res = await stub.AwaitProof(pb.AwaitProofRequest(job_id=job_id))
        assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    return [_synthesis_spans(d.engine, "a"), _synthesis_spans(d.engine, "b")]


async def test_one_proof_in_synthesis_at_a_time(make_daemon):
    a, b = await _two_jobs(make_daemon, synthesis_concurrency=1)
    assert min(s for s, _ in b) >= max(e for _, e in a) - 0.01  # b's synthesis waits for a's
    # without the limit the two single-partition proofs synthesize side by side (two workers)
    a, b = await _two_jobs(make_daemon, synthesis_concurrency=0)
    assert min(s for s, _ in b) < max(e for _, e in a) - 0.2


async def test_a_winning_post_is_not_held_back(make_daemon):
    d = await make_daemon(providers=slow_synthesis_registry(0.8), pipeline={"synthesis_concurrency": 1})
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("bulk", log2=4))
    await asyncio.sleep(0.2)
    await stub.SubmitProof(synthetic_request("deadline", log2=4, seed=3, priority=pb.CRITICAL))
    for job_id in ("bulk", "deadline"):
        assert (await stub.AwaitProof(pb.AwaitProofRequest(job_id=job_id))).status == pb.AwaitProofResponse.COMPLETED
    ((_, bulk_end),) = _synthesis_spans(d.engine, "bulk")
    ((crit_start, _),) = _synthesis_spans(d.engine, "deadline")
    assert crit_start < bulk_end - 0.2
