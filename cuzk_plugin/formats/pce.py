"""A pre-compiled circuit: the R1CS matrices A, B, C of one circuit shape, recorded once and
reused for every proof of that shape (Filecoin circuits of one kind and sector size differ
only in their witness).

Rows are the circuit's constraints in ``enforce`` order followed by one ``x_i * 0 = 0`` row per
public input (bellperson's input constraints), so a backend evaluates a = A z, b = B z,
c = C z over all ``num_constraints`` rows and goes straight on to H. Columns are the unified
variable space: inputs ``0 .. num_inputs-1`` (ONE is 0), then aux ``num_inputs + j``; within a
row the columns ascend. Coefficients are indices into a small table of the distinct non-zero
values.

On disk (``{param_cache}/pce-{name}.pce``, our own format, little-endian):

    header (HEADER_BYTES): magic, version, counts, nnz per matrix, digest, name, section table
    (offset, bytes) per array, CRC-32 of the header; then each array raw, 64-byte aligned:
    coeffs (k,4) u64 | A row_ptr (m+1,) u64, cols (nnz,) u32, coeff_idx (nnz,) u32 | B ... |
    C ... | a_aux_density (num_aux,) u8 | b_input_density (num_inputs,) u8 | b_aux_density u8

so :func:`load_pce` maps the file and views the arrays in place. The digest is SHA-256 over the
counts and every array's bytes in file order: it names the shape and detects corruption.
A load checks the header and the sizes against the file size every time, and the digest once
per file version (the verdict is kept in a sidecar ``.verified`` file keyed by size and mtime).
Files are written to a temporary name, fsynced and renamed: never half-written.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import struct
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cuzk_plugin.errors import CuzkError

__all__ = [
    "SECTIONS",
    "CsrMatrix",
    "MappedCircuit",
    "PceError",
    "PceWriter",
    "PrecompiledCircuit",
    "ensure_pce",
    "load_pce",
    "pce_path",
    "read_header",
    "save_pce",
]

MAGIC = b"CUZKPCE\x00"
VERSION = 1
HEADER_BYTES = 4096
ALIGN = 64
#: Arrays in file order: (section name, dtype, trailing shape).
SECTIONS = (
    ("coeffs", np.dtype("<u8"), (4,)),
    ("a.row_ptr", np.dtype("<u8"), ()), ("a.cols", np.dtype("<u4"), ()), ("a.coeff_idx", np.dtype("<u4"), ()),
    ("b.row_ptr", np.dtype("<u8"), ()), ("b.cols", np.dtype("<u4"), ()), ("b.coeff_idx", np.dtype("<u4"), ()),
    ("c.row_ptr", np.dtype("<u8"), ()), ("c.cols", np.dtype("<u4"), ()), ("c.coeff_idx", np.dtype("<u4"), ()),
    ("a_aux_density", np.dtype("u1"), ()), ("b_input_density", np.dtype("u1"), ()), ("b_aux_density", np.dtype("u1"), ()),
)
_COUNTS = struct.Struct("<8sII7Q32s64s")  # magic, version, header bytes, 7 counts, digest, name
_SECTION = struct.Struct("<QQ")
_log = logging.getLogger(__name__)


class PceError(CuzkError, ValueError):
    """A pre-compiled circuit file that is missing, truncated, corrupted or of another shape."""


def pce_path(param_cache: str | os.PathLike, name: str) -> Path:
    """Where the pre-compiled circuit ``name`` lives in the param cache."""
    return Path(param_cache) / f"pce-{name}.pce"


def cached_circuits(param_cache: str | os.PathLike | None, names: Iterable[str]) -> list[str]:
    """The names among ``names`` whose pre-compiled circuit is in ``param_cache`` (none without one)."""
    return [] if param_cache is None else [n for n in names if pce_path(param_cache, n).exists()]


def ensure_pce(name: str, param_cache: str | os.PathLike, record: Callable[[str, Path], str]) -> str:
    """The path of ``name``'s pre-compiled circuit in ``param_cache``: recorded first (``record(name,
    path) -> digest``) when missing, and again when the file there is truncated or corrupted (never
    used as is). Concurrent callers (synthesis workers) wait for one recording (a lock file beside it)."""
    path = pce_path(param_cache, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            try:
                load_pce(path, expect_name=name)
                return str(path)
            except PceError as exc:
                _log.warning("pce %s: %s; recording it again", name, exc)
                path.unlink()
        _log.info("pce %s: no pre-compiled circuit in the param cache, recording %s (once)", name, path)
        t0 = time.perf_counter()
        digest = record(name, path)
        _log.info("pce %s: recorded in %.1fs, %.1f MB, digest %s", name, time.perf_counter() - t0,
                  path.stat().st_size / 1e6, digest[:16])
        return str(path)


@dataclass(frozen=True)
class CsrMatrix:
    """One matrix in compressed sparse rows; row j's terms are ``row_ptr[j] .. row_ptr[j+1]``."""

    #: (num_constraints + 1,) uint64, starting at 0, non-decreasing.
    row_ptr: np.ndarray
    #: (nnz,) uint32 column (variable) of each term.
    cols: np.ndarray
    #: (nnz,) uint32 index of each term's coefficient in :attr:`PrecompiledCircuit.coeffs`.
    coeff_idx: np.ndarray

    @property
    def nnz(self) -> int:
        return int(self.cols.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.row_ptr.nbytes + self.cols.nbytes + self.coeff_idx.nbytes)


@dataclass(frozen=True)
class PrecompiledCircuit:
    """The constraint matrices and densities of one circuit shape (see the module doc)."""

    #: Shape name, e.g. ``porep-32g``.
    name: str
    #: Public inputs, ONE included.
    num_inputs: int
    num_aux: int
    #: Rows: circuit constraints, then one per public input.
    num_constraints: int
    #: (k, 4) uint64 canonical Fr limbs: the distinct non-zero coefficients.
    coeffs: np.ndarray
    a: CsrMatrix
    b: CsrMatrix
    c: CsrMatrix
    #: (num_aux,) bool: aux variable i appears in some A row (every input is dense in A).
    a_aux_density: np.ndarray
    #: (num_inputs,) bool: input i appears in some B row.
    b_input_density: np.ndarray
    #: (num_aux,) bool: aux variable i appears in some B row.
    b_aux_density: np.ndarray
    #: Hex SHA-256 over the shape (counts, matrices, coefficient table): names the recorded circuit.
    digest: str

    @property
    def num_vars(self) -> int:
        return self.num_inputs + self.num_aux

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (what a backend holding the whole circuit needs)."""
        dens = self.a_aux_density.nbytes + self.b_input_density.nbytes + self.b_aux_density.nbytes
        return int(self.coeffs.nbytes + self.a.nbytes + self.b.nbytes + self.c.nbytes + dens)

    @property
    def domain_size(self) -> int:
        """N: the smallest power of two >= the number of rows."""
        return 1 << max(0, (self.num_constraints - 1).bit_length())


# -- layout -------------------------------------------------------------------------------------

def _layout(num_inputs: int, num_aux: int, num_constraints: int, num_coeffs: int,
            nnz: tuple[int, int, int]) -> list[tuple[str, int, int, tuple[int, ...], np.dtype]]:
    """(name, offset, bytes, shape, dtype) of every section."""
    shapes = {"coeffs": (num_coeffs, 4), "a_aux_density": (num_aux,), "b_input_density": (num_inputs,),
              "b_aux_density": (num_aux,)}
    for m, n in zip("abc", nnz, strict=True):
        shapes[f"{m}.row_ptr"] = (num_constraints + 1,)
        shapes[f"{m}.cols"] = (n,)
        shapes[f"{m}.coeff_idx"] = (n,)
    out, off = [], HEADER_BYTES
    for name, dtype, _ in SECTIONS:
        shape = shapes[name]
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        out.append((name, off, nbytes, shape, dtype))
        off += -(-nbytes // ALIGN) * ALIGN
    return out


def _counts_bytes(num_inputs, num_aux, num_constraints, num_coeffs, nnz) -> bytes:
    return struct.pack("<7Q", num_inputs, num_aux, num_constraints, num_coeffs, *nnz)


@dataclass(frozen=True)
class PceHeader:
    name: str
    num_inputs: int
    num_aux: int
    num_constraints: int
    num_coeffs: int
    nnz: tuple[int, int, int]
    digest: str
    #: (name, offset, bytes, shape, dtype) per section.
    sections: list

    @property
    def file_size(self) -> int:
        _, off, nbytes, _, _ = self.sections[-1]
        return off + nbytes


def read_header(path: str | os.PathLike) -> PceHeader:
    """The header of ``path``, checked (magic, version, CRC, section table against the counts
    and the file size); PceError names the file and what is wrong."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(HEADER_BYTES)
    except OSError as exc:
        raise PceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(head) < HEADER_BYTES:
        raise PceError(f"{path}: {size} bytes, shorter than the {HEADER_BYTES}-byte header (truncated)")
    magic, version, hbytes, n_in, n_aux, m, k, nnz_a, nnz_b, nnz_c, digest, name = _COUNTS.unpack_from(head)
    if magic != MAGIC:
        raise PceError(f"{path}: not a pre-compiled circuit file (magic {magic!r})")
    if version != VERSION or hbytes != HEADER_BYTES:
        raise PceError(f"{path}: format version {version} (header {hbytes} bytes), this build reads version {VERSION}")
    crc_off = HEADER_BYTES - 4
    (crc,) = struct.unpack_from("<I", head, crc_off)
    if zlib.crc32(head[:crc_off]) != crc:
        raise PceError(f"{path}: header checksum mismatch (corrupted header)")
    nnz = (nnz_a, nnz_b, nnz_c)
    if n_in < 1 or max(n_in + n_aux, k) >= 1 << 32:
        raise PceError(f"{path}: implausible counts (inputs {n_in}, aux {n_aux}, coefficients {k})")
    sections = _layout(n_in, n_aux, m, k, nnz)
    off = _COUNTS.size
    for sname, s_off, s_bytes, _, _ in sections:
        got = _SECTION.unpack_from(head, off)
        off += _SECTION.size
        if got != (s_off, s_bytes):
            raise PceError(f"{path}: section {sname} at {got}, the counts place it at {(s_off, s_bytes)} (corrupted header)")
    hdr = PceHeader(name.rstrip(b"\0").decode("utf-8", "replace"), n_in, n_aux, m, k, nnz, digest.hex(), sections)
    if size != hdr.file_size:
        what = "truncated" if size < hdr.file_size else "unexpected trailing bytes"
        raise PceError(f"{path}: {size} bytes, the header's counts need {hdr.file_size} ({what})")
    return hdr


def _header_bytes(name: str, counts: tuple, digest: bytes, sections) -> bytes:
    raw_name = name.encode()
    if len(raw_name) > 64:
        raise PceError(f"circuit name {name!r} longer than 64 bytes")
    head = bytearray(HEADER_BYTES)
    n_in, n_aux, m, k, nnz = counts
    _COUNTS.pack_into(head, 0, MAGIC, VERSION, HEADER_BYTES, n_in, n_aux, m, k, *nnz, digest, raw_name)
    off = _COUNTS.size
    for _, s_off, s_bytes, _, _ in sections:
        _SECTION.pack_into(head, off, s_off, s_bytes)
        off += _SECTION.size
    struct.pack_into("<I", head, HEADER_BYTES - 4, zlib.crc32(bytes(head[:HEADER_BYTES - 4])))
    return bytes(head)


# -- writing ------------------------------------------------------------------------------------

class PceWriter:
    """Streams a pre-compiled circuit to ``path``: sections in file order, each in as many
    chunks as the caller likes, then :meth:`commit` (header with the digest, fsync, rename).
    Memory stays at one chunk whatever the circuit's size."""

    def __init__(self, path: str | os.PathLike, name: str, *, num_inputs: int, num_aux: int,
                 num_constraints: int, num_coeffs: int, nnz: tuple[int, int, int]):
        self.path = Path(path)
        self.name = name
        self._counts = (num_inputs, num_aux, num_constraints, num_coeffs, (int(nnz[0]), int(nnz[1]), int(nnz[2])))
        self._sections = _layout(num_inputs, num_aux, num_constraints, num_coeffs, self._counts[4])
        self._hash = hashlib.sha256(_counts_bytes(num_inputs, num_aux, num_constraints, num_coeffs, self._counts[4]))
        self._tmp = self.path.with_name(f".{self.path.name}.partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self._tmp, "wb")  # noqa: SIM115 (open until commit() renames it or abort() removes it)
        self._fh.write(b"\0" * HEADER_BYTES)
        self._index = 0
        self._written = 0

    def write(self, section: str, chunk: np.ndarray) -> None:
        """Append ``chunk`` (any shape; its dtype converted to the section's) to ``section``,
        which must be the current section or a later one (those between must be complete:
        empty sections need no write)."""
        names = [s[0] for s in self._sections]
        if section not in names[self._index:]:
            raise PceError(f"{self.path}: section {section} written out of order (at {names[self._index]})")
        while names[self._index] != section:
            self._close_section()
        _, _, nbytes, _, dtype = self._sections[self._index]
        data = np.ascontiguousarray(chunk, dtype=dtype)
        if self._written + data.nbytes > nbytes:
            raise PceError(f"{self.path}: section {section} gets more than its {nbytes} bytes")
        buf = memoryview(data).cast("B")  # type: ignore[arg-type]  # ndarray has the buffer protocol; numpy's stubs declare it only for Python >= 3.12
        self._hash.update(buf)
        self._fh.write(buf)
        self._written += data.nbytes

    def _close_section(self) -> None:
        name, _, nbytes, _, _ = self._sections[self._index]
        if self._written != nbytes:
            raise PceError(f"{self.path}: section {name} got {self._written} of its {nbytes} bytes")
        pad = -nbytes % ALIGN
        if self._index + 1 < len(self._sections):
            self._fh.write(b"\0" * pad)
        self._index += 1
        self._written = 0

    def commit(self) -> str:
        """Finish the file (every section complete) and put it in place; the hex digest."""
        while self._index < len(self._sections):
            self._close_section()
        digest = self._hash.digest()
        self._fh.seek(0)
        self._fh.write(_header_bytes(self.name, self._counts, digest, self._sections))
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        os.replace(self._tmp, self.path)
        _record_verdict(self.path, digest.hex())
        return digest.hex()

    def abort(self) -> None:
        if not self._fh.closed:
            self._fh.close()
        self._tmp.unlink(missing_ok=True)


def save_pce(path: str | os.PathLike, pce: PrecompiledCircuit) -> str:
    """Write an in-memory circuit (tests, small circuits); returns the digest (must equal
    ``pce.digest`` when that is set)."""
    w = PceWriter(path, pce.name, num_inputs=pce.num_inputs, num_aux=pce.num_aux,
                  num_constraints=pce.num_constraints, num_coeffs=pce.coeffs.shape[0],
                  nnz=(pce.a.nnz, pce.b.nnz, pce.c.nnz))
    try:
        for name, _, _ in SECTIONS:
            w.write(name, _section_array(pce, name))
        digest = w.commit()
    except BaseException:
        w.abort()
        raise
    if pce.digest and pce.digest != digest:
        raise PceError(f"{path}: written digest {digest} differs from the circuit's {pce.digest}")
    return digest


def digest_of(pce: PrecompiledCircuit) -> str:
    """The digest the file of ``pce`` carries (counts and arrays in file order)."""
    h = hashlib.sha256(_counts_bytes(pce.num_inputs, pce.num_aux, pce.num_constraints, pce.coeffs.shape[0],
                                     (pce.a.nnz, pce.b.nnz, pce.c.nnz)))
    for name, dtype, _ in SECTIONS:
        h.update(memoryview(np.ascontiguousarray(_section_array(pce, name), dtype=dtype)).cast("B"))  # type: ignore[arg-type]  # ndarray has the buffer protocol; numpy's stubs declare it only for Python >= 3.12
    return h.hexdigest()


def _section_array(pce: PrecompiledCircuit, name: str) -> np.ndarray:
    if "." in name:
        m, field = name.split(".")
        return getattr(getattr(pce, m), field)
    return getattr(pce, name)


# -- loading ------------------------------------------------------------------------------------

def _verdict_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stat_key(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}


def _record_verdict(path: Path, digest: str) -> None:
    side = _verdict_path(path)
    tmp = side.with_name(f".{side.name}.partial")
    tmp.write_text(json.dumps({**_stat_key(path), "digest": digest}))
    os.replace(tmp, side)


def _has_verdict(path: Path, digest: str) -> bool:
    try:
        saved = json.loads(_verdict_path(path).read_text())
    except (OSError, ValueError):
        return False
    return saved == {**_stat_key(path), "digest": digest}


def verify_digest(path: str | os.PathLike, *, chunk_bytes: int = 64 << 20) -> str:
    """Hash every section of ``path`` and compare with its header (PceError on a mismatch);
    records the verdict. Returns the digest."""
    path = Path(path)
    hdr = read_header(path)
    h = hashlib.sha256(_counts_bytes(hdr.num_inputs, hdr.num_aux, hdr.num_constraints, hdr.num_coeffs, hdr.nnz))
    with open(path, "rb") as fh:
        for _, off, nbytes, _, _ in hdr.sections:
            fh.seek(off)
            left = nbytes
            while left:
                buf = fh.read(min(left, chunk_bytes))
                if not buf:
                    raise PceError(f"{path}: truncated while hashing")
                h.update(buf)
                left -= len(buf)
    if h.hexdigest() != hdr.digest:
        raise PceError(f"{path}: contents do not match the header's digest {hdr.digest[:16]}... (corrupted)")
    _record_verdict(path, hdr.digest)
    return hdr.digest


def load_pce(path: str | os.PathLike, *, verify: bool = True, expect_name: str | None = None) -> PrecompiledCircuit:
    """Map ``path`` read-only and view its arrays in place (nothing is copied).

    The header and sizes are checked every time; with ``verify`` the digest too, unless this
    file version was verified before. PceError names the file and the fault."""
    path = Path(path)
    hdr = read_header(path)
    if expect_name is not None and hdr.name != expect_name:
        raise PceError(f"{path}: holds circuit {hdr.name!r}, expected {expect_name!r}")
    if verify and not _has_verdict(path, hdr.digest):
        verify_digest(path)
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    if mm.shape[0] != hdr.file_size:
        raise PceError(f"{path}: changed size while being opened")
    arrays = {name: mm[off:off + nbytes].view(dtype).reshape(shape) for name, off, nbytes, shape, dtype in hdr.sections}
    mats = [CsrMatrix(arrays[f"{m}.row_ptr"], arrays[f"{m}.cols"], arrays[f"{m}.coeff_idx"]) for m in "abc"]
    for m, mat in zip("abc", mats, strict=True):
        if mat.row_ptr[0] != 0 or int(mat.row_ptr[-1]) != mat.nnz:
            raise PceError(f"{path}: {m}.row_ptr spans {int(mat.row_ptr[0])}..{int(mat.row_ptr[-1])}, "
                           f"not 0..{mat.nnz} (corrupted)")
    return PrecompiledCircuit(
        name=hdr.name, num_inputs=hdr.num_inputs, num_aux=hdr.num_aux, num_constraints=hdr.num_constraints,
        coeffs=arrays["coeffs"], a=mats[0], b=mats[1], c=mats[2],
        a_aux_density=arrays["a_aux_density"].view(np.bool_),
        b_input_density=arrays["b_input_density"].view(np.bool_),
        b_aux_density=arrays["b_aux_density"].view(np.bool_),
        digest=hdr.digest,
    )


@dataclass(frozen=True)
class MappedCircuit:
    """A pre-compiled circuit mapped from its file on the host: the circuit handle of a
    WitnessPartition before it reaches a device (a lane swaps in its resident copy)."""

    circuit: PrecompiledCircuit
    path: str
    nbytes: int = 0

    @classmethod
    def open(cls, path: str | os.PathLike, *, expect_digest: str | None = None) -> MappedCircuit:
        pce = load_pce(path)
        if expect_digest is not None and pce.digest != expect_digest:
            raise PceError(f"{path}: digest {pce.digest[:16]}... is not the expected {expect_digest[:16]}... "
                           "(the file changed since the witness was computed)")
        return cls(pce, str(path))

    def release(self) -> None:
        pass
