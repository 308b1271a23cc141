"""A proof request's large inputs taken from the body without copying them.

A 200 MB SubmitProofRequest parsed by protobuf costs three copies of its payload, each a
C call that holds the GIL for ~165 ms here (the parse; every read of the bytes field makes a
new ``bytes``), and every other RPC waits for each. Scanning the body's top-level fields
(protobuf wire format: a varint key ``field << 3 | wire_type``, then for wire type 2 a varint
length and the bytes) finds the large fields' bytes in place; they are handed on as views of
the body (the vanilla proofs; a registered circuit's witnesses are copied one at a time), and
only the small fields that remain are parsed by protobuf.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk_plugin.server.proto import cuzk_pb2 as pb

#: More top-level fields than this (a well-formed request has ~20, a WindowPoSt partition
#: ~2,400 vanilla proofs) and the scan gives way to protobuf's own parser.
MAX_SCANNED_FIELDS = 100_000
_LEN = 2  # wire type: length-delimited
_FIXED = {1: 8, 5: 4}  # wire type -> bytes
_VANILLA_PROOF = pb.SubmitProofRequest.DESCRIPTOR.fields_by_name["vanilla_proof"].number
_VANILLA_PROOFS = pb.SubmitProofRequest.DESCRIPTOR.fields_by_name["vanilla_proofs"].number
_REGISTERED = pb.SubmitProofRequest.DESCRIPTOR.fields_by_name["registered"].number
_WITNESSES = pb.RegisteredCircuitInput.DESCRIPTOR.fields_by_name["witnesses"].number
_SUBMIT = pb.ProveRequest.DESCRIPTOR.fields_by_name["submit"].number


@dataclass(frozen=True)
class SplitRequest:
    """A SubmitProofRequest body: ``rest`` (every other field, for protobuf) and the payload."""

    rest: bytes
    vanilla_proof: memoryview | None  # the last occurrence, as protobuf keeps for a singular field
    vanilla_proofs: tuple[memoryview, ...]
    #: ``registered`` (a REGISTERED_CIRCUIT job's .wtns files) where present: its other fields
    #: for protobuf, and its witnesses
    registered: tuple[bytes, tuple[memoryview, ...]] | None = None


def _varint(buf: memoryview, pos: int) -> tuple[int, int] | None:
    value = shift = 0
    while pos < len(buf) and shift < 64:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    return None


def _fields(buf: memoryview):
    """(field, wire type, start of the field's key, start of its value, end) for each top-level
    field; None (and stop) at anything this scan leaves to protobuf: groups, unknown wire
    types, truncation, too many fields."""
    pos = 0
    for _ in range(MAX_SCANNED_FIELDS):
        if pos == len(buf):
            return
        key = _varint(buf, pos)
        if key is None:
            yield None
            return
        tag, start = key
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            end_v = _varint(buf, start)
            if end_v is None:
                yield None
                return
            end = end_v[1]
        elif wire == _LEN:
            length = _varint(buf, start)
            if length is None:
                yield None
                return
            start, end = length[1], length[1] + length[0]
        elif wire in _FIXED:
            end = start + _FIXED[wire]
        else:
            yield None
            return
        if end > len(buf):
            yield None
            return
        yield field, wire, pos, start, end
        pos = end
    yield None


def split_submit(body: bytes | memoryview) -> SplitRequest | None:
    """The payload fields of a SubmitProofRequest body as views of it; None where protobuf
    should parse the body itself (it then refuses what is malformed)."""
    buf = memoryview(body)
    rest: list[memoryview] = []
    proof: memoryview | None = None
    proofs: list[memoryview] = []
    registered: tuple[bytes, tuple[memoryview, ...]] | None = None
    for f in _fields(buf):
        if f is None:
            return None
        field, wire, key_at, start, end = f
        if wire == _LEN and field == _VANILLA_PROOF:
            proof = buf[start:end]
        elif wire == _LEN and field == _VANILLA_PROOFS:
            proofs.append(buf[start:end])
        elif wire == _LEN and field == _REGISTERED:
            if registered is not None:
                return None  # a repeated sub-message: protobuf merges them; leave it to protobuf
            inner = _split_repeated(buf[start:end], _WITNESSES)
            if inner is None:
                return None
            registered = inner
        else:
            rest.append(buf[key_at:end])
    return SplitRequest(b"".join(rest), proof, tuple(proofs), registered)


def _split_repeated(buf: memoryview, number: int) -> tuple[bytes, tuple[memoryview, ...]] | None:
    """A message's other fields, and the values of its repeated bytes field ``number``."""
    rest: list[memoryview] = []
    values: list[memoryview] = []
    for f in _fields(buf):
        if f is None:
            return None
        field, wire, key_at, start, end = f
        if wire == _LEN and field == number:
            values.append(buf[start:end])
        else:
            rest.append(buf[key_at:end])
    return b"".join(rest), tuple(values)


def split_prove(body: bytes | memoryview) -> tuple[bytes, SplitRequest] | None:
    """A ProveRequest body: (its other fields, its ``submit`` split as :func:`split_submit`)."""
    buf = memoryview(body)
    rest: list[memoryview] = []
    submit: memoryview | None = None
    for f in _fields(buf):
        if f is None:
            return None
        field, wire, key_at, start, end = f
        if wire == _LEN and field == _SUBMIT:
            if submit is not None:
                return None  # repeated sub-message: protobuf merges them; leave it to protobuf
            submit = buf[start:end]
        else:
            rest.append(buf[key_at:end])
    inner = split_submit(submit if submit is not None else b"")
    return None if inner is None else (b"".join(rest), inner)
