"""Field constants and conversions between Python ints and little-endian uint64 limb arrays.

Array conventions at every boundary of the package (canonical form, never Montgomery):
Fr ``(n, 4) uint64``, Fq ``(n, 6) uint64``, limb 0 least significant.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

#: Base field modulus p (381 bits).
P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
#: Scalar field modulus r (255 bits), the order of G1 and G2.
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
FR_LIMBS = 4
FQ_LIMBS = 6
#: Multiplicative generator of Fr*, also Filecoin's coset shift.
FR_GENERATOR = 7
#: 2-adicity of r - 1.
FR_TWO_ADICITY = 32
#: Primitive 2^32-th root of unity: 7^((r-1)/2^32).
FR_ROOT_OF_UNITY = pow(FR_GENERATOR, (R - 1) >> FR_TWO_ADICITY, R)


def root_of_unity(log_n: int) -> int:
    """omega for a domain of size 2^log_n: the 2^32-th root raised to 2^(32 - log_n)."""
    if not 0 <= log_n <= FR_TWO_ADICITY:
        raise ValueError(f"domain size 2^{log_n} exceeds Fr's 2-adicity {FR_TWO_ADICITY}")
    return pow(FR_ROOT_OF_UNITY, 1 << (FR_TWO_ADICITY - log_n), R)


def ints_to_limbs(values: Iterable[int], nlimbs: int = FR_LIMBS) -> np.ndarray:
    """Python ints (each < 2^(64*nlimbs)) -> ``(n, nlimbs) uint64`` little-endian limbs."""
    width = 8 * nlimbs
    buf = b"".join(int(v).to_bytes(width, "little") for v in values)
    return np.frombuffer(buf, dtype="<u8").reshape(-1, nlimbs).astype(np.uint64)


def limbs_to_ints(arr: np.ndarray) -> list[int]:
    """``(..., nlimbs) uint64`` limbs -> flat list of Python ints."""
    arr = np.ascontiguousarray(arr, dtype="<u8")
    width = 8 * arr.shape[-1]
    raw = arr.tobytes()
    return [int.from_bytes(raw[i : i + width], "little") for i in range(0, len(raw), width)]


def limbs_to_objects(arr: np.ndarray) -> np.ndarray:
    """``(n, nlimbs)`` limbs -> ``(n,)`` object array of Python ints (for vectorised CPU math);
    :func:`ints_to_limbs` is the inverse."""
    out = np.empty(arr.shape[0], dtype=object)
    out[:] = limbs_to_ints(arr)
    return out


def less_than_modulus(arr: np.ndarray, modulus: int) -> np.ndarray:
    """Vectorised ``value < modulus`` over ``(..., nlimbs)`` limb arrays -> bool array."""
    nlimbs = arr.shape[-1]
    mod = ints_to_limbs([modulus], nlimbs)[0]
    less = np.zeros(arr.shape[:-1], dtype=bool)
    equal = np.ones(arr.shape[:-1], dtype=bool)
    for i in range(nlimbs - 1, -1, -1):  # most significant limb first
        limb = arr[..., i]
        less |= equal & (limb < mod[i])
        equal &= limb == mod[i]
    return less


def random_fr(rng: np.random.Generator, n: int) -> np.ndarray:
    """n uniform Fr elements as ``(n, 4) uint64`` (rejection sampling on 255-bit draws)."""
    out = np.empty((0, FR_LIMBS), dtype=np.uint64)
    while out.shape[0] < n:
        draw = rng.integers(0, 2**64, size=(2 * (n - out.shape[0]) + 8, FR_LIMBS), dtype=np.uint64)
        draw[:, 3] &= np.uint64((1 << 63) - 1)
        out = np.concatenate([out, draw[less_than_modulus(draw, R)]])
    return np.ascontiguousarray(out[:n])
