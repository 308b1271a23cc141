"""Proto messages <-> engine types (the only place that knows both)."""

from __future__ import annotations

from cuzk_plugin.engine.errors import InvalidRequest
from cuzk_plugin.engine.status import EngineStatus
from cuzk_plugin.engine.types import JobResult, Priority, ProofKind, ProofRequest, RegisteredInput, SyntheticInput
from cuzk_plugin.server import wire
from cuzk_plugin.server.proto import cuzk_pb2 as pb


def submit_from_body(raw: bytes) -> ProofRequest:
    """A SubmitProofRequest body -> ProofRequest, its payload kept as a view of ``raw``
    (:mod:`cuzk_plugin.server.wire`); DecodeError where the body is malformed."""
    split = wire.split_submit(raw)
    if split is None:
        return request_from_proto(pb.SubmitProofRequest.FromString(raw))
    return request_from_proto(pb.SubmitProofRequest.FromString(split.rest), split)


def prove_from_body(raw: bytes) -> ProofRequest:
    """A ProveRequest body -> the ProofRequest of its ``submit`` (as :func:`submit_from_body`)."""
    split = wire.split_prove(raw)
    if split is None:
        return request_from_proto(pb.ProveRequest.FromString(raw).submit)
    rest, inner = split
    pb.ProveRequest.FromString(rest)  # the other fields (none today) must still be well-formed
    return request_from_proto(pb.SubmitProofRequest.FromString(inner.rest), inner)


def request_from_proto(msg: pb.SubmitProofRequest, payload: wire.SplitRequest | None = None) -> ProofRequest:
    """SubmitProofRequest -> ProofRequest; unknown enum numbers are refused, naming the field.
    With ``payload``, the vanilla proofs are those (``msg`` was parsed without them)."""
    try:
        kind = ProofKind(msg.proof_kind)
    except ValueError:
        raise InvalidRequest(f"proof_kind: {msg.proof_kind} is not a known ProofKind") from None
    if kind == ProofKind.UNSPECIFIED:
        raise InvalidRequest("proof_kind: PROOF_KIND_UNSPECIFIED (0); say what to prove")
    try:
        priority = Priority(msg.priority)
    except ValueError:
        raise InvalidRequest(f"priority: {msg.priority} is not a known Priority (0-4)") from None
    registered = None
    if payload is not None and payload.registered is not None:
        others, witnesses = payload.registered
        registered = RegisteredInput(pb.RegisteredCircuitInput.FromString(others).circuit_id,
                                     tuple(bytes(w) for w in witnesses))
    elif msg.HasField("registered"):
        registered = RegisteredInput(msg.registered.circuit_id, tuple(msg.registered.witnesses))
    synthetic = None
    if msg.HasField("synthetic"):
        s = msg.synthetic
        synthetic = SyntheticInput(s.log2_constraints, s.partitions or 1, s.seed)
    return ProofRequest(
        request_id=msg.request_id, kind=kind, priority=priority, sector_size=msg.sector_size,
        registered_proof=msg.registered_proof,
        vanilla_proof=msg.vanilla_proof if payload is None else (payload.vanilla_proof or b""),
        vanilla_proofs=tuple(msg.vanilla_proofs) if payload is None else tuple(bytes(v) for v in payload.vanilla_proofs),
        sector_number=msg.sector_number, miner_id=msg.miner_id,
        randomness=msg.randomness, partition_index=msg.partition_index, comm_r_old=msg.comm_r_old,
        comm_r_new=msg.comm_r_new, comm_d_new=msg.comm_d_new, registered=registered, synthetic=synthetic,
    )


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def result_to_proto(result: JobResult) -> pb.AwaitProofResponse:
    t = result.timings
    return pb.AwaitProofResponse(
        job_id=result.job_id, status=pb.AwaitProofResponse.Status.Name(int(result.status)), proof=result.proof, error_message=result.error_message,
        queue_wait_ms=_ms(t.queue_wait), srs_load_ms=_ms(t.srs_load), synthesis_ms=_ms(t.synthesis),
        gpu_compute_ms=_ms(t.gpu_compute), total_ms=_ms(t.total),
        timeline=[pb.StageEvent(stage=e.stage, partition=e.partition, lane=e.lane, start_ms=e.start_ms,
                                end_ms=e.end_ms, attempt=e.attempt) for e in result.timeline],
        partitions=result.partitions, circuit_id=result.circuit_id,
        srs_load_sum_ms=_ms(t.srs_load_sum), synthesis_sum_ms=_ms(t.synthesis_sum),
        gpu_compute_sum_ms=_ms(t.gpu_compute_sum), verify_ms=_ms(t.verify),
        submitted_unix_ms=result.submitted_unix * 1000.0,
    )


def status_to_proto(st: EngineStatus) -> pb.GetStatusResponse:
    return pb.GetStatusResponse(
        gpus=[pb.GPUStatus(ordinal=g.ordinal, name=g.name, vram_total_bytes=g.vram_total_bytes,
                           vram_free_bytes=g.vram_free_bytes, current_job_id=g.current_job_id,
                           current_proof_kind=g.current_proof_kind, lane=g.lane, workers=g.workers,
                           busy_workers=g.busy_workers, current_job_ids=list(g.current_job_ids),
                           resident_bytes=g.resident_bytes, resident_srs=[_srs_to_proto(s) for s in g.resident],
                           partitions_proved=g.partitions_proved, partitions_failed=g.partitions_failed,
                           resting=g.resting, device_budget_bytes=g.device_budget_bytes,
                           key_residency=[pb.KeyResidency(**_residency(p)) for p in g.key_residency],
                           link_bytes_per_s=g.link_bytes_per_s)
              for g in st.gpus],
        loaded_srs=[_srs_to_proto(s) for s in st.srs],
        queues=[pb.QueueStatus(proof_kind=q.proof_kind, pending=q.pending, in_progress=q.in_progress) for q in st.queues],
        total_proofs_completed=st.completed, total_proofs_failed=st.failed, uptime_seconds=int(st.uptime_s),
        pinned_memory_bytes=st.memory_used_bytes, pinned_memory_limit_bytes=st.memory_limit_bytes,
        backend=st.backend, total_proofs_cancelled=st.cancelled, host_blocks=st.host_blocks,
        host_blocks_free=st.host_blocks_free, host_block_bytes=st.host_block_bytes,
        host_blocks_kept_for=st.host_blocks_kept_for,
    )


def _residency(plan) -> dict:
    """A lane's residency plan for one key, as KeyResidency's fields."""
    return {"circuit_id": plan.circuit_id, "resident": list(plan.resident), "streamed": list(plan.streamed),
            "resident_bytes": plan.resident_bytes, "streamed_bytes_per_partition": plan.streamed_bytes,
            "circuit_bytes": plan.circuit_bytes, "circuit_on_host": plan.circuit_on_host,
            "working_bytes": plan.working_bytes, "stream_chunk_points": plan.stream_chunk,
            "circuit_streamed": plan.circuit_streamed, "partitions_in_flight": plan.in_flight,
            "msm_in_turn": plan.msm_in_turn, "h_lean": plan.h_lean}


def _srs_to_proto(s) -> pb.SRSStatus:
    return pb.SRSStatus(circuit_id=s.circuit_id, tier=s.tier, size_bytes=s.size_bytes, ref_count=s.ref_count)


_TIERS = {0: "HOT", 1: "WARM", 2: "COLD"}


def _srs_to_json(s) -> dict:
    return {"circuit_id": s.circuit_id, "tier": _TIERS[s.tier], "size_bytes": s.size_bytes, "ref_count": s.ref_count}


def status_to_json(st: EngineStatus) -> dict:
    """The same facts as GetStatus, for GET /status."""
    return {
        "backend": st.backend,
        "uptime_seconds": int(st.uptime_s),
        "gpus": [{**g.__dict__, "current_job_ids": list(g.current_job_ids), "resident": [_srs_to_json(s) for s in g.resident],
                  "key_residency": [_residency(p) for p in g.key_residency]}
                 for g in st.gpus],
        "loaded_srs": [_srs_to_json(s) for s in st.srs],
        "queues": [q.__dict__ for q in st.queues],
        "total_proofs_completed": st.completed,
        "total_proofs_failed": st.failed,
        "total_proofs_cancelled": st.cancelled,
        "pinned_memory_bytes": st.memory_used_bytes,
        "pinned_memory_limit_bytes": st.memory_limit_bytes,
        "host_blocks": st.host_blocks,
        "host_blocks_free": st.host_blocks_free,
        "host_block_bytes": st.host_block_bytes,
        "host_blocks_kept_for": st.host_blocks_kept_for,
    }
