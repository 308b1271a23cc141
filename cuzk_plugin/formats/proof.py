"""Groth16 proof bytes: A (G1, 48) || B (G2, 96) || C (G1, 48), compressed; k partitions concatenated."""

from __future__ import annotations

from dataclasses import dataclass

from py_arkworks_bls12381 import G1Point, G2Point

from cuzk_plugin.bls12_381.points import decode_g1, decode_g2, encode_g1, encode_g2
from cuzk_plugin.errors import EncodingError

PROOF_BYTES = 192


@dataclass(frozen=True)
class Proof:
    a: G1Point
    b: G2Point
    c: G1Point

    def to_bytes(self) -> bytes:
        return encode_g1(self.a, compressed=True) + encode_g2(self.b, compressed=True) + encode_g1(self.c, compressed=True)

    @classmethod
    def from_bytes(cls, data: bytes, *, what: str = "proof") -> Proof:
        """Decode with every check (flags, x < p, curve, subgroup, not the identity)."""
        if len(data) != PROOF_BYTES:
            raise EncodingError(f"{what}: expected {PROOF_BYTES} bytes, got {len(data)}")
        return cls(
            a=decode_g1(data[0:48], compressed=True, what=f"{what}.A (offset 0)", allow_identity=False),
            b=decode_g2(data[48:144], compressed=True, what=f"{what}.B (offset 48)", allow_identity=False),
            c=decode_g1(data[144:192], compressed=True, what=f"{what}.C (offset 144)", allow_identity=False),
        )


def encode_proofs(proofs: list[Proof]) -> bytes:
    """Multi-partition proof: the partitions' proofs in partition order."""
    return b"".join(p.to_bytes() for p in proofs)


def decode_proofs(data: bytes) -> list[Proof]:
    """Inverse of :func:`encode_proofs`; the length must be an exact multiple of 192."""
    if len(data) == 0 or len(data) % PROOF_BYTES:
        raise EncodingError(f"proof bytes: length {len(data)} is not a positive multiple of {PROOF_BYTES}")
    return [Proof.from_bytes(data[k : k + PROOF_BYTES], what=f"proof[{k // PROOF_BYTES}]") for k in range(0, len(data), PROOF_BYTES)]
