"""G1/G2 points: Filecoin (zcash) byte encodings with full validation, and conversions between
affine limb arrays and py-arkworks-bls12381 points (the CPU curve math).

Encodings are big-endian. G1: x (48) [|| y (48)]; G2: x.c1 || x.c0 [|| y.c1 || y.c0].
Flags in the top three bits of byte 0: 0x80 compressed, 0x40 infinity, 0x20 sign (y is the
lexicographically larger root). Limb arrays hold G2 coordinates c0 first (see
:mod:`cuzk_plugin.backends.protocol`); arkworks' xy bytes are c0 first too, each big-endian.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from cuzk_plugin.bls12_381.fields import FQ_LIMBS, P, less_than_modulus
from cuzk_plugin.errors import EncodingError

G1_COMPRESSED = 48
G1_UNCOMPRESSED = 96
G2_COMPRESSED = 96
G2_UNCOMPRESSED = 192
FLAG_COMPRESSED = 0x80
FLAG_INFINITY = 0x40
FLAG_SIGN = 0x20
FLAG_MASK = 0xE0


# --------------------------------------------------------------------------- limb <-> bytes
def _copy_words(view: np.ndarray, dtype: str) -> np.ndarray:
    """A contiguous copy of ``view`` (uint64 words, any strides) in byte order ``dtype``: one
    assignment, which numpy does in a single pass (``ascontiguousarray(...).astype(...)``
    made two, the swap the slower: 9x at 2^22 points)."""
    out = np.empty(view.shape, dtype=dtype)
    out[...] = view
    return out


def g1_limbs_to_xy_bytes(points: np.ndarray) -> np.ndarray:
    """``(n, 2, 6)`` limbs -> ``(n, 96)`` uint8, x || y big-endian (no flags)."""
    pts = np.asarray(points, dtype=np.uint64).reshape(-1, 2, FQ_LIMBS)
    return _copy_words(pts[..., ::-1], ">u8").view(np.uint8).reshape(-1, 96)


def g1_xy_bytes_to_limbs(raw: np.ndarray) -> np.ndarray:
    """``(n, 96)`` uint8 big-endian x || y (flags already cleared) -> ``(n, 2, 6)`` limbs."""
    words = np.ascontiguousarray(raw, dtype=np.uint8).view(">u8").reshape(-1, 2, FQ_LIMBS)
    return _copy_words(words[..., ::-1], "=u8")


def g1_raw_to_limbs(raw: np.ndarray) -> np.ndarray:
    """Uncompressed Filecoin G1 bytes ``(n, 96)`` -> ``(n, 2, 6)`` limbs; identity rows (the 0x40
    flag) become all-zero limbs, the protocol's identity. Assumes :func:`check_uncompressed_vector`."""
    raw = np.asarray(raw)
    limbs = g1_xy_bytes_to_limbs(_clear_flags(raw))
    limbs[(raw[:, 0] & FLAG_INFINITY) != 0] = 0
    return limbs


def g2_raw_to_limbs(raw: np.ndarray) -> np.ndarray:
    """Uncompressed Filecoin G2 bytes ``(n, 192)`` (c1 first) -> ``(n, 2, 2, 6)`` limbs."""
    raw = np.asarray(raw)
    limbs = g2_filecoin_bytes_to_limbs(_clear_flags(raw))
    limbs[(raw[:, 0] & FLAG_INFINITY) != 0] = 0
    return limbs


def g1_limbs_to_raw(points: np.ndarray) -> np.ndarray:
    """``(n, 2, 6)`` canonical limbs (identity = zeros) -> uncompressed Filecoin G1 bytes
    ``(n, 96)``, the identity as the 0x40 flag (the inverse of :func:`g1_raw_to_limbs`)."""
    raw = g1_limbs_to_xy_bytes(points)
    raw[~raw.any(axis=1), 0] = FLAG_INFINITY
    return raw


def g2_limbs_to_raw(points: np.ndarray) -> np.ndarray:
    """``(n, 2, 2, 6)`` canonical limbs -> uncompressed Filecoin G2 bytes ``(n, 192)``."""
    raw = g2_limbs_to_filecoin_bytes(points)
    raw[~raw.any(axis=1), 0] = FLAG_INFINITY
    return raw


def _clear_flags(raw: np.ndarray) -> np.ndarray:
    out = np.array(raw, dtype=np.uint8, copy=True)
    if out.shape[0]:
        out[:, 0] &= ~np.uint8(FLAG_MASK)
    return out


def g2_limbs_to_arkworks_bytes(points: np.ndarray) -> np.ndarray:
    """``(n, 2, 2, 6)`` limbs -> ``(n, 192)`` x.c0||x.c1||y.c0||y.c1 (arkworks order)."""
    pts = np.asarray(points, dtype=np.uint64).reshape(-1, 2, 2, FQ_LIMBS)
    return _copy_words(pts[..., ::-1], ">u8").view(np.uint8).reshape(-1, 192)


def g2_arkworks_bytes_to_limbs(raw: np.ndarray) -> np.ndarray:
    words = np.ascontiguousarray(raw, dtype=np.uint8).view(">u8").reshape(-1, 2, 2, FQ_LIMBS)
    return _copy_words(words[..., ::-1], "=u8")


def g2_limbs_to_filecoin_bytes(points: np.ndarray) -> np.ndarray:
    """``(n, 2, 2, 6)`` limbs -> ``(n, 192)`` Filecoin order x.c1||x.c0||y.c1||y.c0 (no flags)."""
    pts = np.asarray(points, dtype=np.uint64).reshape(-1, 2, 2, FQ_LIMBS)
    return _copy_words(pts[:, :, ::-1, ::-1], ">u8").view(np.uint8).reshape(-1, 192)


def g2_filecoin_bytes_to_limbs(raw: np.ndarray) -> np.ndarray:
    words = np.ascontiguousarray(raw, dtype=np.uint8).view(">u8").reshape(-1, 2, 2, FQ_LIMBS)
    return _copy_words(words[:, :, ::-1, ::-1], "=u8")


# --------------------------------------------------------------------------- limbs <-> arkworks
def g1_from_limbs(points: np.ndarray) -> list[G1Point]:
    """Affine limbs -> arkworks G1 points (checks the curve equation, not the subgroup)."""
    raw = g1_limbs_to_xy_bytes(points).tobytes()
    try:
        return [G1Point.from_xy_bytes_unchecked_be(raw[i : i + 96]) for i in range(0, len(raw), 96)]
    except Exception as exc:  # arkworks raises ValueError without the index
        raise EncodingError(f"G1 limb array holds a point off the curve: {exc}") from exc


def g2_from_limbs(points: np.ndarray) -> list[G2Point]:
    raw = g2_limbs_to_arkworks_bytes(points).tobytes()
    try:
        return [G2Point.from_xy_bytes_unchecked_be(raw[i : i + 192]) for i in range(0, len(raw), 192)]
    except Exception as exc:
        raise EncodingError(f"G2 limb array holds a point off the curve: {exc}") from exc


def g1_to_limbs(points: Sequence[G1Point] | G1Point) -> np.ndarray:
    """arkworks G1 point(s) -> ``(2, 6)`` (one point) or ``(n, 2, 6)`` limbs."""
    if isinstance(points, G1Point):
        return g1_xy_bytes_to_limbs(np.frombuffer(points.to_xy_bytes_be(), dtype=np.uint8))[0]
    raw = b"".join(p.to_xy_bytes_be() for p in points)
    return g1_xy_bytes_to_limbs(np.frombuffer(raw, dtype=np.uint8))


def g2_to_limbs(points: Sequence[G2Point] | G2Point) -> np.ndarray:
    if isinstance(points, G2Point):
        return g2_arkworks_bytes_to_limbs(np.frombuffer(points.to_xy_bytes_be(), dtype=np.uint8))[0]
    raw = b"".join(p.to_xy_bytes_be() for p in points)
    return g2_arkworks_bytes_to_limbs(np.frombuffer(raw, dtype=np.uint8))


# --------------------------------------------------------------------------- single-point codecs
def _split_flags(data: bytes, size: int, what: str) -> tuple[int, bytes]:
    if len(data) != size:
        raise EncodingError(f"{what}: expected {size} bytes, got {len(data)}")
    flags = data[0] & FLAG_MASK
    return flags, bytes([data[0] & ~FLAG_MASK & 0xFF]) + data[1:]


def _check_identity_encoding(flags: int, body: bytes, what: str) -> None:
    if flags & FLAG_SIGN or any(body):
        raise EncodingError(f"{what}: infinity flag set but the other bits are not all zero")


def _check_below_p(body: bytes, what: str) -> None:
    for k in range(0, len(body), 48):
        if int.from_bytes(body[k : k + 48], "big") >= P:
            raise EncodingError(f"{what}: coordinate at byte {k} is not below the field modulus p")


def decode_g1(data: bytes, *, compressed: bool, what: str = "G1 point",
              subgroup_check: bool = True, allow_identity: bool = True) -> G1Point:
    """Decode a G1 point, enforcing every rule of the zcash format; errors name ``what``."""
    flags, body = _split_flags(data, G1_COMPRESSED if compressed else G1_UNCOMPRESSED, what)
    _check_compression_flag(flags, compressed, what)
    if flags & FLAG_INFINITY:
        _check_identity_encoding(flags, body, what)
        if not allow_identity:
            raise EncodingError(f"{what}: is the point at infinity")
        return G1Point.identity()
    _check_below_p(body, what)
    try:
        if compressed:
            point = G1Point.from_compressed_bytes_unchecked(data)
        else:
            if flags & FLAG_SIGN:
                raise EncodingError(f"{what}: sign flag set on an uncompressed point")
            point = G1Point.from_xy_bytes_unchecked_be(body)
    except EncodingError:
        raise
    except Exception as exc:
        raise EncodingError(f"{what}: not on the curve") from exc
    if subgroup_check and not point.is_in_subgroup():
        raise EncodingError(f"{what}: not in the prime-order subgroup")
    return point


def decode_g2(data: bytes, *, compressed: bool, what: str = "G2 point",
              subgroup_check: bool = True, allow_identity: bool = True) -> G2Point:
    """Decode a G2 point in Filecoin's layout (c1 before c0)."""
    flags, body = _split_flags(data, G2_COMPRESSED if compressed else G2_UNCOMPRESSED, what)
    _check_compression_flag(flags, compressed, what)
    if flags & FLAG_INFINITY:
        _check_identity_encoding(flags, body, what)
        if not allow_identity:
            raise EncodingError(f"{what}: is the point at infinity")
        return G2Point.identity()
    _check_below_p(body, what)
    try:
        if compressed:
            point = G2Point.from_compressed_bytes_unchecked(data)
        else:
            if flags & FLAG_SIGN:
                raise EncodingError(f"{what}: sign flag set on an uncompressed point")
            # Filecoin x.c1||x.c0||y.c1||y.c0 -> arkworks x.c0||x.c1||y.c0||y.c1.
            ark = body[48:96] + body[0:48] + body[144:192] + body[96:144]
            point = G2Point.from_xy_bytes_unchecked_be(ark)
    except EncodingError:
        raise
    except Exception as exc:
        raise EncodingError(f"{what}: not on the curve") from exc
    if subgroup_check and not point.is_in_subgroup():
        raise EncodingError(f"{what}: not in the prime-order subgroup")
    return point


def _check_compression_flag(flags: int, compressed: bool, what: str) -> None:
    if compressed and not flags & FLAG_COMPRESSED:
        raise EncodingError(f"{what}: compression flag (0x80) not set on a compressed encoding")
    if not compressed and flags & FLAG_COMPRESSED:
        raise EncodingError(f"{what}: compression flag (0x80) set on an uncompressed encoding")


def encode_g1(point: G1Point, *, compressed: bool) -> bytes:
    if compressed:
        return bytes(point.to_compressed_bytes())
    if point == G1Point.identity():
        return bytes([FLAG_INFINITY]) + bytes(G1_UNCOMPRESSED - 1)
    return bytes(point.to_xy_bytes_be())


def encode_g2(point: G2Point, *, compressed: bool) -> bytes:
    if compressed:
        return bytes(point.to_compressed_bytes())
    if point == G2Point.identity():
        return bytes([FLAG_INFINITY]) + bytes(G2_UNCOMPRESSED - 1)
    ark = bytes(point.to_xy_bytes_be())
    return ark[48:96] + ark[0:48] + ark[144:192] + ark[96:144]


# --------------------------------------------------------------------------- vector checks
def check_uncompressed_vector(raw: np.ndarray, *, what: str, allow_identity: bool = False,
                              chunk: int = 1 << 20, offset: int = 0) -> None:
    """Vectorised structural check of ``(n, 96|192)`` uncompressed points from a params file:
    flags (only the infinity flag, and then all other bytes zero, and only where the identity
    is allowed) and coordinates below p. Works in chunks so a memory-mapped 13 GB vector is
    never copied whole. The curve equation is checked where the points are decoded (backend load).
    ``offset``: the index of ``raw[0]`` in its vector (a bad point is named by that index)."""
    for start in range(0, raw.shape[0], chunk):
        _check_uncompressed_chunk(np.asarray(raw[start : start + chunk]), offset + start, what, allow_identity)


def _check_uncompressed_chunk(raw: np.ndarray, start: int, what: str, allow_identity: bool) -> None:
    flags = raw[:, 0] & FLAG_MASK
    identity = flags == FLAG_INFINITY
    bad = np.flatnonzero((flags != 0) & ~(identity & allow_identity))
    if bad.size:
        i = int(bad[0])
        reason = "is the point at infinity" if flags[i] == FLAG_INFINITY else f"has flag bits 0x{int(flags[i]):02x} set"
        raise EncodingError(f"{what}[{start + i}]: {reason}")
    if identity.any():
        raw = _clear_flags(raw)
        bad = np.flatnonzero(identity & raw.any(axis=1))
        if bad.size:
            raise EncodingError(f"{what}[{start + int(bad[0])}]: infinity flag set but the other bits are not all zero")
    words = np.ascontiguousarray(raw).view(">u8").reshape(raw.shape[0], -1, FQ_LIMBS)[..., ::-1]
    ok = less_than_modulus(_copy_words(words, "=u8"), P).all(axis=1)
    bad = np.flatnonzero(~ok)
    if bad.size:
        raise EncodingError(f"{what}[{start + int(bad[0])}]: coordinate not below the field modulus p")
