"""Proving and verifying keys in bellperson's `.params` / `.vk` byte layout.

Layout (big-endian counts, uncompressed points, no header, no padding):
vk (864 bytes: alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2), then u32 |ic| and ic,
then u32-counted vectors h, l, a, b_g1 (G1) and b_g2 (G2). A `.vk` file stops after ic.
The large vectors stay memory-mapped raw bytes; backends decode them when they load the key.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import struct
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs
from cuzk_plugin.bls12_381.points import (
    G1_UNCOMPRESSED,
    G2_UNCOMPRESSED,
    check_uncompressed_vector,
    decode_g1,
    decode_g2,
    encode_g1,
    encode_g2,
    g1_raw_to_limbs,
    g2_raw_to_limbs,
)
from cuzk_plugin.errors import EncodingError, ParamsError

VK_BYTES = 3 * G1_UNCOMPRESSED + 3 * G2_UNCOMPRESSED  # 864
_VK_FIELDS = (
    ("alpha_g1", 1), ("beta_g1", 1), ("beta_g2", 2), ("gamma_g2", 2), ("delta_g1", 1), ("delta_g2", 2),
)
#: The five vectors after ic, in file order, with their group.
VECTOR_FIELDS = (("h", 1), ("l", 1), ("a", 1), ("b_g1", 1), ("b_g2", 2))
#: Points a piece of :meth:`ProvingKey.check_vectors` (96-192 MB).
CHECK_PIECE = 1 << 20


@dataclass(frozen=True)
class SetupSecrets:
    """The toxic waste of a single-party Groth16 setup: test keys only (whoever holds these can
    forge proofs). Each is an Fr element in [1, r); the values stay out of ``repr``."""

    tau: int = field(repr=False)
    alpha: int = field(repr=False)
    beta: int = field(repr=False)
    gamma: int = field(repr=False)
    delta: int = field(repr=False)

    def __post_init__(self) -> None:
        for name in ("tau", "alpha", "beta", "gamma", "delta"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 1 <= value < R:
                raise ValueError(f"setup secret {name} must be an integer in [1, r)")

    @classmethod
    def draw(cls) -> SetupSecrets:
        """Five fresh secrets from the OS's CSPRNG."""
        return cls(*(secrets.randbelow(R - 1) + 1 for _ in range(5)))

    def limbs(self) -> np.ndarray:
        """``(5, 4) uint64`` canonical limbs in the order tau, alpha, beta, gamma, delta (the
        device key generator's argument)."""
        return ints_to_limbs([self.tau, self.alpha, self.beta, self.gamma, self.delta], FR_LIMBS)


@dataclass(frozen=True)
class VerifyingKey:
    """Groth16 verifying key (paper names)."""

    alpha_g1: G1Point
    beta_g1: G1Point
    beta_g2: G2Point
    gamma_g2: G2Point
    delta_g1: G1Point
    delta_g2: G2Point
    #: ic[i] = (beta*u_i(tau) + alpha*v_i(tau) + w_i(tau)) / gamma * G1, one per public input (ONE first).
    ic: list[G1Point]

    @property
    def num_inputs(self) -> int:
        """Public inputs including ONE."""
        return len(self.ic)

    def to_bytes(self) -> bytes:
        parts = [
            encode_g1(self.alpha_g1, compressed=False), encode_g1(self.beta_g1, compressed=False),
            encode_g2(self.beta_g2, compressed=False), encode_g2(self.gamma_g2, compressed=False),
            encode_g1(self.delta_g1, compressed=False), encode_g2(self.delta_g2, compressed=False),
            struct.pack(">I", len(self.ic)),
        ]
        parts += [encode_g1(p, compressed=False) for p in self.ic]
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes | memoryview | np.ndarray, *, source: str = "vk", exact: bool = True) -> VerifyingKey:
        """Decode with full checks (curve and subgroup). ``exact`` refuses trailing bytes."""
        data = bytes(data[: VK_BYTES + 4]) if not exact else bytes(data)
        if len(data) < VK_BYTES + 4:
            raise ParamsError(f"{source}: {len(data)} bytes, too short for a verifying key (needs >= {VK_BYTES + 4})")
        values = {}
        off = 0
        for name, group in _VK_FIELDS:
            size = G1_UNCOMPRESSED if group == 1 else G2_UNCOMPRESSED
            decode = decode_g1 if group == 1 else decode_g2
            values[name] = _decode_or_params_error(decode, data[off : off + size], f"{source}: {name} (offset {off})")
            off += size
        (n_ic,) = struct.unpack_from(">I", data, off)
        off += 4
        return cls(**values, ic=[])._with_ic(data, off, n_ic, source, exact)

    def _with_ic(self, data: bytes, off: int, n_ic: int, source: str, exact: bool) -> VerifyingKey:
        need = off + n_ic * G1_UNCOMPRESSED
        if len(data) < need:
            raise ParamsError(f"{source}: ic count {n_ic} needs {need} bytes, file has {len(data)} (truncated?)")
        if exact and len(data) != need:
            raise ParamsError(f"{source}: {len(data) - need} unexpected trailing bytes after ic")
        ic = [
            _decode_or_params_error(decode_g1, data[off + i * 96 : off + (i + 1) * 96], f"{source}: ic[{i}] (offset {off + i * 96})")
            for i in range(n_ic)
        ]
        return VerifyingKey(self.alpha_g1, self.beta_g1, self.beta_g2, self.gamma_g2, self.delta_g1, self.delta_g2, ic)

    @classmethod
    def load(cls, path: str | os.PathLike) -> VerifyingKey:
        """Read a `.vk` file, or the verifying key at the front of a `.params` file."""
        path = Path(path)
        with open(path, "rb") as fh:
            head = fh.read(VK_BYTES + 4)
            if len(head) < VK_BYTES + 4:
                raise ParamsError(f"{path}: {len(head)} bytes, too short for a verifying key")
            (n_ic,) = struct.unpack_from(">I", head, VK_BYTES)
            total = VK_BYTES + 4 + n_ic * G1_UNCOMPRESSED
            size = os.fstat(fh.fileno()).st_size
            if total > size:  # checked before reading: a text file's "ic count" may ask for gigabytes
                raise ParamsError(f"{path}: not a verifying key (its ic count {n_ic:,} needs {total:,} bytes, "
                                  f"the file has {size:,})")
            data = head + fh.read(total - len(head))
        exact = path.suffix == ".vk"
        if exact and path.stat().st_size != total:
            raise ParamsError(f"{path}: size {path.stat().st_size} != {total} expected for {n_ic} ic points")
        return cls.from_bytes(data, source=str(path), exact=True)

    def save(self, path: str | os.PathLike) -> None:
        _atomic_write(Path(path), [self.to_bytes()])


def _decode_or_params_error(decode, raw: bytes, what: str):
    try:
        return decode(raw, compressed=False, what=what, allow_identity=False)
    except EncodingError as exc:
        raise ParamsError(str(exc)) from exc


@dataclass
class ProvingKey:
    """Groth16 proving key: the verifying key plus the five query vectors as raw bytes.

    Vectors are ``(n, 96)`` (G1) or ``(n, 192)`` (G2) uint8 arrays of uncompressed big-endian
    points, memory-mapped when opened from a file.
    """

    vk: VerifyingKey
    #: h[i] = tau^i * Z(tau) / delta * G1, i < N - 1.
    h: np.ndarray
    #: l[i] = (beta*u_i + alpha*v_i + w_i)(tau) / delta * G1, one per aux variable.
    l: np.ndarray
    #: u_i(tau) * G1 for every input and every A-dense aux variable.
    a: np.ndarray
    #: v_i(tau) * G1 over the B-dense variables.
    b_g1: np.ndarray
    #: v_i(tau) * G2 over the B-dense variables.
    b_g2: np.ndarray
    path: Path | None = field(default=None)

    @property
    def domain_size(self) -> int:
        return int(self.h.shape[0]) + 1

    @property
    def vectors_nbytes(self) -> int:
        return sum(int(getattr(self, n).nbytes) for n, _ in VECTOR_FIELDS)

    def vector_limbs(self, name: str, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Points ``start:stop`` of vector ``name`` as affine limbs (identity = zeros), the
        protocol's array form: G1 ``(n, 2, 6)``, G2 ``(n, 2, 2, 6)``."""
        raw = getattr(self, name)[start:stop]
        return g2_raw_to_limbs(raw) if name == "b_g2" else g1_raw_to_limbs(raw)

    def counts(self) -> dict[str, int]:
        return {"ic": self.vk.num_inputs} | {n: int(getattr(self, n).shape[0]) for n, _ in VECTOR_FIELDS}

    @staticmethod
    def file_size(counts: dict[str, int]) -> int:
        """888 + 96*(|ic|+|h|+|l|+|a|+|b_g1|) + 192*|b_g2| (the spec's formula)."""
        g1 = counts["ic"] + counts["h"] + counts["l"] + counts["a"] + counts["b_g1"]
        return 888 + 96 * g1 + 192 * counts["b_g2"]

    @classmethod
    def open(cls, path: str | os.PathLike, *, check: bool = True) -> ProvingKey:
        """Memory-map a `.params` file. Counts are checked against the file size before any
        point is decoded; ``check`` also verifies flags and x, y < p over every vector."""
        path = Path(path)
        size = path.stat().st_size
        if size < VK_BYTES + 4:
            raise ParamsError(f"{path}: {size} bytes, too short for a parameter file")
        mm = np.memmap(path, dtype=np.uint8, mode="r")
        (n_ic,) = struct.unpack_from(">I", mm[VK_BYTES : VK_BYTES + 4].tobytes())
        off = VK_BYTES + 4 + n_ic * G1_UNCOMPRESSED
        layout = []
        for name, group in VECTOR_FIELDS:
            width = G1_UNCOMPRESSED if group == 1 else G2_UNCOMPRESSED
            if off + 4 > size:
                raise ParamsError(f"{path}: truncated at the count of '{name}' (offset {off}, file size {size})")
            (count,) = struct.unpack_from(">I", mm[off : off + 4].tobytes())
            off += 4
            if off + count * width > size:
                raise ParamsError(
                    f"{path}: '{name}' claims {count} points ({count * width} bytes at offset {off}) "
                    f"but the file has {size} bytes (truncated or corrupted count)"
                )
            layout.append((name, off, count, width))
            off += count * width
        if off != size:
            raise ParamsError(f"{path}: {size - off} unexpected bytes after the last vector (corrupted counts?)")
        vk = VerifyingKey.from_bytes(mm[: VK_BYTES + 4 + n_ic * G1_UNCOMPRESSED], source=str(path))
        vectors = {name: mm[o : o + c * w].reshape(c, w) for name, o, c, w in layout}
        key = cls(vk=vk, path=path, **vectors)
        if check:
            key.check_vectors()
        return key

    def check_vectors(self, *, threads: int = 1, progress: Callable[[int, int], None] | None = None) -> None:
        """Flags, identity and x, y < p for every vector point (production readers' checks).
        The identity is refused everywhere but in ``l``: there it stands for an aux variable
        that no constraint uses (circom keeps such wires with --O0). bellperson refuses such
        keys; Filecoin's circuits never produce them.

        In pieces of :data:`CHECK_PIECE` points on ``threads`` threads (numpy leaves the GIL in
        its loops: a 47 GB key is ~90 s on one core), the first bad point in file order named
        whichever thread finds it; ``progress(bytes checked, bytes in all)`` after each piece."""
        pieces = [(name, start) for name, _ in VECTOR_FIELDS
                  for start in range(0, getattr(self, name).shape[0], CHECK_PIECE)]
        total = self.vectors_nbytes

        def check(name: str, start: int) -> int:
            piece = getattr(self, name)[start : start + CHECK_PIECE]
            check_uncompressed_vector(piece, what=name, allow_identity=name == "l", offset=start)
            return int(piece.nbytes)

        done = 0
        try:
            with ThreadPoolExecutor(max(1, threads), thread_name_prefix="cuzk-key-check") as pool:
                futures = [pool.submit(check, name, start) for name, start in pieces]
                try:
                    for fut in futures:  # in file order: the first bad piece is the one reported
                        done += fut.result()
                        if progress:
                            progress(done, total)
                finally:
                    for fut in futures:
                        fut.cancel()
        except EncodingError as exc:
            where = f"{self.path}: " if self.path else ""
            raise ParamsError(f"{where}{exc}") from exc

    def save(self, path: str | os.PathLike) -> None:
        """Write the `.params` layout (atomically: a partial file never has the final name)."""
        chunks: list[bytes | np.ndarray] = [self.vk.to_bytes()]
        for name, _ in VECTOR_FIELDS:
            vec = getattr(self, name)
            chunks += [struct.pack(">I", vec.shape[0]), np.ascontiguousarray(vec)]
        _atomic_write(Path(path), chunks)


def _atomic_write(path: Path, chunks: list) -> None:
    tmp = path.with_name(f".{path.name}.partial")
    with open(tmp, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk if isinstance(chunk, bytes) else memoryview(chunk).cast("B"))
    os.replace(tmp, path)


def file_digest(path: str | os.PathLike) -> str:
    """Filecoin's parameters.json digest: first 32 hex chars of BLAKE2b-512 of the file."""
    h = hashlib.blake2b()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()[:32]
