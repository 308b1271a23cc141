"""Prometheus metrics of one engine (its own registry: no process-global state).

Besides our own names, the text carries the reference daemon's names so that dashboards made
for cuzk keep working: ``cuzk_proofs_completed_total``, ``cuzk_proofs_failed_total``,
``cuzk_uptime_seconds``, ``cuzk_queue_depth``, ``cuzk_proofs_completed{proof_kind}``,
``cuzk_proofs_failed{proof_kind}``, ``cuzk_proof_duration_seconds`` (a summary: ``_count`` and
``_sum`` by proof_kind, over finished jobs), ``cuzk_running_jobs`` (GPU workers proving now, as
cuzk counts it) and ``cuzk_gpu_workers``. They are derived at scrape time from our counters, so
the two sets never disagree. The proof_kind values are cuzk's (``porep_c2``, ``snap_update``,
``window_post``, ``winning_post``), then ours (``synthetic``, ``registered``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_STAGE_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class EngineMetrics:
    """Counters and histograms the engine updates as it goes; gauges refreshed at scrape time."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.jobs = Counter("cuzk_jobs", "Finished jobs by proof kind and status", ["kind", "status"], registry=r)
        self.partitions = Counter("cuzk_partitions_proved", "Partitions proved, by lane", ["lane"], registry=r)
        self.retries = Counter("cuzk_backend_retries", "Transient backend faults retried, by lane", ["lane"], registry=r)
        self.failovers = Counter("cuzk_lane_failovers", "Partitions moved to another lane after faults", ["from_lane"], registry=r)
        self.self_verify_failures = Counter("cuzk_self_verification_failures", "Jobs whose proofs failed self-verification", registry=r)
        self.stage = Histogram("cuzk_stage_seconds", "Seconds per partition stage", ["stage"], buckets=_STAGE_BUCKETS, registry=r)
        self.job_seconds = Histogram("cuzk_job_seconds", "Submit-to-result seconds of finished jobs", ["kind"], buckets=_STAGE_BUCKETS, registry=r)
        self.queue = Gauge("cuzk_queue_jobs", "Jobs pending or in progress, by kind", ["kind", "state"], registry=r)
        self.srs_bytes = Gauge("cuzk_srs_bytes", "Bytes held per loaded key", ["circuit_id", "tier"], registry=r)
        self.memory_used = Gauge("cuzk_memory_used_bytes", "Bytes held by loaded keys", registry=r)
        self.memory_budget = Gauge("cuzk_memory_budget_bytes", "The key memory budget", registry=r)
        self.uptime = Gauge("cuzk_uptime_seconds", "Seconds since the engine started", registry=r)  # the reference's name too
        self.host_blocks = Gauge("cuzk_host_blocks", "Large partition blocks the engine keeps mapped (host memory), "
                                 "by state (mapped: all of them; free: zeroed, waiting for a task)", ["state"], registry=r)
        self.host_block_bytes = Gauge("cuzk_host_block_bytes", "Host memory held by the partition blocks the engine "
                                      "keeps mapped (pinned where the backend pins)", registry=r)
        self.refused = Counter("cuzk_requests_refused", "Requests refused, by RPC and gRPC status code", ["rpc", "code"],
                               registry=r)
        self.gpu_workers = Gauge("cuzk_gpu_workers", "Number of GPU workers (worker slots)", registry=r)  # the reference's name
        #: GPU workers proving at the last scrape (cuzk_running_jobs, as cuzk counts it).
        self.busy_workers = 0
        self.lane_failures = Counter("cuzk_lane_partition_failures", "Partitions a lane gave up on (faults past the retries)",
                                     ["lane"], registry=r)
        # Per lane (device), refreshed at scrape time.
        self.lane_workers = Gauge("cuzk_lane_workers", "GPU worker slots of a lane, by state", ["lane", "state"], registry=r)
        self.lane_memory_total = Gauge("cuzk_lane_memory_total_bytes", "Memory the lane's device reports", ["lane"], registry=r)
        self.lane_resident_bytes = Gauge("cuzk_lane_resident_bytes", "Bytes of key copies resident on a lane, by key",
                                         ["lane", "circuit_id"], registry=r)
        self.lane_resting = Gauge("cuzk_lane_resting", "1 while a lane is set aside after failures in a row", ["lane"],
                                  registry=r)

    def set_lanes(self, lanes: Iterable[Any]) -> None:
        """Refresh the per-lane gauges from the engine's GpuState list."""
        self.lane_workers.clear()
        self.lane_memory_total.clear()
        self.lane_resident_bytes.clear()
        self.lane_resting.clear()
        for g in lanes:
            self.lane_resting.labels(g.lane).set(int(g.resting))
            self.lane_workers.labels(g.lane, "busy").set(g.busy_workers)
            self.lane_workers.labels(g.lane, "idle").set(g.workers - g.busy_workers)
            self.lane_memory_total.labels(g.lane).set(g.vram_total_bytes)
            for r in g.resident:
                self.lane_resident_bytes.labels(g.lane, r.circuit_id).set(r.size_bytes)

    @staticmethod
    def by_lane(counter: Counter) -> dict[str, float]:
        """A lane-labelled counter's totals by lane."""
        out: dict[str, float] = defaultdict(float)
        for family in counter.collect():
            for s in family.samples:
                if s.name.endswith("_total"):
                    out[s.labels["lane"]] += s.value
        return out

    def text(self) -> str:
        return generate_latest(self.registry).decode() + self.reference_names_text()

    def finished_by_kind(self) -> tuple[dict[str, float], dict[str, float]]:
        """(completed, failed) job counts by proof kind label."""
        done: dict[str, float] = defaultdict(float)
        failed: dict[str, float] = defaultdict(float)
        for family in self.jobs.collect():
            for s in family.samples:
                if s.name.endswith("_total"):
                    target = done if s.labels["status"] == "completed" else failed if s.labels["status"] == "failed" else None
                    if target is not None:
                        target[s.labels["kind"]] += s.value
        return done, failed

    def reference_names_text(self) -> str:
        """The reference daemon's metric names, from our counters (Prometheus text format 0.0.4)."""
        done, failed = self.finished_by_kind()
        durations: dict[str, dict[str, float]] = defaultdict(dict)
        for family in self.job_seconds.collect():
            for s in family.samples:
                if s.name.endswith(("_count", "_sum")):
                    durations[s.labels["kind"]][s.name.rsplit("_", 1)[1]] = s.value
        states: dict[str, float] = defaultdict(float)
        for family in self.queue.collect():
            for s in family.samples:
                states[s.labels["state"]] += s.value

        def num(v: float) -> str:
            return str(int(v)) if float(v).is_integer() else repr(v)

        out = [
            "# HELP cuzk_proofs_completed_total Proofs completed since start, all kinds",
            "# TYPE cuzk_proofs_completed_total counter",
            f"cuzk_proofs_completed_total {num(sum(done.values()))}",
            "# HELP cuzk_proofs_failed_total Proofs failed since start, all kinds",
            "# TYPE cuzk_proofs_failed_total counter",
            f"cuzk_proofs_failed_total {num(sum(failed.values()))}",
            "# HELP cuzk_queue_depth Jobs waiting, all kinds",
            "# TYPE cuzk_queue_depth gauge",
            f"cuzk_queue_depth {num(states['pending'])}",
            "# HELP cuzk_proofs_completed Proofs completed, by proof kind",
            "# TYPE cuzk_proofs_completed counter",
            *(f'cuzk_proofs_completed{{proof_kind="{k}"}} {num(v)}' for k, v in sorted(done.items())),
            "# HELP cuzk_proofs_failed Proofs failed, by proof kind",
            "# TYPE cuzk_proofs_failed counter",
            *(f'cuzk_proofs_failed{{proof_kind="{k}"}} {num(v)}' for k, v in sorted(failed.items())),
            "# HELP cuzk_proof_duration_seconds Submit-to-result seconds of finished jobs, by proof kind",
            "# TYPE cuzk_proof_duration_seconds summary",
        ]
        for kind, d in sorted(durations.items()):
            out += [f'cuzk_proof_duration_seconds_count{{proof_kind="{kind}"}} {num(d.get("count", 0))}',
                    f'cuzk_proof_duration_seconds_sum{{proof_kind="{kind}"}} {d.get("sum", 0.0):.3f}']
        out += ["# HELP cuzk_running_jobs GPU workers proving a partition now (cuzk's meaning)",
                "# TYPE cuzk_running_jobs gauge", f"cuzk_running_jobs {self.busy_workers}"]
        return "\n".join(out) + "\n"
