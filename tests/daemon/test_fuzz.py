"""A bounded fuzz of every cuzk.v1 RPC: random bytes, mutated valid messages and messages with
random field values, sent raw. Whatever arrives: no INTERNAL (nor UNKNOWN), the daemon keeps
answering, and every refusal names the field (or the message) it refuses."""

from __future__ import annotations

import logging
import random
import re
import time

import grpc
from daemon_helpers import synthetic_request
from google.protobuf.descriptor import FieldDescriptor

from cuzk_plugin.server.proto import cuzk_pb2 as pb

SERVICE = pb.DESCRIPTOR.services_by_name["ProvingEngine"]
PER_METHOD = 100
BUDGET_S = 25.0
SEED = 15_2
#: Status codes a hostile message may get (DEADLINE_EXCEEDED: the client's own timeout on a real job).
ACCEPTED = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.ALREADY_EXISTS,
            grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.DEADLINE_EXCEEDED}
#: Refusals about the daemon's state, not a field of the request: they name the config key instead.
STATE_CODES = {grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED}


def _names(desc, seen=None) -> set[str]:
    seen = seen if seen is not None else set()
    if desc.full_name in seen:
        return set()
    seen.add(desc.full_name)
    out = {desc.name}
    for f in desc.fields:
        out.add(f.name)
        if f.message_type is not None:
            out |= _names(f.message_type, seen)
    return out


FIELD_NAMES = set().union(*(_names(m.input_type) for m in SERVICE.methods))

SEEDS: dict[str, list[bytes]] = {
    "SubmitProof": [synthetic_request("fz-1", log2=4).SerializeToString(),
                    pb.SubmitProofRequest(request_id="porep-1000-1", proof_kind=pb.POREP_SEAL_COMMIT,
                                          vanilla_proof=b'{"SectorNum": 1, "Phase1Out": "e30=", "SectorSize": 2048}',
                                          sector_number=1, miner_id=1000, sector_size=2048).SerializeToString(),
                    pb.SubmitProofRequest(request_id="winpost-1000-01", proof_kind=pb.WINNING_POST, randomness=b"\x07" * 32,
                                          vanilla_proofs=[b"\x01" * 80], miner_id=1000).SerializeToString(),
                    pb.SubmitProofRequest(request_id="snap-1000-1", proof_kind=pb.SNAP_DEALS_UPDATE, vanilla_proofs=[b"\x02" * 80],
                                          comm_r_old=b"\x01" * 32, comm_r_new=b"\x02" * 32, comm_d_new=b"\x03" * 32,
                                          sector_size=2048).SerializeToString(),
                    pb.SubmitProofRequest(request_id="reg-1", proof_kind=pb.REGISTERED_CIRCUIT, registered=pb.RegisteredCircuitInput(
                        circuit_id="c", witnesses=[b"wtns" + b"\0" * 40])).SerializeToString()],
    "AwaitProof": [pb.AwaitProofRequest(job_id="fz-1", timeout_ms=10).SerializeToString()],
    "CancelProof": [pb.CancelProofRequest(job_id="fz-1").SerializeToString()],
    "GetStatus": [b""],
    "GetMetrics": [b""],
    "PreloadSRS": [pb.PreloadSrsRequest(circuit_id="synthetic-k4").SerializeToString(),
                   pb.PreloadSrsRequest(circuit_id="porep-2k").SerializeToString()],
    "EvictSRS": [pb.EvictSrsRequest(circuit_id="synthetic-k4").SerializeToString()],
}
SEEDS["Prove"] = [b"\x0a" + bytes([len(s)]) + s for s in SEEDS["SubmitProof"] if len(s) < 128]


def _random_text(rng: random.Random) -> str:
    pool = ["a", "Z", "0", "-", "_", ".", "/", "..", "\n", "\x00", "\u0668", "\uff18", "\u202e", " ", "\U0001f600", "%s"]
    return "".join(rng.choice(pool) for _ in range(rng.choice([0, 1, 5, 40, 300])))


def _random_value(rng: random.Random, f: FieldDescriptor):
    t = f.type
    if t == FieldDescriptor.TYPE_STRING:
        return _random_text(rng)
    if t == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.choice([0, 1, 31, 32, 33, 200]))
    if t == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FieldDescriptor.TYPE_ENUM:
        return rng.choice([v.number for v in f.enum_type.values] + [5, 57, 99, 1000])
    if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return rng.choice([0, 1, 2, 4, 20, 21, 1025, 2**32 - 1])
    if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return rng.choice([0, 1, 2048, 32 << 30, 2**63, 2**64 - 1])
    if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64):
        return rng.choice([0, -1, 1, 2**31 - 1])
    return None


def _random_message(rng: random.Random, cls, depth: int = 0):
    msg = cls()
    for f in cls.DESCRIPTOR.fields:
        if rng.random() < 0.5:
            continue
        if f.message_type is not None:
            if depth < 2:
                sub = _random_message(rng, getattr(pb, f.message_type.name), depth + 1)
                if f.is_repeated:
                    getattr(msg, f.name).append(sub)
                else:
                    getattr(msg, f.name).CopyFrom(sub)
            continue
        value = _random_value(rng, f)
        if value is None:
            continue
        if f.is_repeated:
            getattr(msg, f.name).extend([value] * rng.choice([1, 2, 3]))
        else:
            setattr(msg, f.name, value)
    return msg


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        if op == 0 and b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            del b[rng.randrange(len(b)):]
        elif op == 2:
            at = rng.randrange(len(b) + 1)
            b[at:at] = rng.randbytes(rng.randint(1, 8))
        else:
            b += b[: rng.randint(0, len(b))]
    return bytes(b)


def _cases(rng: random.Random, method) -> list[bytes]:
    cls = getattr(pb, method.input_type.name)
    out = []
    for i in range(PER_METHOD):
        kind = i % 3
        if kind == 0:
            out.append(rng.randbytes(rng.choice([1, 3, 10, 64, 300])))
        elif kind == 1:
            out.append(_mutate(rng, rng.choice(SEEDS[method.name])))
        else:
            out.append(_random_message(rng, cls).SerializeToString())
    return out


async def test_fuzz_every_rpc(make_daemon, caplog):
    caplog.set_level(logging.WARNING)
    d = await make_daemon(srs={"max_generated_log2": 6}, scheduler={"max_pending": 6})
    ch = d.channel()
    rng = random.Random(SEED)
    deadline = time.monotonic() + BUDGET_S
    seen: dict[str, int] = {}
    sent = 0
    for method in SERVICE.methods:
        call = ch.unary_unary(f"/{SERVICE.full_name}/{method.name}")
        for raw in _cases(rng, method):
            if time.monotonic() > deadline:
                break
            sent += 1
            try:
                await call(raw, timeout=2.0)
                seen["OK"] = seen.get("OK", 0) + 1
                continue
            except grpc.aio.AioRpcError as err:
                code, details = err.code(), err.details() or ""
            seen[code.name] = seen.get(code.name, 0) + 1
            assert code in ACCEPTED, f"{method.name}({raw[:80]!r}) -> {code.name}: {details}"
            if code not in STATE_CODES:
                assert any(name in details for name in FIELD_NAMES), f"{method.name} refusal names no field: {details!r}"
            assert "\n" not in details and len(details) < 2000
    assert sent >= len(SERVICE.methods) * 10, f"only {sent} messages in the time budget"
    # Still serving, and healthy.
    stub = d.stub()
    await stub.GetStatus(pb.GetStatusRequest(), timeout=5)
    text = (await stub.GetMetrics(pb.GetMetricsRequest(), timeout=5)).prometheus_text
    assert re.search(r'cuzk_requests_refused_total\{[^}]*INVALID_ARGUMENT[^}]*\} [1-9]', text)
    assert d.engine.health() is None, seen
    crashes = [r.getMessage() for r in caplog.records if r.exc_info]  # e.g. "planning failed" with a traceback
    assert not crashes, crashes[:3]
    print("fuzz:", sent, "messages", seen)
