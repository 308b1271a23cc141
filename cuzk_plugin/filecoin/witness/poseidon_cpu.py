"""Poseidon hashes with their circuit aux, in C on the CPU (``poseidon_cpu.c``), for many
preimages at once: the same values as :func:`.poseidon.poseidon_many`, written as canonical
uint64 limbs straight into an assignment array.

A Python-int Poseidon costs ~0.7 ms a hash (a 32 GiB WindowPoSt partition hashes 235k
arity-8 nodes); the C loop ~20 us. The library is compiled on first use with the system C
compiler (``$CC``, else ``cc``) into ``$CUZK_NATIVE_DIR`` (default ``~/.cache/cuzk-plugin/native``),
named by the digest of its source and flags, written to a temporary file and renamed. Where no
compiler works, :func:`native_poseidon` returns None and callers use the numpy path.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs
from cuzk_plugin.filecoin.poseidon import constants
from cuzk_plugin.filecoin.witness.poseidon import poseidon_num_aux

__all__ = ["NativePoseidon", "native_poseidon"]

log = logging.getLogger(__name__)

_SOURCE = Path(__file__).with_name("poseidon_cpu.c")
_FLAGS = ["-O3", "-shared", "-fPIC", "-std=c11"]
_MONT = 1 << 256


def _build_dir() -> Path:
    env = os.environ.get("CUZK_NATIVE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "cuzk-plugin" / "native"


def _compile(compiler: str, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.stem + ".", suffix=".so.tmp", dir=out.parent)
    os.close(fd)
    try:
        subprocess.run([compiler, *_FLAGS, "-o", tmp, str(_SOURCE)], check=True, capture_output=True, text=True)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@cache
def _library() -> ctypes.CDLL | None:
    compiler = shutil.which(os.environ.get("CC", "cc"))
    source = _SOURCE.read_bytes()
    tag = hashlib.sha256(source + " ".join(_FLAGS).encode()).hexdigest()[:16]
    path = _build_dir() / f"poseidon_cpu-{tag}.so"
    try:
        if not path.exists():
            if compiler is None:
                log.warning("no C compiler (CC / cc): Poseidon witnesses use the numpy path (~35x slower)")
                return None
            _compile(compiler, path)
        lib = ctypes.CDLL(str(path))
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        log.warning("building %s failed, Poseidon witnesses use the numpy path (~35x slower): %s", path, detail)
        return None
    fn = lib.cz_poseidon_many
    p64 = ctypes.POINTER(ctypes.c_uint64)
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, p64, p64, p64, p64, p64, p64,
                   ctypes.c_int64, p64, p64, ctypes.POINTER(ctypes.c_int64), p64]
    fn.restype = ctypes.c_int
    return lib


def _mont(values) -> np.ndarray:
    return ints_to_limbs([int(v) * _MONT % R for v in values])


@dataclass(frozen=True)
class NativePoseidon:
    """The C hash of one arity, its constants in Montgomery form."""

    arity: int
    num_aux: int
    _fn: object
    _args: tuple  #: full rounds, partial rounds, then the constant arrays (kept alive here)

    def hash_into(self, preimage: np.ndarray, aux: np.ndarray, aux_offset: np.ndarray, digest: np.ndarray) -> None:
        """Hash ``preimage`` (n, arity, 4) uint64 canonical: instance k's aux go to ``aux`` (a
        C-contiguous uint64 array, any shape) from flat uint64 index ``aux_offset[k]`` on, its
        digest to ``digest[k]`` ((n, 4) uint64)."""
        n = preimage.shape[0]
        if preimage.shape != (n, self.arity, FR_LIMBS) or preimage.dtype != np.uint64 or not preimage.flags.c_contiguous:
            raise ValueError(f"preimage must be C-contiguous ({n}, {self.arity}, {FR_LIMBS}) uint64")
        if digest.shape != (n, FR_LIMBS) or digest.dtype != np.uint64 or not digest.flags.c_contiguous:
            raise ValueError(f"digest must be C-contiguous ({n}, {FR_LIMBS}) uint64")
        if aux.dtype != np.uint64 or not aux.flags.c_contiguous:
            raise ValueError("aux must be a C-contiguous uint64 array")
        offs = np.ascontiguousarray(aux_offset, dtype=np.int64)
        if offs.shape != (n,):
            raise ValueError(f"aux_offset must be ({n},)")
        if n and (offs.min() < 0 or offs.max() + FR_LIMBS * self.num_aux > aux.size):
            raise ValueError("an aux offset puts the hash's aux outside the array")
        if n == 0:
            return
        p64 = ctypes.POINTER(ctypes.c_uint64)
        full, partial, *consts = self._args
        rc = self._fn(self.arity, full, partial, *[c.ctypes.data_as(p64) for c in consts], n,  # type: ignore[operator]
                      preimage.ctypes.data_as(p64), aux.ctypes.data_as(p64),
                      offs.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), digest.ctypes.data_as(p64))
        if rc:
            raise ValueError(f"the C Poseidon does not take arity {self.arity}")


@cache
def native_poseidon(arity: int) -> NativePoseidon | None:
    """The C Poseidon of ``arity`` (MerkleTree domain tag), or None where it cannot be built."""
    lib = _library()
    if lib is None:
        return None
    c = constants(arity)
    t = c.width
    keys = [int(k) for k in c.compressed_round_constants]
    s0 = (pow((c.domain_tag + keys[0]) % R, 5, R) + keys[t]) % R
    mds = [int(c.mds[i][j]) for j in range(t) for i in range(t)]  # row j: the coefficients of new[j]
    pre = [int(c.pre_sparse_matrix[i][j]) for j in range(t) for i in range(t)]
    w_hat = [int(x) for sm in c.sparse_matrices for x in sm.w_hat]
    v_rest = [int(x) for sm in c.sparse_matrices for x in sm.v_rest]
    if len(c.sparse_matrices) != c.partial_rounds or len(w_hat) != t * c.partial_rounds:
        raise ValueError(f"arity {arity}: the sparse matrices do not match the partial rounds")
    args = (c.full_rounds, c.partial_rounds, _mont([s0]), _mont(keys), _mont(mds), _mont(pre), _mont(w_hat), _mont(v_rest))
    return NativePoseidon(arity, poseidon_num_aux(arity), lib.cz_poseidon_many, args)
