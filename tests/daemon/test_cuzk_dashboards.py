"""Dashboards made for cuzk read ours: cuzk's proof_kind label values and queue names,
cuzk_running_jobs as cuzk counts it (GPU workers proving), cuzk's /status fields beside ours,
with the CORS header cuzk sends."""

from __future__ import annotations

import asyncio
import json

from daemon_helpers import SlowBackend, synthetic_request

from cuzk_plugin.engine.types import ProofKind
from cuzk_plugin.server.proto import cuzk_pb2 as pb


def test_proof_kind_labels_are_cuzks():
    assert [ProofKind(k).label for k in (1, 2, 3, 4)] == ["porep_c2", "snap_update", "window_post", "winning_post"]


async def _get(port: int, path: str) -> tuple[bytes, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    raw = await reader.read()
    writer.close()
    head, body = raw.split(b"\r\n\r\n", 1)
    return head, body


async def test_status_page_answers_cuzks_fields_while_a_job_runs(make_daemon):
    backend = SlowBackend(0.8)
    d = await make_daemon(backends=[backend], status_listen="127.0.0.1:0")
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("dash", log2=4, partitions=2))
    await asyncio.get_running_loop().run_in_executor(None, backend.running.wait, 10)
    head, body = await _get(d.server.status_port, "/status")
    assert b"Access-Control-Allow-Origin: *" in head
    page = json.loads(body)
    assert page["uptime_secs"] > 0 and page["total_proofs_completed"] == 0  # cuzk's beside ours
    assert set(page["memory"]) == {"total_bytes", "used_bytes", "available_bytes"}
    assert page["memory"]["total_bytes"] == page["memory"]["used_bytes"] + page["memory"]["available_bytes"]
    (pipe,) = page["pipelines"]
    assert pipe["job_id"] == "dash" and pipe["proof_kind"] == "synthetic" and pipe["total_partitions"] == 2
    assert {p["state"] for p in pipe["partitions"]} <= {"pending", "synthesizing", "synth_done", "gpu", "done"}
    assert "gpu" in {p["state"] for p in pipe["partitions"]}
    proving = [w for w in page["gpu_workers"] if w["state"] == "proving"]
    assert proving and proving[0]["current_job"] == "dash" and proving[0]["busy_secs"] >= 0
    assert page["allocations"]["srs"][0]["circuit_id"] == "synthetic-k4"
    metrics = (await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text
    # GPU workers proving, as cuzk counts it (read a moment after the page: the job's second
    # partition may have reached a second worker in between).
    (running,) = [int(line.split()[1]) for line in metrics.splitlines() if line.startswith("cuzk_running_jobs ")]
    assert 1 <= running <= len(page["gpu_workers"])
    assert (await stub.AwaitProof(pb.AwaitProofRequest(job_id="dash"))).status == pb.AwaitProofResponse.COMPLETED
    page = json.loads((await _get(d.server.status_port, "/status"))[1])
    assert page["counters"] == {"total_completed": 1, "total_failed": 0, "completed_by_kind": {"synthetic": 1},
                                "failed_by_kind": {}, "queue_depth": 0}
    assert page["pipelines"] == [] and page["allocations"]["srs"][0]["last_used_secs_ago"] >= 0
    head, _ = await _get(d.server.status_port, "/metrics")
    assert b"Access-Control-Allow-Origin: *" in head
