"""`CudaBackend`: the backend protocol on an NVIDIA GPU through ``libcuzk_cuda.so``.

The proving key is uploaded once by :meth:`CudaBackend.load_srs` and stays in GPU memory
until released; :meth:`CudaBackend.prove_start` returns at once: a library thread uploads the
partition (through pinned staging buffers, on its own stream) and then runs the device work
(H, the G1 MSMs, with B in G2 on its own stream). Partitions started back to back overlap: the
next one uploads while the current one computes. :meth:`CudaBackend.prove_finish` waits.

Build the library once with ``python -m cuzk_plugin.backends.cuda.build``;
``CUZK_CUDA_LIBRARY`` points at a library built elsewhere. The library reads no environment:
its one setting, the Pippenger window of :meth:`msm_g1` / :meth:`msm_g2`, is an argument
(``window_bits``). Benchmarks on device-made inputs are :class:`~.bench.CudaBench`'s.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from cuzk_plugin.backends.cuda.library import (
    call,
    load_library,
    u8_ptr,
    u32_ptr,
    u64_ptr,
)
from cuzk_plugin.backends.protocol import CIRCUIT_CHUNK_ROWS, DeviceInfo, ProofSums
from cuzk_plugin.bls12_381.fields import (
    FR_LIMBS,
    R,
    ints_to_limbs,
    less_than_modulus,
    limbs_to_ints,
)
from cuzk_plugin.errors import BackendUnavailable
from cuzk_plugin.formats.params import ProvingKey, SetupSecrets
from cuzk_plugin.formats.partition import SynthesizedPartition, WitnessPartition
from cuzk_plugin.formats.pce import CsrMatrix, PrecompiledCircuit

#: A key's vectors in the library's order (cz_srs_read's ``which``, cz_srs_counts, the bits of
#: a resident mask).
SRS_VECTORS = ("h", "l", "a", "b_g1", "b_g2")
ALL_RESIDENT = (1 << len(SRS_VECTORS)) - 1


def resident_mask(resident: Iterable[str]) -> int:
    """cz_srs_attach's mask: bit i set where vector SRS_VECTORS[i] is in ``resident``."""
    names = set(resident)
    unknown = names - set(SRS_VECTORS)
    if unknown:
        raise ValueError(f"resident vectors: no {sorted(unknown)} (one of {', '.join(SRS_VECTORS)})")
    return sum(1 << i for i, name in enumerate(SRS_VECTORS) if name in names)


def sums_from_limbs(out: np.ndarray) -> ProofSums:
    """The library's 72 uint64 (h, l, a, b_g1 as (2, 6), b_g2 as (2, 2, 6)) as ProofSums."""
    return ProofSums(
        h=out[0:12].reshape(2, 6).copy(),
        l=out[12:24].reshape(2, 6).copy(),
        a=out[24:36].reshape(2, 6).copy(),
        b_g1=out[36:48].reshape(2, 6).copy(),
        b_g2=out[48:72].reshape(2, 2, 6).copy(),
    )


_R_TOP = np.uint64(R >> (64 * (FR_LIMBS - 1)))


def canonical_scalars(scalars: np.ndarray) -> np.ndarray:
    """``(n, 4) uint64`` scalars reduced below r (the kernels' signed windows need k < r)."""
    arr = np.ascontiguousarray(scalars, dtype=np.uint64)
    if arr.ndim != 2 or arr.shape[1] != FR_LIMBS:
        raise ValueError(f"scalars: expected (n, 4) uint64, got {arr.shape}")
    # Only a value whose top limb reaches r's can be >= r: one strided compare over the top limbs
    # (0.16 s for a 32 GiB partition's 130 M values) instead of the full comparison of all four.
    if not (arr[:, FR_LIMBS - 1] >= _R_TOP).any():
        return arr
    big = ~less_than_modulus(arr, R)
    if big.any():
        arr = arr.copy()
        arr[big] = ints_to_limbs([v % R for v in limbs_to_ints(arr[big])])
    return arr


def _contiguous(arr: np.ndarray, shape_tail: tuple[int, ...], what: str) -> np.ndarray:
    out = np.ascontiguousarray(arr, dtype=np.uint64)
    if out.shape[1:] != shape_tail:
        raise ValueError(f"{what}: expected (n, {', '.join(map(str, shape_tail))}) uint64, got {out.shape}")
    return out


@dataclass
class CudaHostSrs:
    """A proving key's vectors in page-locked host memory, in the device's own layout (affine,
    Montgomery): one copy a host, which the keys of every GPU attach to (resident vectors copied
    from it, the others streamed from it during each MSM). It must outlive them."""

    handle: ctypes.c_void_p
    #: Host bytes held.
    nbytes: int
    counts: dict[str, int]
    released: bool = field(default=False)

    def release(self) -> None:
        if not self.released:
            self.released = True
            call("cz_host_srs_free", self.handle)

    def __repr__(self) -> str:
        return f"CudaHostSrs(nbytes={self.nbytes}, released={self.released})"


@dataclass
class CudaSrs:
    """A proving key as one GPU proves with it: each vector resident in its memory, or streamed
    from a :class:`CudaHostSrs` (``host``) in chunks of ``stream_chunk`` points."""

    handle: ctypes.c_void_p
    #: Device bytes of the resident vectors.
    nbytes: int
    device: int
    released: bool = field(default=False)
    #: The host copy streamed vectors come from (kept alive by this key), and whether this key
    #: owns it (frees it on release) or shares it with other keys.
    host: CudaHostSrs | None = None
    owns_host: bool = False
    stream_chunk: int = 0
    #: A key made on the device (generate_srs): milliseconds per stage (KEYGEN_TIMINGS) and the
    #: device memory in use before and at the peak of the generation, in bytes.
    keygen_ms: dict[str, float] = field(default_factory=dict)
    keygen_memory: tuple[int, int] = (0, 0)
    #: Made into host memory (generate_srs to_host): host_key hands its copy over.
    made_into_host: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            call("cz_srs_free", self.handle)
            if self.owns_host and self.host is not None:
                self.host.release()

    def __repr__(self) -> str:
        return f"CudaSrs(device={self.device}, nbytes={self.nbytes}, resident={self.resident}, released={self.released})"

    @property
    def resident(self) -> tuple[str, ...]:
        """The vectors resident on the device (the others stream from the host copy)."""
        if self.released:
            return ()
        mask = ctypes.c_uint32(0)
        call("cz_srs_resident_mask", self.handle, ctypes.byref(mask))
        return tuple(name for i, name in enumerate(SRS_VECTORS) if mask.value >> i & 1)

    def counts(self) -> dict[str, int]:
        """Points per vector (h, l, a, b_g1, b_g2)."""
        if self.released:
            raise ValueError("CudaSrs.counts: the SRS has been released")
        out = np.zeros(len(SRS_VECTORS), dtype=np.uint64)
        call("cz_srs_counts", self.handle, u64_ptr(out))
        return dict(zip(SRS_VECTORS, (int(x) for x in out), strict=True))

    def read(self, name: str, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Points ``start:stop`` of vector ``name`` copied back as affine canonical limbs (the
        identity as zeros): G1 ``(n, 2, 6)``, b_g2 ``(n, 2, 2, 6)`` uint64, as
        ProvingKey.vector_limbs gives them. For tests comparing a device key with the host's."""
        if name not in SRS_VECTORS:
            raise ValueError(f"CudaSrs.read: no vector {name!r} (one of {', '.join(SRS_VECTORS)})")
        start, stop, _ = slice(start, stop).indices(self.counts()[name])
        count = max(0, stop - start)
        out = np.zeros((count, 2, 2, 6) if name == "b_g2" else (count, 2, 6), dtype=np.uint64)
        call("cz_srs_read", self.handle, SRS_VECTORS.index(name), start, count, u64_ptr(out))
        return out


@dataclass
class CudaCircuit:
    """A pre-compiled circuit on one GPU (coefficient table in both forms, densities, and the
    matrices, or when ``streamed`` two chunk buffers their rows are copied through from
    page-locked host memory at each evaluation), for :meth:`CudaBackend.evaluate_r1cs` and
    witness partitions."""

    handle: ctypes.c_void_p
    #: Device bytes held.
    nbytes: int
    device: int
    circuit: PrecompiledCircuit
    released: bool = field(default=False)
    #: Page-locked host bytes held (the matrices of a streamed circuit; 0 when resident).
    host_bytes: int = 0
    streamed: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            call("cz_circuit_free", self.handle)

    def __repr__(self) -> str:
        return (f"CudaCircuit({self.circuit.name}, device={self.device}, nbytes={self.nbytes}, "
                f"host_bytes={self.host_bytes}, streamed={self.streamed}, released={self.released})")


def checked_csr(mat: CsrMatrix, what: str, rows: int, num_vars: int, num_coeffs: int) -> tuple[np.ndarray, ...]:
    """The matrix's arrays as the library takes them (contiguous uint64 / uint32 / uint32),
    after checking every bound the kernel relies on; ValueError naming the matrix otherwise."""
    row_ptr = np.ascontiguousarray(mat.row_ptr, dtype=np.uint64)
    cols = np.ascontiguousarray(mat.cols, dtype=np.uint32)
    coeff = np.ascontiguousarray(mat.coeff_idx, dtype=np.uint32)
    if row_ptr.shape != (rows + 1,) or cols.ndim != 1 or coeff.shape != cols.shape:
        raise ValueError(f"circuit matrix {what}: row_ptr must be ({rows + 1},) and cols, coeff_idx (nnz,), got "
                         f"{row_ptr.shape}, {cols.shape}, {coeff.shape}")
    if row_ptr[0] != 0 or row_ptr[-1] != cols.shape[0] or (np.diff(row_ptr.astype(np.int64)) < 0).any():
        raise ValueError(f"circuit matrix {what}: row_ptr must rise from 0 to nnz = {cols.shape[0]}")
    if cols.size and int(cols.max()) >= num_vars:
        raise ValueError(f"circuit matrix {what}: column {int(cols.max())} outside the {num_vars} variables")
    if coeff.size and int(coeff.max()) >= num_coeffs:
        raise ValueError(f"circuit matrix {what}: coefficient index {int(coeff.max())} outside the table of {num_coeffs}")
    return row_ptr, cols, coeff


def load_circuit_into(context: ctypes.c_void_p, pce: PrecompiledCircuit, lib: ctypes.CDLL | None = None, *,
                      streamed: bool = False, chunk_rows: int = CIRCUIT_CHUNK_ROWS) -> tuple[ctypes.c_void_p, int, int]:
    """cz_circuit_load of ``pce`` on ``context`` (of ``lib``, by default the production library)
    after checking its arrays, resident or ``streamed`` in chunks of ``chunk_rows`` rows; the
    handle, its device bytes and its page-locked host bytes."""
    if chunk_rows < 1:
        raise ValueError(f"circuit {pce.name}: a circuit needs chunks of at least one row, got {chunk_rows}")
    m = pce.num_constraints
    coeffs = np.ascontiguousarray(pce.coeffs, dtype=np.uint64)
    if coeffs.ndim != 2 or coeffs.shape[1] != FR_LIMBS or (coeffs.size and not less_than_modulus(coeffs, R).all()):
        raise ValueError(f"circuit {pce.name}: coefficients must be (k, 4) uint64 canonical (< r)")
    mats = [checked_csr(mat, f"{what} of {pce.name}", m, pce.num_vars, coeffs.shape[0])
            for what, mat in (("A", pce.a), ("B", pce.b), ("C", pce.c))]
    dens = [np.ascontiguousarray(d, dtype=np.uint8) for d in (pce.a_aux_density, pce.b_input_density,
                                                                pce.b_aux_density)]
    if (dens[0].shape, dens[1].shape, dens[2].shape) != ((pce.num_aux,), (pce.num_inputs,), (pce.num_aux,)):
        raise ValueError(f"circuit {pce.name}: densities must have one entry per aux / input variable")
    args = []
    for row_ptr, cols, coeff in mats:
        args += [u64_ptr(row_ptr), u32_ptr(cols), u32_ptr(coeff), cols.shape[0]]
    handle, nbytes, host_bytes = ctypes.c_void_p(), ctypes.c_uint64(0), ctypes.c_uint64(0)
    call("cz_circuit_load", context, m, pce.num_inputs, pce.num_aux, u64_ptr(coeffs), coeffs.shape[0], *args,
         u8_ptr(dens[0]), u8_ptr(dens[1]), u8_ptr(dens[2]), int(streamed), chunk_rows,
         ctypes.byref(handle), ctypes.byref(nbytes), ctypes.byref(host_bytes), lib=lib)
    return handle, nbytes.value, host_bytes.value


#: Keys of CudaPending.timings_ms, in cz_prove_finish's order: device stages, the upload, the
#: wait for the partition computing, a witness partition's R1CS evaluation, how the MSMs ran
#: (1 in turn; pairs of them that still shared the device), whether H was made in two buffers
#: for want of device memory (1; its C evaluation then counts in h, not r1cs), when, one
#: partition in flight, the next one could upload (1: into its room after its G1 MSMs; 2: into
#: room of its own beside its H MSM), the two ends no stage names (a, b, c taken from the pool
#: before the R1CS evaluation, the partition's buffers freed after B in G2), the wait for the
#: upload lock before the upload (the partition ahead still reading its assignment), and the
#: part of g1_msm until the H MSM ended (with L's, where it ran beside).
PROVE_TIMINGS = ("h", "g1_msm", "g2_wait", "total", "upload", "queue", "r1cs", "msm_in_turn", "msm_paired",
                 "h_lean", "upload_handed_on", "abc_alloc", "release", "upload_wait", "h_msm")
#: Keys of CudaSrs.keygen_ms, in cz_srs_generate's order: the Lagrange basis at tau, each matrix's
#: column sums (with the dense checks and the scalars' compaction), each vector's points, total.
KEYGEN_TIMINGS = ("lagrange", "columns_a", "a", "columns_b", "b_g1", "b_g2", "columns_c", "l", "h", "total")


@dataclass
class CudaPending:
    """A partition whose device work is running; holds the host arrays the library reads.

    ``lock`` orders :meth:`CudaBackend.prove_cancel` against the freeing of ``handle`` (by
    cz_prove_finish): a cancel after that is a no-op, never a call on freed memory."""

    handle: ctypes.c_void_p
    keep_alive: tuple
    timings_ms: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    freed: bool = False


class CudaBackend:
    """Groth16 MSMs, NTTs and whole partitions on a CUDA GPU."""

    name = "cuda"

    def __init__(self, device: int = 0, window_bits: int = 0):
        self.device = device
        #: Pippenger window in bits; 0 lets the library choose by size.
        self.window_bits = window_bits
        self._contexts: dict[int, ctypes.c_void_p] = {}
        #: Lanes of several GPUs (and workers of one) touch their device's context first at once.
        self._contexts_lock = threading.Lock()

    @classmethod
    def probe(cls) -> str | None:
        """None when the library loads and sees a GPU, else why not (never raises)."""
        try:
            lib = load_library()
            count = ctypes.c_int(0)
            status = lib.cz_device_count(ctypes.byref(count))
        except BackendUnavailable as exc:
            return str(exc)
        except Exception as exc:  # a broken library must not break backend selection
            return f"CUDA library unusable: {exc}"
        if status.code != 0:
            return f"no usable CUDA device: {status.message.decode(errors='replace')}"
        if count.value == 0:
            return "no CUDA device present"
        status = lib.cz_device_check(0)  # this build has code for the card (fat binary or PTX)
        if status.code != 0:
            return status.message.decode(errors="replace")
        return None

    def __repr__(self) -> str:
        return f"CudaBackend(device={self.device}, window_bits={self.window_bits})"

    def context(self, device: int | None = None) -> ctypes.c_void_p:
        dev = self.device if device is None else device
        with self._contexts_lock:
            if dev not in self._contexts:
                handle = ctypes.c_void_p()
                call("cz_context_create", dev, ctypes.byref(handle))
                self._contexts[dev] = handle
            return self._contexts[dev]

    def close(self) -> None:
        """Free the per-device contexts (streams, cached NTT tables)."""
        while self._contexts:
            _, handle = self._contexts.popitem()
            call("cz_context_destroy", handle)

    def pin_host(self, address: int, nbytes: int) -> None:
        """Page-lock a host range for every device (the engine's recycled partition blocks):
        uploads from it skip the staging copy. Once per range, until :meth:`unpin_host`."""
        call("cz_host_register", ctypes.c_void_p(address), nbytes)

    def unpin_host(self, address: int) -> None:
        """Undo :meth:`pin_host` (before the range is unmapped; nothing may upload from it)."""
        call("cz_host_unregister", ctypes.c_void_p(address))

    def device_memory(self, device: int | None = None) -> tuple[int, int]:
        """(free, total) bytes of the device's memory, as the driver reports them now."""
        free, total = ctypes.c_uint64(0), ctypes.c_uint64(0)
        call("cz_device_memory", self.device if device is None else device, ctypes.byref(free), ctypes.byref(total))
        return free.value, total.value

    def link_bytes_per_s(self, device: int | None = None) -> float:
        """Host -> device bytes a second from page-locked memory on ``device``, measured now (the
        best of 5 copies of 256 MiB, ~30 ms on PCIe 5.0 x16)."""
        out = ctypes.c_double(0.0)
        call("cz_link_bandwidth", self.context(device), 5, ctypes.byref(out))
        return out.value

    def set_memory_limit(self, limit_bytes: int, device: int | None = None) -> None:
        """Keep this process's transient device work under ``limit_bytes`` on ``device`` (0: no
        limit): where the MSMs would not fit side by side under it, they run in turn."""
        call("cz_context_set_memory_limit", self.context(device), int(limit_bytes))

    def set_partitions_in_flight(self, count: int, device: int | None = None) -> None:
        """Partitions on ``device`` at once (1 or 2): 1 where the residency plan has no room for
        a second partition's assignment (the next one uploads once this one has finished)."""
        call("cz_context_set_partitions_in_flight", self.context(device), int(count))

    def devices(self) -> list[DeviceInfo]:
        count = ctypes.c_int(0)
        call("cz_device_count", ctypes.byref(count))
        out = []
        for i in range(count.value):
            name = ctypes.create_string_buffer(256)
            mem, sms = ctypes.c_uint64(0), ctypes.c_int(0)
            call("cz_device_info", i, name, 256, ctypes.byref(mem), ctypes.byref(sms))
            out.append(DeviceInfo(index=i, name=name.value.decode(), memory_bytes=mem.value, kind="gpu"))
        return out

    # -- primitives --------------------------------------------------------------------
    def ntt(self, x: np.ndarray, *, inverse: bool = False, coset: bool = False) -> np.ndarray:
        data = _contiguous(x, (FR_LIMBS,), "ntt input").copy()
        n = data.shape[0]
        if n == 0 or n & (n - 1):
            raise ValueError(f"NTT size must be a power of two, got {n}")
        call("cz_ntt", self.context(), u64_ptr(data), n.bit_length() - 1, int(inverse), int(coset))
        return data

    def quotient_h(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        a, b, c = (_contiguous(v, (FR_LIMBS,), "quotient_h input") for v in (a, b, c))
        m = a.shape[0]
        if b.shape[0] != m or c.shape[0] != m or m == 0:
            raise ValueError("quotient_h: a, b, c must have the same non-zero length")
        n = 1 << max(0, (m - 1).bit_length())
        h = np.zeros((n - 1, FR_LIMBS), dtype=np.uint64)
        call("cz_quotient_h", self.context(), u64_ptr(a), u64_ptr(b), u64_ptr(c), m, u64_ptr(h))
        return h

    def msm_g1(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        return self._msm("cz_msm_g1", _contiguous(bases, (2, 6), "G1 bases"), scalars, (2, 6))

    def msm_g2(self, bases: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        return self._msm("cz_msm_g2", _contiguous(bases, (2, 2, 6), "G2 bases"), scalars, (2, 2, 6))

    def _msm(self, fn: str, bases: np.ndarray, scalars: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray:
        k = canonical_scalars(scalars)
        if bases.shape[0] != k.shape[0]:
            raise ValueError(f"MSM: {bases.shape[0]} bases but {k.shape[0]} scalars")
        out = np.zeros(out_shape, dtype=np.uint64)
        call(fn, self.context(), u64_ptr(bases), u64_ptr(k), k.shape[0], u64_ptr(out), self.window_bits)
        return out

    # -- proving -------------------------------------------------------------------------
    @staticmethod
    def _raw_vectors(key: ProvingKey) -> list:
        args = []
        for name in SRS_VECTORS:
            v = np.ascontiguousarray(getattr(key, name), dtype=np.uint8)
            args += [u8_ptr(v), v.shape[0]]
        return args

    def host_key(self, key: ProvingKey | CudaSrs, device: int | None = None) -> CudaHostSrs:
        """The key's page-locked host copy: from a ProvingKey's raw vectors (converted and checked
        through ``device`` a chunk at a time: the key need not fit it), copied back from a key
        resident on a device (one made there), or handed over by a key made into host memory
        (``generate_srs(to_host=True)``: release that key before the copy)."""
        handle, nbytes = ctypes.c_void_p(), ctypes.c_uint64(0)
        if isinstance(key, CudaSrs):
            if key.released:
                raise ValueError("host_key: the SRS has been released")
            if key.made_into_host and key.owns_host and key.host is not None:
                key.owns_host = False
                return key.host
            counts = key.counts()
            call("cz_host_srs_from_device", key.handle, ctypes.byref(handle), ctypes.byref(nbytes))
        else:
            counts = {name: int(getattr(key, name).shape[0]) for name in SRS_VECTORS}
            call("cz_host_srs_from_raw", self.context(device), *self._raw_vectors(key), ctypes.byref(handle),
                 ctypes.byref(nbytes))
        return CudaHostSrs(handle=handle, nbytes=nbytes.value, counts=counts)

    def load_srs(self, key: ProvingKey | CudaHostSrs, device: int | None = None, *,
                 resident: Iterable[str] | None = None, stream_chunk: int = 1 << 24) -> CudaSrs:
        """The key on ``device``: every vector resident (``resident`` None), or only those named,
        the others streamed from a host copy in chunks of ``stream_chunk`` points. A
        :class:`CudaHostSrs` is shared (it must outlive the key); from a ProvingKey with streamed
        vectors, the key makes and owns a host copy of its own."""
        dev = self.device if device is None else device
        mask = ALL_RESIDENT if resident is None else resident_mask(resident)
        if isinstance(key, ProvingKey) and mask == ALL_RESIDENT:
            handle, nbytes = ctypes.c_void_p(), ctypes.c_uint64(0)
            call("cz_srs_load", self.context(dev), *self._raw_vectors(key), ctypes.byref(handle), ctypes.byref(nbytes))
            return CudaSrs(handle=handle, nbytes=nbytes.value, device=dev)
        owns = isinstance(key, ProvingKey)
        host = self.host_key(key, dev) if isinstance(key, ProvingKey) else key
        if host.released:
            raise ValueError("load_srs: the host copy of the key has been released")
        if stream_chunk < 1:
            raise ValueError(f"load_srs: stream_chunk must be at least 1 point, got {stream_chunk}")
        try:
            handle, nbytes = ctypes.c_void_p(), ctypes.c_uint64(0)
            call("cz_srs_attach", self.context(dev), host.handle, mask, stream_chunk, ctypes.byref(handle),
                 ctypes.byref(nbytes))
        except BaseException:
            if owns:
                host.release()
            raise
        return CudaSrs(handle=handle, nbytes=nbytes.value, device=dev, host=host, owns_host=owns,
                       stream_chunk=stream_chunk)

    def load_circuit(self, pce: PrecompiledCircuit, device: int | None = None, *, streamed: bool = False,
                     chunk_rows: int = CIRCUIT_CHUNK_ROWS) -> CudaCircuit:
        """Copy the circuit to ``device`` until ``release`` (``nbytes`` of GPU memory), or with
        ``streamed`` only its coefficient table and densities, the matrices going to page-locked
        host memory (``host_bytes``) and through the GPU ``chunk_rows`` rows at a time at each
        evaluation (the compact form's chunks, resident or streamed)."""
        dev = self.device if device is None else device
        handle, nbytes, host_bytes = load_circuit_into(self.context(dev), pce, streamed=streamed, chunk_rows=chunk_rows)
        return CudaCircuit(handle=handle, nbytes=nbytes, device=dev, circuit=pce, host_bytes=host_bytes,
                           streamed=streamed)

    @staticmethod
    def _assignment_for(circuit: CudaCircuit, z: np.ndarray, what: str) -> np.ndarray:
        """``z`` reduced below r, refused if the circuit is released or its length is wrong."""
        if circuit.released:
            raise ValueError(f"{what}: the circuit has been released")
        zz = canonical_scalars(z)
        if zz.shape[0] != circuit.circuit.num_vars:
            raise ValueError(f"{what}: circuit {circuit.circuit.name} has {circuit.circuit.num_vars} "
                             f"variables, z has {zz.shape[0]}")
        return zz

    def evaluate_r1cs(self, circuit: CudaCircuit, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        zz = self._assignment_for(circuit, z, "evaluate_r1cs")
        m = circuit.circuit.num_constraints
        a, b, c = (np.zeros((m, FR_LIMBS), dtype=np.uint64) for _ in range(3))
        call("cz_evaluate_r1cs", self.context(circuit.device), circuit.handle, u64_ptr(zz), zz.shape[0], u64_ptr(a),
             u64_ptr(b), u64_ptr(c))
        return a, b, c

    def check_r1cs(self, circuit: CudaCircuit, z: np.ndarray) -> tuple[int, int | None]:
        """(rows where A z * B z != C z, the first of them or None), evaluated and compared on
        the device: a, b, c never cross PCIe (a 32 GiB partition's are 12.5 GB)."""
        zz = self._assignment_for(circuit, z, "check_r1cs")
        out = np.zeros(2, dtype=np.uint64)
        call("cz_check_r1cs", self.context(circuit.device), circuit.handle, u64_ptr(zz), zz.shape[0], u64_ptr(out[:1]),
             u64_ptr(out[1:]))
        count, first = int(out[0]), int(out[1])
        return count, (first if count else None)

    def prove_start(self, srs: CudaSrs, part: SynthesizedPartition | WitnessPartition) -> CudaPending:
        if srs.released:
            raise ValueError("prove_start: the SRS has been released")
        if isinstance(part, WitnessPartition):
            return self._prove_start_witness(srs, part)
        a, b, c = (np.ascontiguousarray(v, dtype=np.uint64) for v in (part.a, part.b, part.c))
        inputs, aux = self._assignment(part)
        dens = [np.ascontiguousarray(d, dtype=np.uint8) for d in
                (part.a_aux_density, part.b_input_density, part.b_aux_density)]
        handle = ctypes.c_void_p()
        call("cz_prove_start", self.context(srs.device), srs.handle, u64_ptr(a), u64_ptr(b), u64_ptr(c),
             part.num_constraints, u64_ptr(inputs), inputs.shape[0], u64_ptr(aux), aux.shape[0],
             u8_ptr(dens[0]), u8_ptr(dens[1]), u8_ptr(dens[2]), ctypes.byref(handle))
        return CudaPending(handle=handle, keep_alive=(a, b, c, inputs, aux, *dens))

    @staticmethod
    def _assignment(part: SynthesizedPartition | WitnessPartition) -> tuple[np.ndarray, np.ndarray]:
        """inputs and aux as the library takes them: (n, 4) uint64, C-contiguous, any value below
        2^256 (the upload reduces z below r on the device; no host pass over the GBs)."""
        return (_contiguous(part.input_assignment, (FR_LIMBS,), "input_assignment"),
                _contiguous(part.aux_assignment, (FR_LIMBS,), "aux_assignment"))

    def _prove_start_witness(self, srs: CudaSrs, part: WitnessPartition) -> CudaPending:
        """a, b, c evaluated on the device from the circuit (resident or streamed), straight into H."""
        circuit = part.circuit
        if not isinstance(circuit, CudaCircuit) or circuit.released:
            raise ValueError(f"prove_start: {circuit!r} is not a live CUDA circuit handle")
        if circuit.device != srs.device:
            raise ValueError(f"prove_start: the circuit is on GPU {circuit.device}, the key on GPU {srs.device}")
        inputs, aux = self._assignment(part)
        handle = ctypes.c_void_p()
        call("cz_prove_start_witness", self.context(srs.device), srs.handle, circuit.handle, u64_ptr(inputs),
             inputs.shape[0], u64_ptr(aux), aux.shape[0], ctypes.byref(handle))
        return CudaPending(handle=handle, keep_alive=(inputs, aux, circuit))

    def prove_finish(self, pending: CudaPending) -> ProofSums:
        """Wait for the partition (ProveCancelled if :meth:`prove_cancel` stopped it)."""
        if pending.freed:
            raise ValueError("prove_finish: this pending proof was already finished")
        call("cz_prove_wait", pending.handle)  # blocks without the lock: a cancel may come meanwhile
        out = np.zeros(72, dtype=np.uint64)
        times = (ctypes.c_double * len(PROVE_TIMINGS))()
        with pending.lock:
            pending.freed = True
            call("cz_prove_finish", pending.handle, u64_ptr(out), times)
        pending.timings_ms = dict(zip(PROVE_TIMINGS, list(times), strict=True))
        return sums_from_limbs(out)

    def prove_cancel(self, pending: CudaPending) -> None:
        """Stop the partition at its next check (between upload chunks, stages and MSM windows,
        or while it waits behind another partition); returns at once. prove_finish then raises
        ProveCancelled once the work already queued on the GPU is done (well under a second).
        Idempotent; a no-op once prove_finish has freed the proof."""
        with pending.lock:
            if not pending.freed:
                call("cz_prove_cancel", pending.handle)

    # -- test keys -----------------------------------------------------------------------
    #: Test keys are made on the GPU (a Lane bounds them by its memory budget alone).
    keygen_on_device = True
    #: generate_srs(to_host=True) moves each vector to host memory as it is made.
    keygen_into_host = True

    def generate_srs(self, circuit: CudaCircuit, secrets: SetupSecrets, *, to_host: bool = False,
                     stream_chunk: int = 1 << 24) -> tuple[CudaSrs, np.ndarray]:
        """A TEST key of the circuit made on its GPU from ``secrets`` (kernels/keygen.cu: the QAP
        at tau through the resident matrices, so never from a streamed circuit; fixed-base
        multiplications), and the input columns' u, v, w at tau ``(num_inputs, 3, 4)`` uint64
        canonical for the verifying key. ``to_host``: each vector moves to page-locked host
        memory as it is made, so the device holds one at a time (a 47 GB key made on an 80 GB
        card); the key streams them all in chunks of ``stream_chunk`` points.
        The handle carries the stage times and the device memory peak (keygen_ms, keygen_memory)."""
        if not isinstance(circuit, CudaCircuit) or circuit.released:
            raise ValueError(f"generate_srs: {circuit!r} is not a live CUDA circuit handle")
        limbs = np.ascontiguousarray(secrets.limbs(), dtype=np.uint64)
        sums = np.zeros((circuit.circuit.num_inputs, 3, FR_LIMBS), dtype=np.uint64)
        handle, nbytes = ctypes.c_void_p(), ctypes.c_uint64(0)
        times = (ctypes.c_double * len(KEYGEN_TIMINGS))()
        memory = np.zeros(2, dtype=np.uint64)
        call("cz_srs_generate", self.context(circuit.device), circuit.handle, u64_ptr(limbs), int(to_host),
             int(stream_chunk), ctypes.byref(handle), ctypes.byref(nbytes), u64_ptr(sums), times, u64_ptr(memory))
        srs = CudaSrs(handle=handle, nbytes=nbytes.value, device=circuit.device,
                      stream_chunk=int(stream_chunk) if to_host else 0,
                      keygen_ms=dict(zip(KEYGEN_TIMINGS, list(times), strict=True)),
                      keygen_memory=(int(memory[0]), int(memory[1])))
        if to_host:  # the key streams from its own host copy, freed with it unless handed over (host_key)
            host, host_bytes = ctypes.c_void_p(), ctypes.c_uint64(0)
            call("cz_srs_take_host", handle, ctypes.byref(host), ctypes.byref(host_bytes))
            srs.host, srs.owns_host = CudaHostSrs(handle=host, nbytes=host_bytes.value, counts=srs.counts()), True
            srs.made_into_host = True
        return srs, sums
