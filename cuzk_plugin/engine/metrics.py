"""Prometheus metrics of one engine (its own registry: no process-global state)."""

from __future__ import annotations

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
        self.uptime = Gauge("cuzk_uptime_seconds", "Seconds since the engine started", registry=r)

    def text(self) -> str:
        return generate_latest(self.registry).decode()
