"""Point encodings against py-arkworks-bls12381 and py_ecc (an independent implementation),
and every class of invalid encoding rejected with its reason."""

import random

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, G2Point, Scalar
from py_ecc.bls import point_compression as pc
from py_ecc.optimized_bls12_381 import G1, G2, multiply, normalize

from cuzk_plugin.bls12_381.fields import P, R
from cuzk_plugin.bls12_381.points import (
    check_uncompressed_vector,
    decode_g1,
    decode_g2,
    encode_g1,
    encode_g2,
    g1_from_limbs,
    g1_to_limbs,
    g2_filecoin_bytes_to_limbs,
    g2_from_limbs,
    g2_limbs_to_filecoin_bytes,
    g2_to_limbs,
)
from cuzk_plugin.errors import EncodingError


@pytest.fixture
def scalars(seed):
    rnd = random.Random(seed)
    return [rnd.randrange(1, R) for _ in range(4)] + [1, R - 1]


def test_g1_matches_py_ecc(scalars):
    for k in scalars:
        ours = G1Point() * Scalar(k)
        ref = normalize(multiply(G1, k))
        comp = encode_g1(ours, compressed=True)
        assert comp == pc.compress_G1(multiply(G1, k)).to_bytes(48, "big")
        assert encode_g1(ours, compressed=False) == int(ref[0]).to_bytes(48, "big") + int(ref[1]).to_bytes(48, "big")
        assert decode_g1(comp, compressed=True) == ours
        assert decode_g1(encode_g1(ours, compressed=False), compressed=False) == ours
        assert normalize(pc.decompress_G1(int.from_bytes(comp, "big"))) == ref


def test_g2_matches_py_ecc_filecoin_order(scalars):
    for k in scalars[:3]:
        ours = G2Point() * Scalar(k)
        x, y = normalize(multiply(G2, k))
        z1, z2 = pc.compress_G2(multiply(G2, k))
        comp = encode_g2(ours, compressed=True)
        assert comp == z1.to_bytes(48, "big") + z2.to_bytes(48, "big")
        unc = encode_g2(ours, compressed=False)  # x.c1 || x.c0 || y.c1 || y.c0
        want = b"".join(int(c).to_bytes(48, "big") for c in (x.coeffs[1], x.coeffs[0], y.coeffs[1], y.coeffs[0]))
        assert unc == want
        assert decode_g2(comp, compressed=True) == ours
        assert decode_g2(unc, compressed=False) == ours


def test_identity_encodings():
    assert encode_g1(G1Point.identity(), compressed=True) == bytes([0xC0]) + bytes(47)
    assert encode_g1(G1Point.identity(), compressed=False) == bytes([0x40]) + bytes(95)
    assert encode_g2(G2Point.identity(), compressed=True) == bytes([0xC0]) + bytes(95)
    assert decode_g1(bytes([0xC0]) + bytes(47), compressed=True) == G1Point.identity()
    assert decode_g2(bytes([0x40]) + bytes(191), compressed=False) == G2Point.identity()
    with pytest.raises(EncodingError, match=r"proof\.A: is the point at infinity"):
        decode_g1(bytes([0xC0]) + bytes(47), compressed=True, what="proof.A", allow_identity=False)


def test_limb_conversions_round_trip(scalars):
    g1s = [G1Point() * Scalar(k) for k in scalars] + [G1Point.identity()]
    limbs = g1_to_limbs(g1s)
    assert limbs.shape == (len(g1s), 2, 6) and (limbs[-1] == 0).all()
    assert g1_from_limbs(limbs) == g1s
    g2s = [G2Point() * Scalar(k) for k in scalars[:3]] + [G2Point.identity()]
    l2 = g2_to_limbs(g2s)
    assert g2_from_limbs(l2) == g2s
    fil = g2_limbs_to_filecoin_bytes(l2[:3])
    assert [bytes(r) for r in fil] == [encode_g2(p, compressed=False) for p in g2s[:3]]
    assert (g2_filecoin_bytes_to_limbs(fil) == l2[:3]).all()
    # x coordinate of the limbs is the integer py_ecc reports
    x = normalize(multiply(G1, scalars[0]))[0]
    assert int.from_bytes(limbs[0, 0].astype("<u8").tobytes(), "little") == int(x)


def _valid_g1():
    return encode_g1(G1Point() * Scalar(123456789), compressed=True)


@pytest.mark.parametrize(
    "mutate, reason",
    [
        (lambda b: b[:-1], "expected 48 bytes"),
        (lambda b: bytes([b[0] & 0x7F]) + b[1:], "compression flag"),
        (lambda b: bytes([0xC0]) + bytes(46) + b"\x01", "infinity flag set but"),
        (lambda b: bytes([0xE0]) + bytes(47), "infinity flag set but"),
        (lambda b: bytes([0x80 | (P >> 376)]) + P.to_bytes(48, "big")[1:], "not below the field modulus"),
    ],
)
def test_g1_compressed_invalid_classes(mutate, reason):
    with pytest.raises(EncodingError, match=reason):
        decode_g1(mutate(_valid_g1()), compressed=True, what="pt")


def _find_x(rnd, want_on_curve: bool) -> int:
    while True:
        x = rnd.randrange(P)
        on = pow((x**3 + 4) % P, (P - 1) // 2, P) == 1
        if on == want_on_curve:
            return x


def test_g1_off_curve_and_outside_subgroup(seed):
    rnd = random.Random(seed)
    off = (0x80 << 376 | _find_x(rnd, False)).to_bytes(48, "big")
    with pytest.raises(EncodingError, match="pt: not on the curve"):
        decode_g1(off, compressed=True, what="pt")
    # A random x on the curve lies outside the order-r subgroup (cofactor h ~ 2^126).
    on = (0x80 << 376 | _find_x(rnd, True)).to_bytes(48, "big")
    with pytest.raises(EncodingError, match="pt: not in the prime-order subgroup"):
        decode_g1(on, compressed=True, what="pt")
    assert decode_g1(on, compressed=True, subgroup_check=False) is not None


def test_uncompressed_invalid_classes():
    good = encode_g1(G1Point() * Scalar(99), compressed=False)
    with pytest.raises(EncodingError, match="compression flag"):
        decode_g1(bytes([good[0] | 0x80]) + good[1:], compressed=False)
    with pytest.raises(EncodingError, match="sign flag"):
        decode_g1(bytes([good[0] | 0x20]) + good[1:], compressed=False)
    with pytest.raises(EncodingError, match="not on the curve"):
        decode_g1(good[:-1] + bytes([good[-1] ^ 1]), compressed=False)
    with pytest.raises(EncodingError, match="byte 48 is not below"):
        decode_g1(good[:48] + P.to_bytes(48, "big"), compressed=False)
    g2 = encode_g2(G2Point() * Scalar(99), compressed=False)
    with pytest.raises(EncodingError, match="not on the curve"):
        decode_g2(g2[:-1] + bytes([g2[-1] ^ 1]), compressed=False)
    with pytest.raises(EncodingError, match="expected 192 bytes"):
        decode_g2(g2 + b"\0", compressed=False)


def test_g2_outside_subgroup(seed):
    rnd = random.Random(seed)
    for _ in range(64):
        data = bytes([0x80]) + rnd.randrange(P >> 8).to_bytes(47, "big") + rnd.randrange(P).to_bytes(48, "big")
        try:
            decode_g2(data, compressed=True, what="q")
        except EncodingError as exc:
            if "subgroup" in str(exc):
                return
            assert "not on the curve" in str(exc)
    pytest.fail("no on-curve, out-of-subgroup G2 point found in 64 tries")


def test_vector_check_names_the_index():
    pts = np.frombuffer(b"".join(encode_g1(G1Point() * Scalar(k), compressed=False) for k in (1, 2, 3)), np.uint8).reshape(3, 96).copy()
    check_uncompressed_vector(pts, what="h")
    bad = pts.copy()
    bad[2, 0] |= 0x40
    with pytest.raises(EncodingError, match=r"h\[2\]: is the point at infinity"):
        check_uncompressed_vector(bad, what="h")
    bad = pts.copy()
    bad[1, 48:] = np.frombuffer(P.to_bytes(48, "big"), np.uint8)
    with pytest.raises(EncodingError, match=r"h\[1\]: coordinate not below"):
        check_uncompressed_vector(bad, what="h")


def test_vector_check_in_chunks_reports_the_global_index():
    pts = np.frombuffer(b"".join(encode_g1(G1Point() * Scalar(k), compressed=False) for k in range(1, 8)), np.uint8).reshape(7, 96).copy()
    pts[5, 0] |= 0x20
    with pytest.raises(EncodingError, match=r"b_g1\[5\]: has flag bits 0x20 set"):
        check_uncompressed_vector(pts, what="b_g1", chunk=2)
