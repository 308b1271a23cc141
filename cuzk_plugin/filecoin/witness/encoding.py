"""Field values as the assignment's arrays, for all instances at once: Fr ints to (..., 4)
uint64 limbs and to little-endian bits, the gadgets' reverse bit numbering, bits packed back
into ints. Shared by every kind's witness."""

from __future__ import annotations

from itertools import repeat

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS

__all__ = ["fr_limbs", "fr_bits_le", "reverse_bit_numbering", "pack_bits"]

_FR_BITS = 255


def fr_limbs(values: np.ndarray) -> np.ndarray:
    """Object ints in [0, r), any shape -> (..., 4) uint64 limbs."""
    flat = values.reshape(-1).tolist()
    raw = b"".join(map(int.to_bytes, flat, repeat(32), repeat("little")))  # type: ignore[arg-type]  # no per-value Python frame
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(*values.shape, FR_LIMBS)


def fr_bits_le(values: np.ndarray) -> np.ndarray:
    """Object ints (any shape) -> (..., 255) uint8, least significant bit first."""
    raw = np.frombuffer(fr_limbs(values).tobytes(), dtype=np.uint8).reshape(*values.shape, 32)
    return np.unpackbits(raw, axis=-1, bitorder="little")[..., :_FR_BITS]


def reverse_bit_numbering(bits: np.ndarray) -> np.ndarray:
    """reverse_bit_numbering over the last axis: pad with 0 to whole bytes, reverse each byte."""
    n = bits.shape[-1]
    pad = (-n) % 8
    if pad:
        bits = np.concatenate([bits, np.zeros((*bits.shape[:-1], pad), dtype=bits.dtype)], axis=-1)
    return bits.reshape(*bits.shape[:-1], -1, 8)[..., ::-1].reshape(*bits.shape[:-1], -1)


def pack_bits(bits: np.ndarray) -> np.ndarray:
    """(..., k) 0/1 little-endian bits (k <= 254) -> object ints."""
    packed = np.packbits(bits.astype(np.uint8), axis=-1, bitorder="little")
    out = np.empty(bits.shape[:-1], dtype=object)
    flat = out.reshape(-1)
    rows = packed.reshape(-1, packed.shape[-1])
    for i in range(rows.shape[0]):
        flat[i] = int.from_bytes(rows[i].tobytes(), "little")
    return out
