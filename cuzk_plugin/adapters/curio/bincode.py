"""Reading bincode as Curio sends it (PoSt vanilla proofs, SnapDeals PartitionProofs): little-endian
fixed-width integers and u64-counted sequences, every length bounded by the bytes left before
anything is allocated, every refusal naming the field and its first byte."""

from __future__ import annotations

import struct

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.errors import CuzkError

__all__ = ["BincodeError", "BincodeReader"]


class BincodeError(CuzkError, ValueError):
    """Malformed bytes; ``path`` names the field, ``offset`` its first byte."""

    def __init__(self, path: str, offset: int, message: str):
        super().__init__(f"{path} (byte {offset}): {message}")
        self.path = path
        self.offset = offset
        self.message = message


class BincodeReader:
    """A cursor over ``raw`` that raises ``error`` (a :class:`BincodeError` subclass) on bad input."""

    def __init__(self, raw: bytes, error: type[BincodeError]):
        self.raw = memoryview(raw)
        self.pos = 0
        self.error = error

    @property
    def left(self) -> int:
        return len(self.raw) - self.pos

    def take(self, n: int, path: str) -> bytes:
        if self.left < n:
            raise self.error(path, self.pos, f"truncated: needs {n} bytes, {self.left} left")
        out = bytes(self.raw[self.pos:self.pos + n])
        self.pos += n
        return out

    def u32(self, path: str) -> int:
        return struct.unpack("<I", self.take(4, path))[0]

    def u64(self, path: str) -> int:
        return struct.unpack("<Q", self.take(8, path))[0]

    def count(self, path: str, min_size: int, expect: int | None = None) -> int:
        """A u64 length, refused unless it is ``expect`` (when given) and its elements could fit
        in the bytes left."""
        at = self.pos
        n = self.u64(path)
        if expect is not None and n != expect:
            raise self.error(path, at, f"count {n}, expected {expect}")
        if n * min_size > self.left:
            raise self.error(path, at, f"count {n} cannot fit in the {self.left} bytes left "
                                       f"(each element takes at least {min_size})")
        return n

    def frs(self, n: int, path: str) -> tuple[int, ...]:
        """``n`` field elements ``path[0..n-1]``: one slice when all are there and canonical,
        else element by element, so the refusal names the element."""
        at = self.pos
        if self.left >= 32 * n:
            blob = self.raw[at:at + 32 * n]
            out = tuple(int.from_bytes(blob[k:k + 32], "little") for k in range(0, 32 * n, 32))
            if all(x < R for x in out):
                self.pos += 32 * n
                return out
        return tuple(self.fr(f"{path}[{j}]") for j in range(n))

    def fr(self, path: str) -> int:
        at = self.pos
        x = int.from_bytes(self.take(32, path), "little")
        if x >= R:
            raise self.error(path, at, "not a canonical field element (>= r)")
        return x
