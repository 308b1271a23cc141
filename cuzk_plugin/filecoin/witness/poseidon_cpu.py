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
import itertools
import logging
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs, limbs_to_objects
from cuzk_plugin.filecoin.poseidon import constants
from cuzk_plugin.filecoin.witness.poseidon import poseidon_many, poseidon_num_aux

__all__ = ["NativePoseidon", "native_poseidon"]

log = logging.getLogger(__name__)

_SOURCE = Path(__file__).with_name("poseidon_cpu.c")
_FLAGS = ["-O3", "-shared", "-fPIC", "-std=c11"]
_MONT = 1 << 256
_MIN_CHUNK = 2048  #: hashes a thread takes at least (~40 ms)


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
    p64 = ctypes.POINTER(ctypes.c_uint64)
    for fn in (lib.cz_poseidon_many, lib.cz_poseidon_many_ifma):
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, p64, p64, p64, p64, p64, p64,
                       ctypes.c_int64, p64, p64, ctypes.POINTER(ctypes.c_int64), p64]
        fn.restype = ctypes.c_int
    lib.cz_has_ifma.argtypes, lib.cz_has_ifma.restype = [], ctypes.c_int
    return lib


def _mont(values) -> np.ndarray:
    """Montgomery form for the 64-bit path: (n, 4) limbs of v * 2^256 mod r."""
    return ints_to_limbs([int(v) * _MONT % R for v in values])


def _mont52(values) -> np.ndarray:
    """Montgomery form for the IFMA path: (n, 5) 52-bit limbs of v * 2^260 mod r."""
    m = [int(v) * (1 << 260) % R for v in values]
    return np.array([[(x >> (52 * j)) & ((1 << 52) - 1) for j in range(5)] for x in m], dtype=np.uint64)


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
        digest to ``digest[k]`` ((n, 4) uint64). Large batches are split over a thread a core."""
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
        if n == 0:
            return
        if offs.min() < 0 or offs.max() + FR_LIMBS * self.num_aux > aux.size:
            raise ValueError("an aux offset puts the hash's aux outside the array")
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        threads = max(1, min(cores, n // _MIN_CHUNK))
        bounds = [n * k // threads for k in range(threads + 1)]
        runs = [(a, b) for a, b in itertools.pairwise(bounds) if b > a]
        if len(runs) == 1:
            self._run(preimage, aux, offs, digest)
            return
        # ctypes lets go of the GIL during the call; each run writes its own instances' rows
        with ThreadPoolExecutor(len(runs)) as pool:
            list(pool.map(lambda ab: self._run(preimage[ab[0]:ab[1]], aux, offs[ab[0]:ab[1]], digest[ab[0]:ab[1]]), runs))

    def _run(self, preimage: np.ndarray, aux: np.ndarray, offs: np.ndarray, digest: np.ndarray) -> None:
        p64 = ctypes.POINTER(ctypes.c_uint64)
        full, partial, *consts = self._args
        rc = self._fn(self.arity, full, partial, *[c.ctypes.data_as(p64) for c in consts], preimage.shape[0],  # type: ignore[operator]
                      preimage.ctypes.data_as(p64), aux.ctypes.data_as(p64),
                      offs.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), digest.ctypes.data_as(p64))
        if rc:
            raise ValueError(f"the C Poseidon does not take arity {self.arity}")


@cache
def native_poseidon(arity: int, ifma: bool = True) -> NativePoseidon | None:
    """The C Poseidon of ``arity`` (MerkleTree domain tag), or None where it cannot be built:
    eight hashes at a time with AVX-512 IFMA where the CPU has it (and ``ifma``), else one at a
    time on 64-bit limbs."""
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
    if ifma and lib.cz_has_ifma():
        fn, form = lib.cz_poseidon_many_ifma, _mont52
    else:
        fn, form = lib.cz_poseidon_many, _mont
    args = (c.full_rounds, c.partial_rounds, *(form(v) for v in ([s0], keys, mds, pre, w_hat, v_rest)))
    return NativePoseidon(arity, poseidon_num_aux(arity), fn, args)


def poseidon_into(arity: int, preimage: np.ndarray, aux: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Hash ``preimage`` (n, arity, 4) canonical limbs (MerkleTree tag); instance k's aux go to
    the flat uint64 index ``offsets[k]`` of ``aux`` (C-contiguous) on. Returns the digests
    (n, 4). The C hash where it builds, else the numpy one over Python ints."""
    n = preimage.shape[0]
    digest = np.empty((n, FR_LIMBS), dtype=np.uint64)
    native = native_poseidon(arity)
    if native is not None:
        native.hash_into(np.ascontiguousarray(preimage), aux, offsets, digest)
        return digest
    h_aux, dig = poseidon_many(limbs_to_objects(preimage.reshape(-1, FR_LIMBS)).reshape(n, arity).T.copy())
    rows = offsets[:, None] + FR_LIMBS * np.arange(h_aux.shape[0], dtype=np.int64)  # (n, num_aux)
    flat, values = aux.reshape(-1), ints_to_limbs(h_aux.T.reshape(-1)).reshape(n, h_aux.shape[0], FR_LIMBS)
    for limb in range(FR_LIMBS):
        flat[rows + limb] = values[..., limb]
    digest[:] = ints_to_limbs(dig)
    return digest
