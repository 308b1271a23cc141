"""cuzk-bench's daemon commands against a live daemon: batch (summary, JSON, PNG timeline),
status, preload, evict, metrics; -a accepts host:port and unix:///path."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys

import pytest
from daemon_helpers import verify_synthetic

from cuzk_plugin.cli.bench_daemon import build_request
from cuzk_plugin.cli.bench_daemon_plot import job_origins_ms, plot_timeline, timeline_bars
from cuzk_plugin.server.batch import run_batch, summarize


async def _bench(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "cuzk_plugin.cli.bench", *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    return proc.returncode, out.decode()


async def test_batch_summary_and_timeline(make_daemon, tmp_path):
    d = await make_daemon()
    args = argparse.Namespace(log2=4, partitions=2, seed=1, priority=None, c1=None, circuit=None)
    records, wall = await run_batch(d.unix, functools.partial(build_request, args), count=6, concurrency=3, show_progress=False)
    s = summarize(records, wall, partitions=2)
    assert s["completed"] == 6 and s["failed"] == 0 and s["proofs_per_s"] > 0
    assert s["latency_ms"]["min"] <= s["latency_ms"]["median"] <= s["latency_ms"]["max"]
    assert all(verify_synthetic(d.param_cache, 4, r.seed, r.proof) for r in records)
    rows = timeline_bars(records)
    assert any(name.startswith("cpu:0/w") for name in rows) and any(name.startswith("synth/") for name in rows)
    # each job's timeline is placed on the daemon's clock: never before its own send
    assert all(r.submitted_unix_ms > 0 for r in records)
    origins = job_origins_ms(records)
    assert all(o >= r.submit_s * 1000.0 - 1e-3 for o, r in zip(origins, records, strict=True))
    assert min(o - r.submit_s * 1000.0 for o, r in zip(origins, records, strict=True)) == pytest.approx(0.0, abs=1e-3)
    png = tmp_path / "timeline.png"
    plot_timeline(records, str(png), title="test")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_jobs_are_drawn_where_the_daemon_received_them():
    """The 32 GiB batch of 2026-12-03 (bench/e2e/runs-2026-12-03-eve/2-e2e-6d70859): the client
    sent job 0 at 1.29 s and job 1 at 2.71 s, but the daemon received them 196 ms apart (the
    client built job 1's 65 MB request before job 0's went out). Drawn at the send times, job 1's
    partitions seemed to leave the GPU idle 1.2 s; on the daemon's clock they follow job 0's
    without a gap."""
    from cuzk_plugin.server.batch import ProofRecord

    def rec(send_s: float, daemon_unix_ms: float) -> ProofRecord:
        return ProofRecord("j", "COMPLETED", 192, "", send_s, 1.0, {}, submitted_unix_ms=daemon_unix_ms)

    t = 1.8e12
    origins = job_origins_ms([rec(1.2885, t), rec(2.7147, t + 196.0)])
    assert origins[1] - origins[0] == pytest.approx(196.0, abs=1e-3)
    assert origins[1] == pytest.approx(2714.7, abs=1e-3)  # the job received soonest after its send sets the zero
    assert job_origins_ms([rec(1.2885, 0.0), rec(2.7147, 0.0)]) == pytest.approx([1288.5, 2714.7])  # an older daemon


async def test_bench_commands(make_daemon):
    d = await make_daemon()
    for addr in (d.tcp, d.unix):
        rc, out = await _bench("single", "-a", addr, "--log2", "4", "--json")
        assert rc == 0 and json.loads(out)["status"] == "COMPLETED"
    rc, out = await _bench("batch", "-a", d.tcp, "--log2", "4", "-c", "4", "-j", "2", "--json")
    batch = json.loads(out)
    assert rc == 0 and batch["completed"] == 4 and len({r["job_id"] for r in batch["records"]}) == 4
    rc, out = await _bench("preload", "-a", d.unix, "synthetic-k5", "--json")
    assert rc == 0 and json.loads(out) == {"circuit_id": "synthetic-k5", "already_loaded": False, "load_time_ms": json.loads(out)["load_time_ms"]}
    rc, out = await _bench("status", "-a", d.unix, "--json")
    status = json.loads(out)
    assert rc == 0 and status["totalProofsCompleted"] == "6"
    assert {s["circuitId"] for s in status["loadedSrs"]} == {"synthetic-k4", "synthetic-k5"}
    rc, out = await _bench("evict", "-a", d.tcp, "synthetic-k5")
    assert rc == 0 and "evicted, freed" in out
    rc, out = await _bench("status", "-a", d.tcp)
    assert rc == 0 and "srs synthetic-k5: COLD" in out and "proofs completed 6" in out
    rc, out = await _bench("metrics", "-a", d.tcp)
    assert rc == 0 and 'cuzk_jobs_total{kind="synthetic",status="completed"} 6.0' in out
    # the reference daemon's names too (dashboards made for cuzk), consistent with ours
    lines = set(out.splitlines())
    assert {"cuzk_proofs_completed_total 6", "cuzk_proofs_failed_total 0", 'cuzk_proofs_completed{proof_kind="synthetic"} 6',
            'cuzk_proof_duration_seconds_count{proof_kind="synthetic"} 6', "cuzk_queue_depth 0", "cuzk_running_jobs 0",
            f"cuzk_gpu_workers {float(len(d.engine.slots.slots))}"} <= lines
    from prometheus_client.parser import text_string_to_metric_families
    assert "cuzk_proof_duration_seconds" in {f.name for f in text_string_to_metric_families(out)}
    rc, out = await _bench("preload", "-a", "http://" + d.tcp, "-c", "synthetic-k4")
    assert rc == 0 and "synthetic-k4: already loaded" in out


async def test_a_taken_status_port_is_not_fatal(make_daemon, caplog):
    """The status page only reports: a daemon whose status port is taken still proves."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        d = await make_daemon(status_listen=f"127.0.0.1:{port}")
        assert d.server.status_port == 0
        assert f"127.0.0.1:{port} is already in use" in caplog.text
        rc, out = await _bench("single", "-a", d.tcp, "--log2", "4", "--json")
        assert rc == 0 and json.loads(out)["status"] == "COMPLETED"
