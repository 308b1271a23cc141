"""Recording a circuit's R1CS into a pre-compiled circuit file, in bounded memory.

:class:`RecordingConstraintSystem` has the interface gadgets use (``alloc``, ``alloc_input``,
``enforce``, ``memoized``) and writes every row to spill files as it goes: Python buffers hold
at most ``chunk_terms`` terms, so a 130 M-constraint partition records in a few hundred MB.
Rows come out exactly as :class:`~cuzk_plugin.circuit.fast_cs.FastConstraintSystem` followed by
``finish`` and ``R1CS.with_input_constraints`` give them: per row the linear combination's
terms with non-zero coefficients (mod r), columns ascending (inputs, then aux).

Repeated gadgets (a SHA-256 compression, a Poseidon hash) call ``memoized(name, fn, inputs)``.
The first call with an input *pattern* runs ``fn`` and keeps its rows as a template whose
columns are relative: ONE, the k-th input position, or the j-th aux variable the gadget
allocated. The pattern is what changes the rows: which inputs are constants (and their value),
which are negated, and which positions share one variable (a linear combination merges a
variable that appears twice: bellpepper's xor of a bit with itself is a different row). Later
calls with the same pattern replay the template in numpy, mapping positions onto the caller's
variables and the gadget's aux onto fresh ones, and re-sorting a row's columns where the
caller's variables come in another order.

While recording, an aux column is its index with bit 31 set (inputs are allocated during
synthesis, so their final count is unknown until the end); :meth:`finish` maps it to
``num_inputs + index`` when it writes the file.
"""

from __future__ import annotations

import copy
import dataclasses
import glob
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cuzk_plugin.bls12_381.fields import R, ints_to_limbs
from cuzk_plugin.circuit.constraint_system import ONE, LinearCombination
from cuzk_plugin.circuit.fast_cs import IntVariable
from cuzk_plugin.circuit.r1cs import R1CS
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.formats.pce import CsrMatrix, PceWriter, PrecompiledCircuit, digest_of

__all__ = ["AUX_FLAG", "RecordingConstraintSystem", "precompile_r1cs", "record_circuit"]

log = logging.getLogger(__name__)

#: Tag of an aux column while recording (cuzk uses the same bit).
AUX_FLAG = 1 << 31
_CODE_MASK = AUX_FLAG - 1
_NOT_REPLAYABLE = object()


def _code(v) -> int:
    """Recording column code of a variable: inputs as is, aux flagged."""
    if v is ONE:
        return 0
    if type(v) is IntVariable:
        return int(v) if v >= 0 else AUX_FLAG | ~int(v)
    if getattr(v, "is_input", None) is not None:  # a plain Variable from another system
        return v.index if v.is_input else AUX_FLAG | v.index
    raise CircuitError(f"not a variable of this constraint system: {v!r}")


def _var(code: int) -> IntVariable:
    return IntVariable(~(code & _CODE_MASK)) if code & AUX_FLAG else IntVariable(code)


class _Spill:
    """An append-only on-disk array."""

    def __init__(self, path: Path, dtype):
        self.path = path
        self.dtype = np.dtype(dtype)
        self.fh = open(path, "wb")  # noqa: SIM115 (open for the spill's lifetime; closed by its owner)
        self.count = 0

    def append(self, arr) -> None:
        data = np.ascontiguousarray(arr, dtype=self.dtype)
        data.tofile(self.fh)
        self.count += data.shape[0]

    def read(self, start: int, stop: int) -> np.ndarray:
        self.fh.flush()
        return np.fromfile(self.path, dtype=self.dtype, count=stop - start, offset=start * self.dtype.itemsize)

    def close(self) -> None:
        if not self.fh.closed:
            self.fh.close()


class _Template:
    """A memoized gadget's rows with relative columns (see the module doc)."""

    __slots__ = ("d_aux", "d_cons", "mats", "n_pos", "outputs")

    def __init__(self, d_aux, d_cons, mats, outputs, n_pos):
        self.d_aux = d_aux
        self.d_cons = d_cons
        #: per matrix: (row_len (d_cons,) u32, rel_col (nnz,) u32, coeff_idx (nnz,) u32)
        self.mats = mats
        #: per output: ("c", proto) | ("new", j, negated, proto) | ("in", pos, relative negation, proto)
        self.outputs = outputs
        self.n_pos = n_pos


class RecordingConstraintSystem:
    """Records A, B, C row by row into spill files under ``workdir`` (see the module doc).
    Values are never computed: gadgets see a shape-only system."""

    one = ONE

    def __init__(self, workdir: str | os.PathLike, *, chunk_terms: int = 1 << 20,
                 progress: Callable[[int], None] | None = None, progress_every: int = 1 << 20):
        self.workdir = Path(workdir)
        self.num_inputs = 1  # ONE
        self.num_aux = 0
        self._num_constraints = 0
        self._coeff_index: dict[int, int] = {}
        self._coeffs: list[int] = []
        self._chunk_terms = chunk_terms
        self._buffered = 0
        # per matrix: flat cols, flat coeff indices, row lengths (Python lists until a flush)
        self._buf: tuple[tuple[list[int], list[int], list[int]], ...] = tuple(([], [], []) for _ in range(3))
        self._spills = tuple(
            (_Spill(self.workdir / f"{m}.cols", "<u4"), _Spill(self.workdir / f"{m}.cidx", "<u4"),
             _Spill(self.workdir / f"{m}.rowptr", "<u8"))
            for m in "abc"
        )
        for _, _, rp in self._spills:
            rp.append(np.zeros(1, np.uint64))
        self._memo: dict = {}
        self._depth = 0
        self.memo_hits = 0
        self.templates = 0
        self._progress = progress
        self._progress_every = progress_every
        self._next_progress = progress_every

    # -- the gadget interface -------------------------------------------------------------------
    def alloc(self, value=None) -> IntVariable:
        self.num_aux += 1
        return IntVariable(~(self.num_aux - 1))

    def alloc_input(self, value=None) -> IntVariable:
        self.num_inputs += 1
        return IntVariable(self.num_inputs - 1)

    def value(self, lc) -> None:
        return None

    @property
    def num_constraints(self) -> int:
        return self._num_constraints

    def _intern(self, k: int) -> int:
        idx = self._coeff_index.get(k)
        if idx is None:
            idx = self._coeff_index[k] = len(self._coeffs)
            self._coeffs.append(k)
        return idx

    def enforce(self, a, b, c) -> None:
        n = 0
        for (cols, cidx, lens), lc in zip(self._buf, (a, b, c)):  # noqa: B905 (hot path: strict= costs ~0.2 us a call; three matrices, three LCs)
            terms = lc.terms if type(lc) is LinearCombination else LinearCombination.of(lc).terms
            row = []
            for v, k in terms.items():
                k %= R
                if k:
                    row.append((_code(v), k))
            if len(row) > 1:
                row.sort()
            for code, k in row:
                cols.append(code)
                cidx.append(self._intern(k))
            lens.append(len(row))
            n += len(row)
        self._num_constraints += 1
        self._buffered += n + 1
        if self._buffered >= self._chunk_terms:
            self._flush()

    def _flush(self) -> None:
        for (cols, cidx, lens), (s_cols, s_cidx, s_rp) in zip(self._buf, self._spills, strict=True):
            if lens:
                ends = np.cumsum(np.asarray(lens, dtype=np.uint64)) + np.uint64(s_cols.count)
                s_cols.append(np.asarray(cols, dtype=np.uint32))
                s_cidx.append(np.asarray(cidx, dtype=np.uint32))
                s_rp.append(ends)
                cols.clear()
                cidx.clear()
                lens.clear()
        self._buffered = 0
        if self._progress is not None and self._num_constraints >= self._next_progress:
            self._next_progress = self._num_constraints + self._progress_every
            self._progress(self._num_constraints)

    # -- memoized gadgets -----------------------------------------------------------------------
    @staticmethod
    def _pattern(inputs: list) -> tuple[tuple, list[int]]:
        """(pattern key, column code per position: 0 for a constant)."""
        sig: list[str | tuple[str, int]] = []
        codes: list[int] = []
        first: dict[int, int] = {}
        for pos, x in enumerate(inputs):
            var = x.var
            if var is None:
                sig.append("T" if x.value else "F")
                codes.append(0)
                continue
            code = _code(var)
            codes.append(code)
            kind = "N" if getattr(x, "negated", False) else ("I" if hasattr(x, "negated") else "n")
            p = first.setdefault(code, pos)
            sig.append(kind if p == pos else (kind, p))
        return tuple(sig), codes

    def memoized(self, name: str, fn, inputs: list):
        """``fn(cs, inputs) -> outputs`` (Booleans / allocated numbers) recorded once per input
        pattern and replayed from its template afterwards (see the module doc)."""
        if self._depth:
            return fn(self, inputs)
        sig, codes = self._pattern(inputs)
        key = (name, sig)
        tmpl = self._memo.get(key)
        if tmpl is _NOT_REPLAYABLE:
            return fn(self, inputs)
        if tmpl is None:
            return self._record(key, fn, inputs, codes)
        self.memo_hits += 1
        return self._replay(tmpl, inputs, codes)

    def _record(self, key, fn, inputs, codes):
        self._flush()
        aux0, in0, c0 = self.num_aux, self.num_inputs, self._num_constraints
        starts = [(s_cols.count, s_rp.count) for s_cols, _, s_rp in self._spills]
        self._depth += 1
        try:
            outputs = fn(self, inputs)
        finally:
            self._depth -= 1
        self._flush()
        if self.num_inputs != in0:
            self._memo[key] = _NOT_REPLAYABLE  # allocates public inputs: never replayed
            return outputs
        n_pos = len(inputs)
        where: dict[int, int] = {}
        for pos, code in enumerate(codes):
            if code:
                where.setdefault(code, pos)
        mats = []
        for (s_cols, s_cidx, s_rp), (nnz0, rp0) in zip(self._spills, starts, strict=True):
            cols = s_cols.read(nnz0, s_cols.count)
            cidx = s_cidx.read(nnz0, s_cidx.count)
            ends = s_rp.read(rp0, s_rp.count)
            row_len = np.diff(np.concatenate([[nnz0], ends]).astype(np.int64)).astype(np.uint32)
            rel = np.empty(cols.shape[0], np.uint32)
            is_new = (cols & AUX_FLAG).astype(bool) & ((cols & _CODE_MASK) >= aux0)
            rel[is_new] = 1 + n_pos + ((cols[is_new] & _CODE_MASK) - aux0)
            old = ~is_new
            old_codes = cols[old]
            uniq, inverse = np.unique(old_codes, return_inverse=True)
            rel_uniq = np.zeros(uniq.shape[0], np.uint32)  # ONE (code 0): relative column 0
            for i, code in enumerate(uniq.tolist()):
                if code == 0:
                    continue
                at = where.get(code)
                if at is None:  # a variable the gadget did not get through its inputs
                    self._memo[key] = _NOT_REPLAYABLE
                    return outputs
                rel_uniq[i] = 1 + at
            rel[old] = rel_uniq[inverse]
            mats.append((row_len, rel, cidx.copy()))
        spec: list[tuple] = []
        for out in outputs:
            if out.var is None:
                spec.append(("c", out))
                continue
            code = _code(out.var)
            neg = getattr(out, "negated", False)
            if code & AUX_FLAG and (code & _CODE_MASK) >= aux0:
                spec.append(("new", (code & _CODE_MASK) - aux0, neg, out))
            elif code in where:
                pos = where[code]
                spec.append(("in", pos, neg != getattr(inputs[pos], "negated", False), out))
            else:
                self._memo[key] = _NOT_REPLAYABLE
                return outputs
        self._memo[key] = _Template(self.num_aux - aux0, self._num_constraints - c0, mats, spec, n_pos)
        self.templates += 1
        return outputs

    def _replay(self, t: _Template, inputs, codes):
        self._flush()
        base = self.num_aux
        table = np.empty(1 + t.n_pos + t.d_aux, np.uint32)
        table[0] = 0
        table[1:1 + t.n_pos] = codes
        table[1 + t.n_pos:] = AUX_FLAG | (base + np.arange(t.d_aux, dtype=np.uint32))
        for (row_len, rel, cidx), (s_cols, s_cidx, s_rp) in zip(t.mats, self._spills, strict=True):
            cols = table[rel]
            if cols.shape[0] > 1:
                rows = np.repeat(np.arange(row_len.shape[0], dtype=np.uint64), row_len)
                key = (rows << np.uint64(32)) | cols.astype(np.uint64)
                if not (key[1:] > key[:-1]).all():
                    order = np.argsort(key, kind="stable")
                    cols, cidx = cols[order], cidx[order]
            ends = np.cumsum(row_len, dtype=np.uint64) + np.uint64(s_cols.count)
            s_cols.append(cols)
            s_cidx.append(cidx)
            s_rp.append(ends)
        self.num_aux += t.d_aux
        self._num_constraints += t.d_cons
        outputs = []
        for item in t.outputs:
            if item[0] == "c":
                outputs.append(item[1])
            elif item[0] == "new":
                _, j, neg, proto = item
                outputs.append(_rebuild(proto, IntVariable(~(base + j)), neg))
            else:
                _, pos, rel_neg, proto = item
                src = inputs[pos]
                if hasattr(src, "negated"):
                    outputs.append(_rebuild(proto, src.var, src.negated != rel_neg))
                else:
                    outputs.append(src)
        if self._progress is not None and self._num_constraints >= self._next_progress:
            self._flush()
        return outputs

    # -- the file -------------------------------------------------------------------------------
    def finish(self, path: str | os.PathLike, name: str, *, chunk_terms: int = 1 << 24) -> str:
        """Append the ``x_i * 0 = 0`` input rows, write ``path`` (remapping aux columns, computing
        densities and the digest on the way) and return the digest."""
        n_in = self.num_inputs
        self._flush()
        a_cols, a_cidx, a_rp = self._spills[0]
        one = self._intern(1)
        a_cols.append(np.arange(n_in, dtype=np.uint32))
        a_cidx.append(np.full(n_in, one, np.uint32))
        a_rp.append(np.uint64(a_cols.count - n_in) + np.arange(1, n_in + 1, dtype=np.uint64))
        for s_cols, _, s_rp in self._spills[1:]:
            s_rp.append(np.full(n_in, s_cols.count, np.uint64))
        m = self._num_constraints + n_in
        for s in self._spills:
            for sp in s:
                sp.fh.flush()
        nnz_a, nnz_b, nnz_c = (s_cols.count for s_cols, _, _ in self._spills)
        writer = PceWriter(path, name, num_inputs=n_in, num_aux=self.num_aux, num_constraints=m,
                           num_coeffs=len(self._coeffs), nnz=(nnz_a, nnz_b, nnz_c))
        try:
            writer.write("coeffs", ints_to_limbs(self._coeffs))
            dens = {}
            for mname, (s_cols, s_cidx, s_rp) in zip("abc", self._spills, strict=True):
                if s_rp.count != m + 1:
                    raise CircuitError(f"recording: {mname} has {s_rp.count - 1} rows, expected {m}")
                # chunked reads, not a mapping: resident memory stays at one chunk
                for lo in range(0, s_rp.count, chunk_terms):
                    writer.write(f"{mname}.row_ptr", s_rp.read(lo, min(lo + chunk_terms, s_rp.count)))
                seen = np.zeros(n_in + self.num_aux, dtype=bool)
                for lo in range(0, s_cols.count, chunk_terms):
                    raw = s_cols.read(lo, min(lo + chunk_terms, s_cols.count))
                    flagged = (raw & AUX_FLAG).astype(bool)
                    out = np.where(flagged, (raw & _CODE_MASK) + np.uint32(n_in), raw).astype(np.uint32)
                    seen[out] = True
                    writer.write(f"{mname}.cols", out)
                for lo in range(0, s_cidx.count, chunk_terms):
                    writer.write(f"{mname}.coeff_idx", s_cidx.read(lo, min(lo + chunk_terms, s_cidx.count)))
                dens[mname] = seen
            writer.write("a_aux_density", dens["a"][n_in:])
            writer.write("b_input_density", dens["b"][:n_in])
            writer.write("b_aux_density", dens["b"][n_in:])
            return writer.commit()
        except BaseException:
            writer.abort()
            raise

    def close(self) -> None:
        for s in self._spills:
            for sp in s:
                sp.close()


def _rebuild(proto, var, negated: bool):
    """A gadget output like ``proto`` (a Boolean or an allocated number) on ``var``."""
    obj = copy.copy(proto)
    obj.var = var
    obj.value = None
    if hasattr(proto, "negated"):
        obj.negated = negated
    return obj


def _spill_prefix(name: str, pid: int) -> str:
    """The name a recording's spill directory starts with: the host and process that own it."""
    return f".{name}.{socket.gethostname()}.{pid}.spill-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def remove_stale_spill_dirs(directory: Path, name: str) -> list[Path]:
    """Remove the spill directories of recordings of ``name`` whose process died (a kill -9
    during ``cuzk pce extract`` left 131 MB for good): only ours (this host's, by their name),
    only those whose owner pid is gone. The removed paths."""
    host_part = f".{name}.{socket.gethostname()}."
    removed = []
    for entry in directory.glob(f"{glob.escape(host_part)}*.spill-*"):
        pid_text = entry.name[len(host_part):].partition(".spill-")[0]
        if not entry.is_dir() or not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        size = sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
        shutil.rmtree(entry, ignore_errors=True)
        log.warning("pce %s: removed %s, left by recording process %s that died (%.1f MB)", name, entry, pid_text,
                    size / 1e6)
        removed.append(entry)
    return removed


def record_circuit(synthesize: Callable[[RecordingConstraintSystem], None], path: str | os.PathLike, name: str,
                   *, progress: Callable[[int], None] | None = None, workdir: str | os.PathLike | None = None) -> str:
    """Record the circuit ``synthesize(cs)`` builds into the pre-compiled circuit file ``path``
    (spill files in a temporary directory beside it, removed afterwards); returns the digest."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    spill_root = Path(workdir or path.parent)
    remove_stale_spill_dirs(spill_root, path.name)
    tmpdir = Path(tempfile.mkdtemp(prefix=_spill_prefix(path.name, os.getpid()), dir=spill_root))
    cs = RecordingConstraintSystem(tmpdir, progress=progress)
    try:
        t0 = time.perf_counter()
        synthesize(cs)
        t1 = time.perf_counter()
        digest = cs.finish(path, name)
        log.info("pce %s: %d constraints, %d inputs, %d aux recorded in %.1fs (%d templates, %d replays), "
                 "written in %.1fs", name, cs.num_constraints, cs.num_inputs, cs.num_aux, t1 - t0,
                 cs.templates, cs.memo_hits, time.perf_counter() - t1)
        return digest
    finally:
        cs.close()
        shutil.rmtree(tmpdir, ignore_errors=True)


def precompile_r1cs(r1cs: R1CS, name: str) -> PrecompiledCircuit:
    """An in-memory pre-compiled circuit of ``r1cs`` (input constraints appended), for small
    circuits and tests; the same rows as recording the circuit gives."""
    full = r1cs.with_input_constraints()
    m, n_in = full.num_constraints, full.num_inputs
    values = sorted({int(v) for mat in (full.a, full.b, full.c) for v in mat.coeffs})
    index = {v: i for i, v in enumerate(values)}
    mats, dense = [], []
    for mat in (full.a, full.b, full.c):
        order = np.lexsort((mat.cols, mat.rows))
        rows, cols = mat.rows[order], mat.cols[order]
        row_ptr = np.zeros(m + 1, np.uint64)
        np.cumsum(np.bincount(rows, minlength=m), out=row_ptr[1:])
        cidx = np.array([index[int(v)] for v in mat.coeffs[order]], dtype=np.uint32)
        mats.append(CsrMatrix(row_ptr, cols.astype(np.uint32), cidx))
        dense.append(mat.column_density(full.num_vars))
    pce = PrecompiledCircuit(
        name=name, num_inputs=n_in, num_aux=full.num_aux, num_constraints=m,
        coeffs=ints_to_limbs(values).reshape(-1, 4), a=mats[0], b=mats[1], c=mats[2],
        a_aux_density=dense[0][n_in:], b_input_density=dense[1][:n_in], b_aux_density=dense[1][n_in:], digest="",
    )
    return dataclasses.replace(pce, digest=digest_of(pce))
