"""The wire contract: a client built only from the spec's field table (not from our proto)
talks to the daemon, and our proto carries every spec field with its number and type.

The table below is transcribed from specs/cuzk-wire-api.md; the messages are built with
descriptor_pb2 at run time, so nothing here depends on cuzk_plugin's generated stubs."""

from __future__ import annotations

import grpc
import pytest
from daemon_helpers import verify_synthetic
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from cuzk_plugin.formats.proof import decode_proofs
from cuzk_plugin.server.proto import cuzk_pb2

F = descriptor_pb2.FieldDescriptorProto
T = {"string": F.TYPE_STRING, "uint64": F.TYPE_UINT64, "uint32": F.TYPE_UINT32, "bytes": F.TYPE_BYTES,
     "bool": F.TYPE_BOOL}

ENUMS = {
    "ProofKind": {"PROOF_KIND_UNSPECIFIED": 0, "POREP_SEAL_COMMIT": 1, "SNAP_DEALS_UPDATE": 2,
                  "WINDOW_POST_PARTITION": 3, "WINNING_POST": 4},
    "Priority": {"PRIORITY_UNSPECIFIED": 0, "LOW": 1, "NORMAL": 2, "HIGH": 3, "CRITICAL": 4},
}
NESTED_ENUMS = {
    "AwaitProofResponse": ("Status", {"UNKNOWN": 0, "COMPLETED": 1, "FAILED": 2, "CANCELLED": 3, "TIMEOUT": 4}),
    "SRSStatus": ("Tier", {"HOT": 0, "WARM": 1, "COLD": 2}),
}
# message -> [(field, number, type, repeated)]; types naming a message or enum are references.
SPEC = {
    "SubmitProofRequest": [("request_id", 1, "string", False), ("proof_kind", 2, "ProofKind", False),
                           ("sector_size", 3, "uint64", False), ("registered_proof", 4, "uint64", False),
                           ("priority", 5, "Priority", False), ("vanilla_proof", 10, "bytes", False),
                           ("vanilla_proofs", 11, "bytes", True), ("sector_number", 20, "uint64", False),
                           ("miner_id", 21, "uint64", False), ("randomness", 22, "bytes", False),
                           ("partition_index", 23, "uint32", False), ("comm_r_old", 30, "bytes", False),
                           ("comm_r_new", 31, "bytes", False), ("comm_d_new", 32, "bytes", False)],
    "SubmitProofResponse": [("job_id", 1, "string", False), ("queue_position", 2, "uint32", False),
                            ("assigned_gpu", 3, "string", False)],
    "AwaitProofRequest": [("job_id", 1, "string", False), ("timeout_ms", 2, "uint64", False)],
    "AwaitProofResponse": [("job_id", 1, "string", False), ("status", 2, "AwaitProofResponse.Status", False),
                           ("proof", 3, "bytes", False), ("error_message", 4, "string", False),
                           ("queue_wait_ms", 10, "uint64", False), ("srs_load_ms", 11, "uint64", False),
                           ("synthesis_ms", 12, "uint64", False), ("gpu_compute_ms", 13, "uint64", False),
                           ("total_ms", 14, "uint64", False)],
    "ProveRequest": [("submit", 1, "SubmitProofRequest", False)],
    "ProveResponse": [("result", 1, "AwaitProofResponse", False)],
    "CancelProofRequest": [("job_id", 1, "string", False)],
    "CancelProofResponse": [("was_running", 1, "bool", False)],
    "GetStatusRequest": [],
    "GetStatusResponse": [("gpus", 1, "GPUStatus", True), ("loaded_srs", 2, "SRSStatus", True),
                          ("queues", 3, "QueueStatus", True), ("total_proofs_completed", 4, "uint64", False),
                          ("total_proofs_failed", 5, "uint64", False), ("uptime_seconds", 6, "uint64", False),
                          ("pinned_memory_bytes", 7, "uint64", False), ("pinned_memory_limit_bytes", 8, "uint64", False)],
    "GPUStatus": [("ordinal", 1, "uint32", False), ("name", 2, "string", False), ("vram_total_bytes", 3, "uint64", False),
                  ("vram_free_bytes", 4, "uint64", False), ("current_job_id", 5, "string", False),
                  ("current_proof_kind", 6, "string", False)],
    "SRSStatus": [("circuit_id", 1, "string", False), ("tier", 2, "SRSStatus.Tier", False),
                  ("size_bytes", 3, "uint64", False), ("ref_count", 4, "uint32", False)],
    "QueueStatus": [("proof_kind", 1, "string", False), ("pending", 2, "uint32", False), ("in_progress", 3, "uint32", False)],
    "PreloadSrsRequest": [("circuit_id", 1, "string", False)],
    "PreloadSrsResponse": [("already_loaded", 1, "bool", False), ("load_time_ms", 2, "uint64", False)],
    "EvictSrsRequest": [("circuit_id", 1, "string", False)],
    "EvictSrsResponse": [("was_loaded", 1, "bool", False), ("freed_bytes", 2, "uint64", False)],
    "GetMetricsRequest": [],
    "GetMetricsResponse": [("prometheus_text", 1, "string", False)],
}
RPCS = {"SubmitProof": ("SubmitProofRequest", "SubmitProofResponse"), "AwaitProof": ("AwaitProofRequest", "AwaitProofResponse"),
        "Prove": ("ProveRequest", "ProveResponse"), "CancelProof": ("CancelProofRequest", "CancelProofResponse"),
        "GetStatus": ("GetStatusRequest", "GetStatusResponse"), "GetMetrics": ("GetMetricsRequest", "GetMetricsResponse"),
        "PreloadSRS": ("PreloadSrsRequest", "PreloadSrsResponse"), "EvictSRS": ("EvictSrsRequest", "EvictSrsResponse")}


def spec_messages() -> dict[str, type]:
    """Message classes built from SPEC alone (package cuzk.v1, a file name of its own)."""
    fd = descriptor_pb2.FileDescriptorProto(name="spec_only/cuzk_v1_spec.proto", package="cuzk.v1", syntax="proto3")
    for name, values in ENUMS.items():
        e = fd.enum_type.add(name=name)
        for vname, num in values.items():
            e.value.add(name=vname, number=num)
    for name, fields in SPEC.items():
        m = fd.message_type.add(name=name)
        if name in NESTED_ENUMS:
            ename, values = NESTED_ENUMS[name]
            e = m.enum_type.add(name=ename)
            for vname, num in values.items():
                e.value.add(name=vname, number=num)
        for fname, num, ftype, repeated in fields:
            f = m.field.add(name=fname, number=num, label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
            if ftype in T:
                f.type = T[ftype]
            else:
                ref = ftype.split(".")[0]
                f.type = F.TYPE_ENUM if ftype in ENUMS or "." in ftype else F.TYPE_MESSAGE
                f.type_name = f".cuzk.v1.{ftype}"
                assert ref in SPEC or ref in ENUMS
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"cuzk.v1.{name}")) for name in SPEC}


def test_our_proto_carries_every_spec_field():
    ours = cuzk_pb2.DESCRIPTOR
    assert ours.package == "cuzk.v1"
    service = ours.services_by_name["ProvingEngine"]
    for rpc, (req, resp) in RPCS.items():
        method = service.methods_by_name[rpc]
        assert (method.input_type.name, method.output_type.name) == (req, resp)
    for name, values in ENUMS.items():
        enum = ours.enum_types_by_name[name]
        assert {v: enum.values_by_name[v].number for v in values} == values
    for name, (ename, values) in NESTED_ENUMS.items():
        enum = ours.message_types_by_name[name].enum_types_by_name[ename]
        assert {v: enum.values_by_name[v].number for v in values} == values
    for name, fields in SPEC.items():
        msg = ours.message_types_by_name[name]
        for fname, num, ftype, repeated in fields:
            f = msg.fields_by_name[fname]
            assert f.number == num, (name, fname)
            assert f.is_repeated == repeated, (name, fname)
            if ftype in T:
                assert f.type == T[ftype], (name, fname)
            else:
                target = f.enum_type or f.message_type
                assert target.full_name == f"cuzk.v1.{ftype}", (name, fname)
        extra = [f.number for f in msg.fields if f.name not in {x[0] for x in fields}]
        assert all(n >= 100 for n in extra), f"{name}: our additions must use numbers >= 100, got {extra}"


def _call(channel: grpc.aio.Channel, classes: dict, rpc: str):
    _req, resp = RPCS[rpc]
    return channel.unary_unary(f"/cuzk.v1.ProvingEngine/{rpc}", request_serializer=lambda m: m.SerializeToString(),
                               response_deserializer=classes[resp].FromString)


def _read_all(msg) -> dict:
    """Touch every field of a spec message (what a Curio client would read)."""
    out = {}
    for field in msg.DESCRIPTOR.fields:
        value = getattr(msg, field.name)
        if field.message_type is not None and field.is_repeated:
            value = [_read_all(v) for v in value]
        elif field.message_type is not None:
            value = _read_all(value)
        elif field.is_repeated:
            value = list(value)
        out[field.name] = value
    return out


@pytest.mark.parametrize("transport", ["tcp", "unix"])
async def test_spec_only_client_reads_every_field(make_daemon, transport):
    """Curio's side: PoRep/PoSt kinds only exist as numbers, so the proof is a SYNTHETIC job
    submitted by our own stub; everything read back goes through the spec-only classes."""
    classes = spec_messages()
    d = await make_daemon()
    ch = d.channel(transport)
    ours = d.stub(transport)
    from daemon_helpers import synthetic_request

    sub = await ours.SubmitProof(synthetic_request("wire-1", log2=4, partitions=2, seed=11))
    awaited = await _call(ch, classes, "AwaitProof")(classes["AwaitProofRequest"](job_id=sub.job_id, timeout_ms=60_000))
    fields = _read_all(awaited)
    assert fields["job_id"] == "wire-1" and fields["status"] == 1 and fields["error_message"] == ""
    assert len(decode_proofs(fields["proof"])) == 2 and verify_synthetic(d.param_cache, 4, 11, fields["proof"])
    assert fields["total_ms"] >= fields["queue_wait_ms"] and fields["gpu_compute_ms"] > 0
    assert set(fields) == {f[0] for f in SPEC["AwaitProofResponse"]}

    # Prove with a Filecoin kind, spec-only: FAILED naming the missing circuit (no fake proof).
    from cuzk_plugin.filecoin.fixtures.post_seal import ProvenSector, post_test_sector, post_vanilla_proofs
    from cuzk_plugin.filecoin.post.params import post_proof_by_number

    vanilla = post_vanilla_proofs(post_proof_by_number(0), [ProvenSector(1, post_test_sector(2 << 10))], b"\x07" * 32)
    submit = classes["SubmitProofRequest"](request_id="winpost-1000-0102030405060708", proof_kind=4,
                                           vanilla_proofs=vanilla, randomness=b"\x07" * 32, miner_id=1000)
    proved = await _call(ch, classes, "Prove")(classes["ProveRequest"](submit=submit))
    result = _read_all(proved)["result"]
    assert result["status"] == 2 and result["proof"] == b"" and "winning-2k" in result["error_message"]

    status = _read_all(await _call(ch, classes, "GetStatus")(classes["GetStatusRequest"]()))
    assert status["total_proofs_completed"] == 1 and status["total_proofs_failed"] == 1
    assert status["gpus"][0]["vram_total_bytes"] > 0 and status["gpus"][0]["name"]
    assert status["loaded_srs"][0]["circuit_id"] == "synthetic-k4" and status["loaded_srs"][0]["size_bytes"] > 0
    assert status["pinned_memory_limit_bytes"] > 0 and status["uptime_seconds"] >= 0
    assert status["queues"] == []  # nothing pending: Curio's back-pressure sum is 0

    cancel = _read_all(await _call(ch, classes, "CancelProof")(classes["CancelProofRequest"](job_id="wire-1")))
    assert cancel == {"was_running": False}
    pre = _read_all(await _call(ch, classes, "PreloadSRS")(classes["PreloadSrsRequest"](circuit_id="synthetic-k4")))
    assert pre["already_loaded"] is True
    ev = _read_all(await _call(ch, classes, "EvictSRS")(classes["EvictSrsRequest"](circuit_id="synthetic-k4")))
    assert ev["was_loaded"] is True and ev["freed_bytes"] > 0
    met = _read_all(await _call(ch, classes, "GetMetrics")(classes["GetMetricsRequest"]()))
    assert "cuzk_jobs_total" in met["prometheus_text"]
