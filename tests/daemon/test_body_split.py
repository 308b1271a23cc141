"""The request body's payload (vanilla proofs, registered witnesses) taken in place
(server/wire.py) reads exactly what protobuf reads: random requests, repeated and malformed
fields, ProveRequest, and the fall-back paths."""

from __future__ import annotations

import dataclasses
import random

import pytest
from google.protobuf.message import DecodeError

from cuzk_plugin.engine.types import ProofRequest
from cuzk_plugin.server import convert, wire
from cuzk_plugin.server.proto import cuzk_pb2 as pb


def _plain(r: ProofRequest) -> ProofRequest:
    return dataclasses.replace(r, vanilla_proof=bytes(r.vanilla_proof))


def _random_request(rng: random.Random) -> pb.SubmitProofRequest:
    m = pb.SubmitProofRequest(request_id=f"job-{rng.randrange(1 << 30)}", proof_kind=rng.choice([1, 2, 3, 4, 100, 101]),
                              sector_size=rng.choice([0, 2048, 1 << 35]), registered_proof=rng.randrange(20),
                              priority=rng.randrange(5), sector_number=rng.randrange(1 << 40),
                              miner_id=rng.randrange(1 << 20), partition_index=rng.randrange(50))
    if rng.random() < 0.8:
        m.vanilla_proof = rng.randbytes(rng.choice([0, 1, 127, 128, 300, 70_000]))
    m.vanilla_proofs.extend(rng.randbytes(rng.randrange(200)) for _ in range(rng.randrange(4)))
    for name in ("randomness", "comm_r_old", "comm_r_new", "comm_d_new"):
        if rng.random() < 0.5:
            setattr(m, name, rng.randbytes(32))
    if rng.random() < 0.1:
        m.registered.SetInParent()  # present and empty
    elif rng.random() < 0.3:
        m.registered.circuit_id = "circ"
        m.registered.witnesses.extend([rng.randbytes(40), rng.randbytes(3)])
    if rng.random() < 0.3:
        m.synthetic.log2_constraints, m.synthetic.partitions, m.synthetic.seed = 4, 2, rng.randrange(99)
    return m


def test_random_requests_read_as_protobuf_reads_them():
    rng = random.Random(11)
    for _ in range(300):
        raw = _random_request(rng).SerializeToString()
        split = wire.split_submit(raw)
        assert split is not None
        got = convert.submit_from_body(raw)
        assert _plain(got) == convert.request_from_proto(pb.SubmitProofRequest.FromString(raw))
        if split.vanilla_proof is not None:
            assert isinstance(got.vanilla_proof, memoryview) and got.vanilla_proof.obj is raw  # not copied


def test_repeated_fields_merge_as_protobuf_merges_them():
    """Two messages back to back are one message to protobuf: the last singular value wins,
    repeated values concatenate."""
    a = pb.SubmitProofRequest(request_id="a", proof_kind=1, vanilla_proof=b"first", vanilla_proofs=[b"x"])
    b = pb.SubmitProofRequest(vanilla_proof=b"second", vanilla_proofs=[b"y", b"z"], miner_id=7)
    raw = a.SerializeToString() + b.SerializeToString()
    got = convert.submit_from_body(raw)
    assert bytes(got.vanilla_proof) == b"second" and got.vanilla_proofs == (b"x", b"y", b"z")
    assert _plain(got) == convert.request_from_proto(pb.SubmitProofRequest.FromString(raw))


def test_repeated_registered_inputs_are_left_to_protobuf():
    a = pb.SubmitProofRequest(request_id="r", proof_kind=100, registered={"circuit_id": "c1", "witnesses": [b"w1"]})
    b = pb.SubmitProofRequest(registered={"witnesses": [b"w2", b"w3"]})
    raw = a.SerializeToString() + b.SerializeToString()
    assert wire.split_submit(raw) is None  # protobuf merges the two sub-messages
    got = convert.submit_from_body(raw)
    assert got.registered is not None and got.registered.circuit_id == "c1"
    assert got.registered.witnesses == (b"w1", b"w2", b"w3")
    assert _plain(convert.submit_from_body(a.SerializeToString())) == convert.request_from_proto(a)


def test_prove_request_body():
    rng = random.Random(5)
    for _ in range(50):
        inner = _random_request(rng)
        raw = pb.ProveRequest(submit=inner).SerializeToString()
        assert wire.split_prove(raw) is not None
        assert _plain(convert.prove_from_body(raw)) == convert.request_from_proto(inner)
    # two submit fields are merged by protobuf: left to it
    twice = pb.ProveRequest(submit=pb.SubmitProofRequest(request_id="a", proof_kind=1)).SerializeToString() * 2
    assert wire.split_prove(twice) is None
    assert convert.prove_from_body(twice).request_id == "a"


@pytest.mark.parametrize("body", [
    b"\x52\x05abc",                    # vanilla_proof (field 10) says 5 bytes, has 3
    b"\x52\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # a length varint longer than 64 bits
    b"\x0b",                           # a group (wire type 3) never closed
    b"\x0a\x03ab",                     # request_id truncated
    b"\x0a\x02\xff\xfe",               # request_id not UTF-8 (found by protobuf on the rest)
])
def test_malformed_bodies_are_refused_by_protobuf(body):
    with pytest.raises(DecodeError):
        convert.submit_from_body(body)
    with pytest.raises(DecodeError):
        pb.SubmitProofRequest.FromString(body)


def test_groups_are_left_to_protobuf():
    raw = pb.SubmitProofRequest(request_id="g", proof_kind=1, vanilla_proof=b"v").SerializeToString() + b"\xfb\x07\xfc\x07"
    assert wire.split_submit(raw) is None  # an empty group of unknown field 127: protobuf skips it
    assert _plain(convert.submit_from_body(raw)) == convert.request_from_proto(pb.SubmitProofRequest.FromString(raw))


def test_too_many_fields_fall_back_to_protobuf(monkeypatch):
    monkeypatch.setattr(wire, "MAX_SCANNED_FIELDS", 10)
    m = pb.SubmitProofRequest(request_id="many", proof_kind=2, vanilla_proofs=[bytes([i]) for i in range(20)])
    raw = m.SerializeToString()
    assert wire.split_submit(raw) is None
    assert convert.submit_from_body(raw).vanilla_proofs == tuple(bytes([i]) for i in range(20))
