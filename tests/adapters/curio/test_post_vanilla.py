"""Decoders of Curio's PoSt ``vanilla_proofs`` (bincode FallbackPoStSectorProof): they
round-trip the sealer's own encodings at every tree shape, and a truncated or bit-flipped
entry is refused naming the field, located by an independent walk over the byte layout of
post-facts.md section 6."""

from __future__ import annotations

import struct

import pytest

from cuzk_plugin.adapters.curio.post.job import PostJob, PostRequestError, PostWitnessError
from cuzk_plugin.adapters.curio.post.vanilla import PostDecodeError, decode_sector_proof, decode_sector_proofs
from cuzk_plugin.filecoin.fixtures.post_seal import ProvenSector, post_test_sector, post_vanilla_proofs, random_randomness
from cuzk_plugin.filecoin.post.params import post_proof_by_number
from cuzk_plugin.filecoin.post.vanilla import encode_sector_proof
from tests.filecoin.post.post_data import sealed_post_sectors

RAND = random_randomness(11)


@pytest.fixture(scope="module")
def window_raw() -> bytes:
    """One 2 KiB sector's WindowPoSt vanilla proof (ids 10-14: challenges independent of position)."""
    (raw,) = post_vanilla_proofs(post_proof_by_number(10), list(sealed_post_sectors()[:1]), RAND)
    return raw


def _fields_2kib(raw: bytes, prefix: str = "vanilla_proof") -> list[tuple[int, int, str]]:
    """(start, end, name) of every scalar field of a 2 KiB (Single, 2 levels of arity 8)
    FallbackPoStSectorProof, written out from the layout table, not from the decoder."""
    out, pos = [], 0

    def field(n: int, name: str) -> int:
        nonlocal pos
        out.append((pos, pos + n, name))
        value = int.from_bytes(raw[pos:pos + n], "little")
        pos += n
        return value

    field(8, f"{prefix}.sector_id")
    field(32, f"{prefix}.comm_r")
    assert field(8, f"{prefix}.vanilla_proof.sectors") == 1
    sp = f"{prefix}.vanilla_proof.sectors[0]"
    count = field(8, f"{sp}.inclusion_proofs")
    for j in range(count):
        mp = f"{sp}.inclusion_proofs[{j}]"
        assert field(4, f"{mp}.variant") == 0
        field(32, f"{mp}.Single.root")
        field(32, f"{mp}.Single.leaf")
        levels = field(8, f"{mp}.Single.path")
        for lv in range(levels):
            el = f"{mp}.Single.path[{lv}]"
            n = field(8, f"{el}.hashes")
            for h in range(n):
                field(32, f"{el}.hashes[{h}]")
            field(8, f"{el}.index")
    field(32, f"{sp}.comm_c")
    field(32, f"{sp}.comm_r_last")
    assert pos == len(raw)
    return out


# -- round trips -------------------------------------------------------------------------------

@pytest.mark.parametrize("number,size,sectors,length", [
    (10, 2 << 10, 2, 5_680),
    (5, 2 << 10, 2, 5_680),
    (0, 2 << 10, 1, 36_816),
    # post-facts.md section 6, derived sizes: a 32 GiB Winning sector proof 164,064 bytes, a
    # 32 GiB Window one 24,960, a 64 GiB Window one 25,520.
    (3, 32 << 30, 1, 164_064),
    (13, 32 << 30, 1, 24_960),
    (14, 64 << 30, 1, 25_520),
    (4, 64 << 30, 1, None),
])
def test_round_trip_of_the_sealers_encodings(number, size, sectors, length):
    proof = post_proof_by_number(number)
    ps = list(sealed_post_sectors()[:sectors]) if size == 2 << 10 else [ProvenSector(77, post_test_sector(size, seed=number))]
    for raw in post_vanilla_proofs(proof, ps, RAND):
        decoded = decode_sector_proof(raw)
        assert encode_sector_proof(decoded) == raw
        assert decode_sector_proofs([raw, raw], proof.shape, ["a", "b"]) == (decoded, decoded)  # the batch path
        assert length is None or len(raw) == length
        assert decoded.sectors[0].inclusion_proofs[0].variant == proof.shape.variant
        assert len(decoded.sectors[0].inclusion_proofs) == proof.shape.vanilla_challenges


def test_layout_read_independently(window_raw):
    s = sealed_post_sectors()[0]
    fields = _fields_2kib(window_raw)
    assert len(fields) == 3 + 1 + 10 * (4 + 2 * (1 + 7 + 1)) + 2
    sector_id, = struct.unpack_from("<Q", window_raw, 0)
    assert sector_id == s.sector_id
    assert window_raw[8:40] == s.sector.comm_r.to_bytes(32, "little")
    assert window_raw[-32:] == s.sector.tree_r_last.root.to_bytes(32, "little")
    assert window_raw[-64:-32] == s.sector.tree_c.root.to_bytes(32, "little")
    d = decode_sector_proof(window_raw)
    assert (d.sector_id, d.comm_r, d.sectors[0].comm_c) == (s.sector_id, s.sector.comm_r, s.sector.tree_c.root)


# -- truncation --------------------------------------------------------------------------------

def test_every_truncation_is_refused_naming_the_field(window_raw):
    """Every prefix: the field the cut falls in, or the count whose elements no longer fit."""
    fields = _fields_2kib(window_raw)
    for cut in range(len(window_raw)):
        expected = next(name for start, end, name in fields if end > cut)
        with pytest.raises(PostDecodeError) as err:
            decode_sector_proof(window_raw[:cut])
        e = err.value
        if "cannot fit" in e.message:  # refused at the count whose elements are cut off
            assert expected.startswith(e.path + "[") and e.offset < cut, (cut, e.path, expected)
        else:
            assert e.path == expected and "truncated" in e.message, (cut, e.path, expected, e.message)


def test_trailing_bytes_are_refused(window_raw):
    with pytest.raises(PostDecodeError, match=r"vanilla_proof \(byte 5680\): 1 bytes after the end"):
        decode_sector_proof(window_raw + b"\x00")


def test_huge_counts_are_refused_before_allocating(window_raw):
    huge = window_raw[:40] + struct.pack("<Q", 1 << 62) + window_raw[48:]
    with pytest.raises(PostDecodeError, match=r"vanilla_proof\.vanilla_proof\.sectors \(byte 40\): count 4611686018427387904 cannot fit"):
        decode_sector_proof(huge)


# -- bit flips ---------------------------------------------------------------------------------

def _refusal(raw: bytes) -> str:
    """The error a request with this one vanilla proof gets (decode, checks, then the circuit)."""
    try:
        job = PostJob.from_fields(10, RAND, [raw])
        job.circuit()
    except (PostDecodeError, PostRequestError, PostWitnessError) as exc:
        return str(exc)
    raise AssertionError("a corrupted vanilla proof was accepted")


def _anchor(name: str) -> str:
    """What a refusal must name: inside an inclusion proof, that proof; otherwise the field."""
    if ".inclusion_proofs[" in name:
        return name[:name.index("]", name.index(".inclusion_proofs[")) + 1]
    return name


def test_top_bit_flip_of_any_field_element_names_it(window_raw):
    """Bit 255 set: no longer a canonical field element, refused by the decoder itself."""
    for start, end, name in _fields_2kib(window_raw):
        if end - start != 32:
            continue
        raw = bytearray(window_raw)
        raw[end - 1] ^= 0x80
        with pytest.raises(PostDecodeError) as err:
            decode_sector_proof(bytes(raw))
        assert err.value.path == name and err.value.offset == start and "canonical" in err.value.message


@pytest.mark.slow
def test_low_bit_flip_of_every_field_is_refused_naming_it(window_raw):
    """Bit 0 of every field of the first and last inclusion proof and of the header: refused by
    the decoder, the request checks or the circuit, and the message names the field (or, for a
    value inside an inclusion proof, that inclusion proof)."""
    keep = ("inclusion_proofs[0]", "inclusion_proofs[9]")
    for start, _end, name in _fields_2kib(window_raw, "vanilla_proofs[0]"):
        if ".inclusion_proofs[" in name and not any(k in name for k in keep):
            continue
        raw = bytearray(window_raw)
        raw[start] ^= 0x01
        message = _refusal(bytes(raw))
        if name == "vanilla_proofs[0].sector_id":
            # Other sector, other challenges: the first inclusion proof no longer opens its leaf.
            assert "vanilla_proofs[0].vanilla_proof.sectors[0].inclusion_proofs[" in message and "sector id" in message
        elif name.endswith(("comm_c", "comm_r_last")) and ".inclusion_proofs[" not in name:
            assert name.rsplit(".", 1)[1] in message and "vanilla_proofs[0].comm_r" in message, (name, message)
        else:
            assert _anchor(name) in message, (name, message)


@pytest.mark.parametrize("what,mutate,expect", [
    ("second sector proof", lambda raw: raw[:40] + struct.pack("<Q", 2) + raw[48:] + raw[48:],
     "vanilla_proofs[0].vanilla_proof.sectors (byte 40): count 2, expected 1"),
    ("unknown variant", lambda raw: raw[:56] + struct.pack("<I", 3) + raw[60:],
     "inclusion_proofs[0].variant (byte 56): 3 is not a MerkleProof variant"),
])
def test_structural_refusals(window_raw, what, mutate, expect):
    assert expect in _refusal(mutate(window_raw)), what


# -- the batch decoder -------------------------------------------------------------------------

def _outcome(decode):
    try:
        return decode()
    except PostDecodeError as exc:
        return ("refused", exc.path, exc.offset, exc.message)


def test_batch_decoder_refuses_exactly_as_the_entry_decoder(window_raw):
    """Entry 1 of two with each field's low bit, then its top bit, flipped, and cut or extended:
    the batch gives what decode_sector_proof of that entry gives (the same refusal, or the same
    proof when the flip leaves valid bytes), and entry 0 stays valid."""
    shape = post_proof_by_number(10).shape
    names = ["vanilla_proofs[0]", "vanilla_proofs[1]"]
    variants = []
    for start, end, _name in _fields_2kib(window_raw):
        for byte, bit in ((start, 0x01), (end - 1, 0x80)):
            flipped = bytearray(window_raw)
            flipped[byte] ^= bit
            variants.append(bytes(flipped))
    variants += [window_raw[:-1], window_raw + b"\x00", window_raw[:100]]
    refused = 0
    for raw in variants:
        want = _outcome(lambda raw=raw: decode_sector_proof(raw, names[1], shape))
        got = _outcome(lambda raw=raw: decode_sector_proofs([window_raw, raw], shape, names))
        if isinstance(want, tuple) and want[0] == "refused":
            refused += 1
            assert got == want
        else:
            assert got == (decode_sector_proof(window_raw, names[0], shape), want)
    assert refused > 100  # counts, indices, variants, top bits, lengths
