"""Typed models of Curio's C1 envelope and of the C1 output JSON (SealCommitPhase1Output,
filecoin-proofs-api ``seal.rs``; storage-proofs ``stacked/vanilla/params.rs``,
``merkle/proof.rs``), with the structural and consistency checks of a PoRep job.

Every refusal is a :class:`C1Error` whose ``path`` is the JSON path of the bad field
(``$.vanilla_proofs.StackedDrg2KiBV1[0][1].comm_d_proofs.data.Single.path.path[3].hashes``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import numpy as np
import pybase64
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, model_validator

from cuzk_plugin.adapters.curio import json_pieces
from cuzk_plugin.errors import CuzkError
from cuzk_plugin.filecoin.proofs import RegisteredSealProof, seal_proof_by_name

__all__ = [
    "C1Error", "C1Envelope", "C1EnvelopeHeader", "C1Output", "VanillaProof", "MerkleProof", "ColumnProof",
    "InclusionPath", "PathElement", "parse_c1", "parse_envelope", "c1_from_json", "envelope_from_json",
    "c1_in_envelope", "check_envelope_size", "plain_envelope", "decode_json", "curio_envelope",
]

class _BadPart(ValueError):
    """The part of a value at ``where`` (list indices below the field) is bad; its JSON path
    gets them appended."""

    def __init__(self, where: tuple[int, ...], message: str):
        super().__init__(message)
        self.where = where


def _domain(value: Any) -> bytes:
    """A 32-byte hash or field element as the C1 writes it: a JSON list of 32 integers 0..255.
    One ``bytes()`` call checks the values (a 32 GiB C1 holds ~300 K of them: ten times faster
    than a per-item constrained list)."""
    if type(value) is not list:  # bytes(n) of an int would allocate n bytes
        raise ValueError("expected a list of 32 integers 0..255")
    try:
        out = bytes(value)
    except (TypeError, ValueError):
        j = next(j for j, x in enumerate(value) if type(x) is not int or not 0 <= x <= 255)
        raise _BadPart((j,), f"{value[j]!r} is not an integer 0..255") from None
    if len(out) != 32:
        raise ValueError(f"{len(out)} bytes, expected 32")
    return out


def _domains(value: Any) -> list[bytes]:
    """A list of :func:`_domain` values in one call (a 32 GiB C1's sibling hashes are ~240 K of
    them: one validator call each costs more than the conversion); a bad one is named by its
    index as a per-item validator would name it."""
    if type(value) is not list:
        raise ValueError("expected a list of 32-byte values")
    if set(map(type, value)) <= {list}:  # C loops, no per-item Python frame
        try:
            out = list(map(bytes, value))
        except (TypeError, ValueError):
            pass
        else:
            if set(map(len, out)) <= {32}:
                return out
    for i, v in enumerate(value):  # the first bad one, named
        try:
            _domain(v)
        except _BadPart as exc:
            raise _BadPart((i, *exc.where), str(exc)) from None
        except ValueError as exc:
            raise _BadPart((i,), str(exc)) from None
    raise AssertionError("unreachable: a list refused as a whole has a bad item")


Domain = Annotated[bytes, PlainValidator(_domain)]
Domains = Annotated[list[bytes], PlainValidator(_domains)]
U32 = Annotated[int, Field(ge=0, lt=1 << 32)]
U64 = Annotated[int, Field(ge=0, lt=1 << 64)]


class C1Error(CuzkError, ValueError):
    """A malformed or inconsistent C1 output; ``path`` names the bad field."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PathElement(_Strict):
    """One level: the arity - 1 sibling hashes and the node's position among the children."""

    hashes: Domains
    index: U64


class InclusionPath(_Strict):
    path: list[PathElement]


class SingleProof(_Strict):
    root: Domain
    leaf: Domain
    path: InclusionPath


class SubProof(_Strict):
    base_proof: InclusionPath
    sub_proof: InclusionPath
    root: Domain
    leaf: Domain


class TopProof(_Strict):
    base_proof: InclusionPath
    sub_proof: InclusionPath
    top_proof: InclusionPath
    root: Domain
    leaf: Domain


class ProofData(_Strict):
    """Exactly one of the three shapes (serde's externally tagged enum)."""

    Single: SingleProof | None = None
    Sub: SubProof | None = None
    Top: TopProof | None = None

    @model_validator(mode="after")
    def _one_variant(self):
        present = [k for k in ("Single", "Sub", "Top") if getattr(self, k) is not None]
        if len(present) != 1:
            raise ValueError(f"a Merkle proof has exactly one of Single, Sub, Top; got {present or 'none'}")
        return self

    @property
    def variant(self) -> str:
        return next(k for k in ("Single", "Sub", "Top") if getattr(self, k) is not None)

    @property
    def proof(self) -> SingleProof | SubProof | TopProof:
        return getattr(self, self.variant)

    def levels(self) -> list[PathElement]:
        """All levels leaf to root (base, then sub, then top)."""
        p = self.proof
        if isinstance(p, SingleProof):
            return list(p.path.path)
        out = list(p.base_proof.path) + list(p.sub_proof.path)
        if isinstance(p, TopProof):
            out += list(p.top_proof.path)
        return out


class MerkleProof(_Strict):
    data: ProofData

    @property
    def root(self) -> bytes:
        return bytes(self.data.proof.root)

    @property
    def leaf(self) -> bytes:
        return bytes(self.data.proof.leaf)


class Column(_Strict):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    index: U32
    rows: Domains
    h: None = Field(default=None, alias="_h")


class ColumnProof(_Strict):
    column: Column
    inclusion_proof: MerkleProof


class ReplicaColumnProof(_Strict):
    c_x: ColumnProof
    drg_parents: list[ColumnProof]
    exp_parents: list[ColumnProof]


class LabelingProof(_Strict):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    parents: Domains
    layer_index: U32
    node: U64
    h: None = Field(default=None, alias="_h")


class EncodingProof(LabelingProof):
    pass


class VanillaProof(_Strict):
    """One challenge's vanilla proof."""

    comm_d_proofs: MerkleProof
    comm_r_last_proof: MerkleProof
    replica_column_proofs: ReplicaColumnProof
    labeling_proofs: list[LabelingProof]
    encoding_proof: EncodingProof


class C1Output(_Strict):
    """SealCommitPhase1Output."""

    registered_proof: str
    vanilla_proofs: dict[str, list[list[VanillaProof]]]
    comm_r: Domain
    comm_d: Domain
    replica_id: Domain
    seed: Domain
    ticket: Domain

    @property
    def seal_proof(self) -> RegisteredSealProof:
        return seal_proof_by_name(self.registered_proof)

    @property
    def partitions(self) -> list[list[VanillaProof]]:
        return next(iter(self.vanilla_proofs.values()))


class C1EnvelopeHeader(BaseModel):
    """The numbers of Curio's envelope: what the plan needs of it once ``Phase1Out`` is decoded
    (a plain envelope's 65 MB string is not kept twice, :func:`plain_envelope`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    SectorNum: U64
    SectorSize: U64


class C1Envelope(BaseModel):
    """Curio's JSON wrapper: ``Phase1Out`` is standard base64 of the raw C1 JSON bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    SectorNum: U64
    Phase1Out: str
    SectorSize: U64

    def c1_bytes(self) -> bytes:
        """``Phase1Out`` decoded (:func:`b64decode_standard`)."""
        try:
            return b64decode_standard(self.Phase1Out.encode("ascii"))
        except ValueError as exc:  # binascii.Error, UnicodeEncodeError
            raise C1Error("$.Phase1Out", f"not standard base64 ({exc})") from None

    def header(self) -> C1EnvelopeHeader:
        return C1EnvelopeHeader(SectorNum=self.SectorNum, SectorSize=self.SectorSize)


def b64decode_standard(data: bytes | memoryview) -> bytes:
    """Standard base64 as Go's ``base64.StdEncoding`` (Curio's encoder) writes it: the alphabet
    alone, padded to whole quads, no more ``=`` than the last quad needs (Python's
    ``b64decode(validate=True)`` also takes surplus padding; this refuses it, as Go does).
    pybase64's SIMD decoder releases the GIL: ~30 ms for a 32 GiB C1's 65 MB, where binascii
    took ~0.15 s holding it (bench/synthesis/plan-side-by-side-2026-12-06.md)."""
    return pybase64.b64decode(data, validate=True)


def curio_envelope(c1: bytes, sector_num: int, sector_size: int) -> bytes:
    """Curio's envelope of a C1 output's JSON bytes, as Curio sends it to cuzk
    (``{"SectorNum", "Phase1Out": standard base64, "SectorSize"}``): what clients, benches and
    tests send where Curio would."""
    return json.dumps({"SectorNum": sector_num, "Phase1Out": pybase64.b64encode(c1).decode("ascii"),
                       "SectorSize": sector_size}).encode()


_PHASE1OUT_KEY = b'"Phase1Out"'
#: Curio's envelope holds three keys and two numbers: a document with more quotes is not one
#: (json_pieces.positions gives such a body up at the piece that shows it).
_ENVELOPE_QUOTES_MOST = 64


def _phase1out_key_at(raw: json_pieces.Buffer, quotes: np.ndarray) -> int | None:
    """Where the envelope's one ``"Phase1Out"`` key starts, among the document's ``quotes``
    (every key starts with one); None where it is not there once."""
    keys = [int(q) for q in quotes if raw[int(q):int(q) + len(_PHASE1OUT_KEY)] == _PHASE1OUT_KEY]
    return keys[0] if len(keys) == 1 else None


def plain_envelope(raw: json_pieces.Buffer) -> tuple[C1EnvelopeHeader, bytes] | None:
    """Curio's envelope and the C1 bytes in it, read without decoding its 65 MB base64 string as
    JSON (~0.3 s of one core at 32 GiB): where the envelope holds no backslash (so a quote
    always ends a string) and one ``"Phase1Out"`` key, the string after it is cut out, the rest
    decoded and validated as :func:`envelope_from_json` would, and the string base64-decoded
    from the bytes themselves (the envelope's numbers returned, not a 65 MB copy of the string).
    None wherever that does not hold or anything fails: the caller then reads it as JSON, which
    names what is wrong. ``raw`` may be the request body's memoryview: numpy finds the
    backslashes and quotes where it lies, without holding the GIL, so neither the envelope nor a
    hostile 100 MB body is copied whole or stalls other clients' calls while it is searched (a
    search of the whole body for the key held the GIL ~70 ms:
    bench/synthesis/plan-side-by-side-2026-12-06.md)."""
    view = np.frombuffer(raw, dtype=np.uint8)
    if json_pieces.positions(view, lambda piece: piece == ord("\\"), most=0).size:
        return None
    quotes = json_pieces.positions(view, lambda piece: piece == ord('"'), most=_ENVELOPE_QUOTES_MOST)
    if quotes.size > _ENVELOPE_QUOTES_MOST or (key_at := _phase1out_key_at(raw, quotes)) is None:
        return None
    key_end = key_at + len(_PHASE1OUT_KEY)
    after = json_pieces.text_of(raw, key_end, key_end + 64)
    lead = len(after) - len(after.lstrip(b" \t\r\n"))
    if after[lead:lead + 1] != b":":
        return None
    rest = after[lead + 1:]
    start = key_end + lead + 1 + (len(rest) - len(rest.lstrip(b" \t\r\n")))
    closing = quotes[quotes > start]
    if raw[start:start + 1] != b'"' or not closing.size:
        return None
    end = int(closing[0])
    try:
        top = json.loads(json_pieces.text_of(raw, 0, start) + b'""' + json_pieces.text_of(raw, end + 1, len(raw)))
        if not isinstance(top, dict) or top.get("Phase1Out") != "":
            return None
        env = C1Envelope.model_validate(top)
        return env.header(), b64decode_standard(memoryview(raw)[start + 1:end])
    except (ValueError, TypeError):  # JSON, validation and base64 errors
        return None


def _json_path(loc: tuple) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _validate(model: type[BaseModel], data: Any, prefix: str = "$") -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc, msg = tuple(err["loc"]), err["msg"]
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, _BadPart):
            loc, msg = (*loc, *cause.where), str(cause)
        path = _json_path(loc)
        if prefix != "$":
            path = prefix + path[1:]
        raise C1Error(path, msg) from None


def decode_json(raw: json_pieces.Buffer | str, what: str = "", keep_raw: Callable[[json_pieces.JsonPath], bool] | None = None) -> Any:
    """``json_pieces.loads(raw)``, a refusal raised as C1Error naming ``what`` (the C1 envelope,
    the C1 output; empty: a request body that may be either)."""
    lead = f"{what} " if what else ""
    try:
        return json_pieces.loads(raw, keep_raw=keep_raw)
    except json_pieces.NestingError as exc:
        raise C1Error("$", f"{lead}{exc} (a C1 nests about 10 levels)") from None
    except json_pieces.ShapeError as exc:
        raise C1Error("$", f"{lead or 'the JSON '}{exc} (a C1's longest arrays hold a few hundred); refused before "
                           "decoding") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise C1Error("$", f"{what} is not JSON ({exc})" if what else f"not a JSON C1 envelope ({exc})") from None


def parse_envelope(raw: bytes | str) -> tuple[C1Envelope, C1Output]:
    """Curio's envelope and the C1 output inside it."""
    return envelope_from_json(decode_json(raw, "the C1 envelope"))


def envelope_from_json(top: Any) -> tuple[C1Envelope, C1Output]:
    """:func:`parse_envelope` on JSON already decoded (a large body is decoded once)."""
    env = _validate(C1Envelope, top)
    return env, c1_in_envelope(env.header(), env.c1_bytes())


def c1_in_envelope(env: C1EnvelopeHeader, raw: bytes) -> C1Output:
    """The C1 output of ``env`` (its ``Phase1Out`` decoded: ``raw``), checked against its size."""
    c1 = parse_c1(raw, prefix="$.Phase1Out")
    check_envelope_size(env, c1)
    return c1


def check_envelope_size(env: C1EnvelopeHeader, c1: C1Output) -> None:
    """C1Error unless the envelope's SectorSize is the C1's proof type's."""
    if c1.seal_proof.sector_size != env.SectorSize:
        raise C1Error("$.SectorSize", f"{env.SectorSize} but the C1 is for {c1.registered_proof}")


def parse_c1(raw: bytes | str, *, prefix: str = "$") -> C1Output:
    """Parse and structurally check C1 JSON bytes (see :func:`check_c1` for consistency)."""
    return c1_from_json(decode_json(raw, "the C1 output"), prefix=prefix)


def c1_from_json(top: Any, *, prefix: str = "$") -> C1Output:
    """:func:`parse_c1` on JSON already decoded."""
    if isinstance(top, dict) and "registered_proof" in top:  # name the proof type before the rest
        try:
            seal_proof_by_name(str(top["registered_proof"]))
        except ValueError as exc:
            raise C1Error(f"{prefix}.registered_proof", str(exc)) from None
    c1 = _validate(C1Output, top, prefix)
    try:
        proof = c1.seal_proof
    except ValueError as exc:
        raise C1Error(f"{prefix}.registered_proof", str(exc)) from None
    if list(c1.vanilla_proofs) != [proof.v1_name]:
        raise C1Error(f"{prefix}.vanilla_proofs",
                      f"must hold exactly one key {proof.v1_name!r}, got {list(c1.vanilla_proofs)}")
    return c1
