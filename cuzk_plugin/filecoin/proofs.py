"""Registered proof types (go-state-types ``abi/sector.go``, filecoin-proofs-api ``registry.rs``)
and the identifiers derived from them: porep_id, prover_id, replica_id."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = [
    "RegisteredSealProof", "SEAL_PROOFS", "seal_proof_by_name", "seal_proof_by_number",
    "prover_id_from_miner", "replica_id", "SECTOR_SIZE_NAMES",
]

SECTOR_SIZE_NAMES = {2 << 10: "2KiB", 8 << 20: "8MiB", 512 << 20: "512MiB", 32 << 30: "32GiB", 64 << 30: "64GiB"}
_SIZES = list(SECTOR_SIZE_NAMES)

#: (first number, Go name suffix, proofs-api / C1 JSON suffix, API version)
_FAMILIES = [
    (0, "V1", "V1", "1.0.0"),
    (5, "V1_1", "V1_1", "1.1.0"),
    (10, "V1_1_Feat_SyntheticPoRep", "V1_1_Feat_SyntheticPoRep", "1.2.0"),
    (15, "V1_2_Feat_NiPoRep", "V1_2_Feat_NonInteractivePoRep", "1.2.0"),
]


@dataclass(frozen=True)
class RegisteredSealProof:
    """One registered seal proof: its number, names, sector size and API version."""

    number: int
    go_name: str  #: RegisteredSealProof_<go_name> in go-state-types
    name: str  #: the string in the C1 JSON ``registered_proof``
    sector_size: int
    api_version: str

    @property
    def v1_name(self) -> str:
        """The key of ``vanilla_proofs`` in a C1 JSON: always the V1 name of the size."""
        return f"StackedDrg{SECTOR_SIZE_NAMES[self.sector_size]}V1"

    @property
    def porep_id(self) -> bytes:
        """32 bytes: the proof number as u64 LE, a zero nonce (u64 LE), 16 zero bytes."""
        return self.number.to_bytes(8, "little") + (0).to_bytes(8, "little") + bytes(16)

    @property
    def interactive(self) -> bool:
        return self.number < 15

    @property
    def synthetic(self) -> bool:
        return 10 <= self.number < 15

    @property
    def challenge_kind(self) -> str:
        """How its challenges are derived: 'interactive', 'synthetic' or 'non-interactive'."""
        return "non-interactive" if not self.interactive else "synthetic" if self.synthetic else "interactive"


SEAL_PROOFS: tuple[RegisteredSealProof, ...] = tuple(
    RegisteredSealProof(first + k, f"StackedDrg{SECTOR_SIZE_NAMES[size]}{go}",
                        f"StackedDrg{SECTOR_SIZE_NAMES[size]}{api}", size, version)
    for first, go, api, version in _FAMILIES
    for k, size in enumerate(_SIZES)
)
_BY_NAME = {p.name: p for p in SEAL_PROOFS}
_BY_NUMBER = {p.number: p for p in SEAL_PROOFS}


def seal_proof_by_name(name: str) -> RegisteredSealProof:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown registered seal proof {name!r}") from None


def seal_proof_by_number(number: int) -> RegisteredSealProof:
    try:
        return _BY_NUMBER[number]
    except KeyError:
        raise ValueError(f"unknown registered seal proof number {number}") from None


def prover_id_from_miner(miner_id: int) -> bytes:
    """The actor id as an unsigned LEB128 varint, left-aligned in 32 zero bytes."""
    if miner_id < 0:
        raise ValueError("miner id must be non-negative")
    out = bytearray()
    while True:
        byte = miner_id & 0x7F
        miner_id >>= 7
        out.append(byte | (0x80 if miner_id else 0))
        if not miner_id:
            break
    return bytes(out) + bytes(32 - len(out))


def replica_id(prover_id: bytes, sector_id: int, ticket: bytes, comm_d: bytes, porep_id: bytes) -> bytes:
    """SHA-256(prover_id || sector_id u64 BE || ticket || comm_d || porep_id), fr32-trimmed."""
    digest = hashlib.sha256(prover_id + sector_id.to_bytes(8, "big") + ticket + comm_d + porep_id).digest()
    return digest[:31] + bytes([digest[31] & 0x3F])
