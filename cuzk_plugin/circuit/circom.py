"""Importers for circom's binary `.r1cs` and `.wtns` files (iden3 binfile container).

Container: 4-byte magic, u32 version, u32 section count, then sections (u32 type, u64 size,
data), all little-endian. Field elements are n8-byte little-endian, standard (not Montgomery)
form. Wire 0 is ONE, then outputs, public inputs, private inputs and internal wires, so circom's
wire numbering is exactly our variable numbering (inputs first, then aux).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, less_than_modulus, limbs_to_ints
from cuzk_plugin.circuit.r1cs import R1CS, SparseMatrix
from cuzk_plugin.errors import CircuitError

#: Primes circom knows by name (--prime), to say which curve a foreign file was made for.
KNOWN_PRIMES = {
    21888242871839275222246405745257275088548364400416034343698204186575808495617: "bn128",
    R: "bls12381",
    0xFFFFFFFF00000001: "goldilocks",
    0x30644E72E131A029B85045B68181585D97816A916871CA8D3C208C16D87CFD47: "grumpkin",
    0x40000000000000000000000000000000224698FC094CF91B992D30ED00000001: "pallas",
    0x40000000000000000000000000000000224698FC0994A8DD8C46EB2100000001: "vesta",
    0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF: "secq256r1",
}


def _prime_name(p: int) -> str:
    return KNOWN_PRIMES.get(p, f"unknown prime {p:#x}")


@dataclass(frozen=True)
class CircomR1csInfo:
    """Header facts of a circom `.r1cs` beyond the constraints."""

    num_wires: int
    num_outputs: int
    num_public_inputs: int
    num_private_inputs: int
    num_labels: int

    @property
    def num_public(self) -> int:
        """Public signals in snarkjs's public.json: outputs then public inputs (ONE excluded)."""
        return self.num_outputs + self.num_public_inputs


def _read_sections(path: Path, magic: bytes) -> tuple[bytes, dict[int, tuple[int, int]]]:
    data = path.read_bytes()
    if len(data) < 12 or data[:4] != magic:
        raise CircuitError(f"{path}: not a circom {magic.decode()} file (bad magic {data[:4]!r})")
    _version, nsections = struct.unpack_from("<II", data, 4)
    sections: dict[int, tuple[int, int]] = {}
    off = 12
    for _ in range(nsections):
        if off + 12 > len(data):
            raise CircuitError(f"{path}: truncated section header at offset {off}")
        stype, size = struct.unpack_from("<IQ", data, off)
        off += 12
        if off + size > len(data):
            raise CircuitError(f"{path}: section {stype} claims {size} bytes at offset {off}, file has {len(data)}")
        sections.setdefault(stype, (off, size))
        off += size
    return data, sections


def _check_field(path: Path, data: bytes, off: int) -> tuple[int, int]:
    (n8,) = struct.unpack_from("<I", data, off)
    prime = int.from_bytes(data[off + 4 : off + 4 + n8], "little")
    if prime != R:
        raise CircuitError(
            f"{path}: made for {_prime_name(prime)}, not bls12381 (compile with circom --prime bls12381)"
        )
    return n8, off + 4 + n8


def read_r1cs(path: str | os.PathLike) -> tuple[R1CS, CircomR1csInfo]:
    """Load a circom `.r1cs` (compiled with ``--prime bls12381``) as our R1CS."""
    path = Path(path)
    data, sections = _read_sections(path, b"r1cs")
    if 1 not in sections or 2 not in sections:
        raise CircuitError(f"{path}: missing header (1) or constraints (2) section")
    if 4 in sections or 5 in sections:
        raise CircuitError(f"{path}: uses custom gates (PLONK only); Groth16 needs a plain R1CS")
    hoff, _ = sections[1]
    n8, off = _check_field(path, data, hoff)
    n_wires, n_out, n_pub, n_prv = struct.unpack_from("<IIII", data, off)
    (n_labels,) = struct.unpack_from("<Q", data, off + 16)
    (n_constraints,) = struct.unpack_from("<I", data, off + 24)
    info = CircomR1csInfo(n_wires, n_out, n_pub, n_prv, n_labels)
    num_inputs = 1 + n_out + n_pub
    coff, csize = sections[2]
    terms = _parse_constraints(path, data, coff, csize, n_constraints, n8, n_wires)
    mats = [SparseMatrix.from_terms(*t) for t in terms]
    return R1CS(num_inputs, n_wires - num_inputs, n_constraints, *mats), info


def _parse_constraints(path, data, off, size, n_constraints, n8, n_wires):
    """Decode the constraint records: a Python pass over the 3 * n_constraints term-count
    headers only, then every term's wire and coefficient gathered at once with numpy."""
    end = off + size
    stride = 4 + n8
    n_lcs = 3 * n_constraints
    starts = np.empty(n_lcs, dtype=np.int64)
    counts = np.empty(n_lcs, dtype=np.int64)
    unpack_u32 = struct.Struct("<I").unpack_from
    pos = off
    for i in range(n_lcs):
        if pos + 4 > end:
            raise CircuitError(f"{path}: constraints section truncated in constraint {i // 3}")
        (nterms,) = unpack_u32(data, pos)
        starts[i], counts[i] = pos + 4, nterms
        pos += 4 + nterms * stride
        if pos > end:
            raise CircuitError(f"{path}: constraints section truncated in constraint {i // 3}")
    buf = np.frombuffer(data, dtype=np.uint8)
    lc_of_term = np.repeat(np.arange(n_lcs, dtype=np.int64), counts)
    first_term = np.cumsum(counts) - counts
    term_off = starts[lc_of_term] + (np.arange(lc_of_term.size) - first_term[lc_of_term]) * stride
    wires = buf[term_off[:, None] + np.arange(4)].copy().view("<u4")[:, 0].astype(np.int64)
    coeff_limbs = buf[term_off[:, None] + 4 + np.arange(n8)].copy().view("<u8")
    if wires.size and int(wires.max()) >= n_wires:
        raise CircuitError(f"{path}: constraint refers to wire {int(wires.max())} of {n_wires}")
    if wires.size and not less_than_modulus(coeff_limbs, R).all():
        raise CircuitError(f"{path}: coefficient not below the bls12381 scalar field")
    out = []
    for k in range(3):  # A, B, C
        sel = lc_of_term % 3 == k
        coeffs = np.empty(int(sel.sum()), dtype=object)
        coeffs[:] = limbs_to_ints(coeff_limbs[sel])
        out.append((lc_of_term[sel] // 3, wires[sel], coeffs))
    return out


def read_wtns(path: str | os.PathLike) -> np.ndarray:
    """Load a circom `.wtns` witness as ``(n_wires, 4) uint64`` limbs (wire 0 = ONE)."""
    path = Path(path)
    data, sections = _read_sections(path, b"wtns")
    if 1 not in sections or 2 not in sections:
        raise CircuitError(f"{path}: missing header (1) or witness (2) section")
    hoff, _ = sections[1]
    n8, off = _check_field(path, data, hoff)
    if n8 != 8 * FR_LIMBS:
        raise CircuitError(f"{path}: field elements of {n8} bytes, expected 32")
    (n_witness,) = struct.unpack_from("<I", data, off)
    woff, wsize = sections[2]
    if wsize != n_witness * n8:
        raise CircuitError(f"{path}: witness section holds {wsize} bytes, header says {n_witness} x {n8}")
    values = np.frombuffer(data, dtype="<u8", count=n_witness * FR_LIMBS, offset=woff).reshape(-1, FR_LIMBS)
    bad = np.flatnonzero(~less_than_modulus(values, R))
    if bad.size:
        raise CircuitError(f"{path}: witness value {int(bad[0])} is not below r")
    return values.astype(np.uint64)


def split_witness(r1cs: R1CS, witness: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Circom's full witness -> (inputs with ONE, aux), checking the wire count."""
    if witness.shape[0] != r1cs.num_vars:
        raise CircuitError(f"witness has {witness.shape[0]} wires, the circuit has {r1cs.num_vars}")
    return witness[: r1cs.num_inputs], witness[r1cs.num_inputs :]
