"""R1CS evaluation conformance: a = A z, b = B z, c = C z from a pre-compiled circuit resident on
the backend equal the reference (``R1CS.evaluate`` on Python ints), for random sparse matrices
with Filecoin-like coefficients and values and for the recorded 2 KiB PoRep circuit; a resident
circuit in chunks of rows that do not divide its rows (where the backend lets a caller choose
them) too; a circuit loaded streamed (its rows copied in chunks) gives the resident circuit's
rows exactly."""

from __future__ import annotations

import inspect
import zlib

import numpy as np
import pytest

from cuzk_plugin.backends.protocol import (
    CIRCUIT_CHUNK_ROWS,
    streamed_circuit_device_bytes,
    streamed_coeff_index_bytes,
)
from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, limbs_to_objects
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from cuzk_plugin.circuit.r1cs import R1CS, SparseMatrix
from cuzk_plugin.formats.pce import CsrMatrix, PrecompiledCircuit, load_pce


def _coefficient(rng: np.random.Generator) -> int:
    """+-1 and +-2^k most of the time (bit decompositions, booleanity), sums of powers of two
    (merged terms), and a few arbitrary field elements (Poseidon's constants)."""
    kind = rng.choice(6, p=[0.35, 0.2, 0.2, 0.1, 0.05, 0.1])
    k = int(rng.integers(0, 255))
    if kind == 0:
        return 1
    if kind == 1:
        return R - 1
    if kind == 2:
        return 1 << k
    if kind == 3:
        return R - (1 << k)
    if kind == 4:
        return ((1 << k) + (1 << int(rng.integers(0, 255)))) % R or 1
    return int.from_bytes(rng.bytes(32), "little") % (R - 1) + 1


def _value(rng: np.random.Generator) -> int:
    kind = rng.choice(5, p=[0.35, 0.35, 0.15, 0.1, 0.05])
    return [0, 1, int.from_bytes(rng.bytes(32), "little") % R, R - 1, int(rng.integers(2, 1 << 62))][kind]


def random_circuit(rng: np.random.Generator, m: int, n_in: int, n_aux: int) -> tuple[R1CS, np.ndarray]:
    """An R1CS of m rows over n_in inputs (ONE first) and n_aux aux variables, row lengths
    as in Filecoin (mostly 0-3 terms, some of hundreds), and a Filecoin-like assignment."""
    n = n_in + n_aux
    mats = []
    for _ in range(3):
        lens = rng.choice([0, 1, 2, 3, 8, 300], size=m, p=[0.15, 0.45, 0.2, 0.15, 0.04, 0.01])
        rows, cols, coeffs = [], [], []
        for j, ln in enumerate(lens):
            for col in rng.choice(n, size=min(int(ln), n), replace=False):
                rows.append(j)
                cols.append(int(col))
                coeffs.append(_coefficient(rng))
        mats.append(SparseMatrix.from_terms(rows, cols, coeffs))
    z = [1] + [_value(rng) for _ in range(n - 1)]
    return R1CS(n_in, n_aux, m, *mats), ints_to_limbs(z)


def wide_circuit(rng: np.random.Generator, m: int, n_in: int, n_aux: int, k: int = 70_000) -> tuple[PrecompiledCircuit, np.ndarray]:
    """A pre-compiled circuit of m rows whose coefficient table has k random distinct entries
    (past 2^16 by default: a streamed chunk then carries 32-bit coefficient indices, the
    uint16 ones covering every Filecoin circuit), rows of 0 to 400 terms (ascending distinct
    columns) drawing on the whole table, the last entry included, and a Filecoin-like z."""
    n = n_in + n_aux
    coeffs = rng.integers(0, 1 << 64, size=(k, 4), dtype=np.uint64)
    coeffs[:, 3] = rng.integers(1, R >> 192, size=k, dtype=np.uint64)  # below r, never 0, distinct w.h.p.
    mats = []
    for _ in range(3):
        lens = np.minimum(rng.choice([0, 1, 3, 40, 400], size=m, p=[0.1, 0.3, 0.3, 0.2, 0.1]), n)
        row_ptr = np.zeros(m + 1, np.uint64)
        np.cumsum(lens, out=row_ptr[1:])
        cols = np.concatenate([np.sort(rng.choice(n, size=int(ln), replace=False)) for ln in lens] + [np.zeros(0)])
        cidx = rng.integers(0, k, size=cols.size, dtype=np.uint32)
        cidx[-1:] = k - 1
        mats.append(CsrMatrix(row_ptr, cols.astype(np.uint32), cidx))
    a_used, b_used = np.zeros(n, bool), np.zeros(n, bool)
    a_used[mats[0].cols], b_used[mats[1].cols] = True, True
    pce = PrecompiledCircuit(
        name="wide", num_inputs=n_in, num_aux=n_aux, num_constraints=m, coeffs=coeffs, a=mats[0], b=mats[1],
        c=mats[2], a_aux_density=a_used[n_in:], b_input_density=b_used[:n_in], b_aux_density=b_used[n_in:],
        digest="")
    z = [1] + [_value(rng) for _ in range(n - 1)]
    return pce, ints_to_limbs(z)


def check_evaluation(backend, pce: PrecompiledCircuit, reference: R1CS, z: np.ndarray) -> None:
    handle = backend.load_circuit(pce)
    try:
        got = backend.evaluate_r1cs(handle, z)
    finally:
        handle.release()
    want = reference.with_input_constraints().evaluate(limbs_to_objects(z))
    for name, g, w in zip("abc", got, want, strict=True):
        assert g.dtype == np.uint64 and g.shape == (pce.num_constraints, 4), name
        bad = np.flatnonzero((g != ints_to_limbs(w)).any(axis=1))
        assert bad.size == 0, f"{name}: {bad.size} rows differ, first {bad[:5].tolist()}"


@pytest.mark.parametrize("shape", [(1, 1, 0), (40, 3, 30), (3000, 20, 2500)], ids=["tiny", "small", "medium"])
def test_random_circuits_match_reference(backend, rng, shape):
    r1cs, z = random_circuit(rng, *shape)
    check_evaluation(backend, precompile_r1cs(r1cs, "random"), r1cs, z)


def load_streamed(backend, pce: PrecompiledCircuit, chunk_rows: int):
    """``pce`` loaded streamed, in chunks of ``chunk_rows`` rows where the backend lets a caller
    choose (else its default); the handle and the chunk size asked for. Skips a backend whose
    load_circuit has no streamed mode."""
    params = inspect.signature(backend.load_circuit).parameters
    if "streamed" not in params:
        pytest.skip(f"{backend.name}.load_circuit has no streamed mode")
    if "chunk_rows" not in params:
        return backend.load_circuit(pce, streamed=True), CIRCUIT_CHUNK_ROWS
    return backend.load_circuit(pce, streamed=True, chunk_rows=chunk_rows), chunk_rows


def load_resident(backend, pce: PrecompiledCircuit, chunk_rows: int):
    """``pce`` loaded resident in chunks of ``chunk_rows`` rows; skips a backend whose
    load_circuit does not let a caller choose them."""
    if "chunk_rows" not in inspect.signature(backend.load_circuit).parameters:
        pytest.skip(f"{backend.name}.load_circuit takes no chunk_rows")
    return backend.load_circuit(pce, chunk_rows=chunk_rows)


@pytest.mark.parametrize("chunk_rows", [1, 7, 64], ids=["rows1", "rows7", "rows64"])
def test_resident_circuit_in_chunks_matches_reference(backend, rng, chunk_rows):
    """A resident circuit evaluated chunk by chunk, in chunks of one row, of 7 (not dividing the
    156 rows: 152 and 4 input constraints) and of 64 (the last one short), rows of up to
    hundreds of terms making the chunks' first terms uneven; two evaluations on one handle: the
    reference's rows."""
    r1cs, z = random_circuit(rng, 152, 4, 140)
    pce = precompile_r1cs(r1cs, "resident-chunks")
    assert pce.num_constraints % 7 and pce.num_constraints % 64
    other = z.copy()
    other[1:] = other[:0:-1]  # the same values in another order, ONE still first
    handle = load_resident(backend, pce, chunk_rows)
    try:
        assert not handle.streamed and handle.host_bytes == 0
        gots = [backend.evaluate_r1cs(handle, each) for each in (z, other)]
    finally:
        handle.release()
    reference = r1cs.with_input_constraints()
    for which, got, each in (("z", gots[0], z), ("second z", gots[1], other)):
        want = reference.evaluate(limbs_to_objects(each))
        for name, g, w in zip("abc", got, want, strict=True):
            bad = np.flatnonzero((g != ints_to_limbs(w)).any(axis=1))
            assert bad.size == 0, f"{name}, {which}: {bad.size} rows differ, first {bad[:5].tolist()}"


@pytest.mark.parametrize("chunk_rows", [1, 3, 64, 1 << 20], ids=["rows1", "rows3", "rows64", "rows_past_m"])
def test_streamed_circuit_equals_resident_and_reference(backend, rng, chunk_rows):
    """Chunks of one row, of a few, and one chunk larger than the circuit (rows of hundreds of
    terms make the chunks' term counts uneven); two evaluations on the same handle (its chunk
    buffers reused); the device bytes are the protocol's figure, the host bytes the matrices'."""
    r1cs, z = random_circuit(rng, 200, 5, 180)
    pce = precompile_r1cs(r1cs, "streamed")
    resident = backend.load_circuit(pce)
    try:
        want = backend.evaluate_r1cs(resident, z)
    finally:
        resident.release()
    other = z.copy()
    other[1:] = other[:0:-1]  # the same values in another order, ONE still first
    handle, asked = load_streamed(backend, pce, chunk_rows)
    try:
        got = backend.evaluate_r1cs(handle, z)
        got_other = backend.evaluate_r1cs(handle, other)
        if handle.streamed:
            assert handle.nbytes == streamed_circuit_device_bytes(pce, asked)
            assert handle.host_bytes == pce.a.nbytes + pce.b.nbytes + pce.c.nbytes
        else:
            assert handle.host_bytes == 0
    finally:
        handle.release()
    reference = r1cs.with_input_constraints()
    for what, rows, wanted in (
            ("resident", got, want),
            ("reference", got, [ints_to_limbs(w) for w in reference.evaluate(limbs_to_objects(z))]),
            ("reference, second z", got_other, [ints_to_limbs(w) for w in reference.evaluate(limbs_to_objects(other))])):
        for name, g, w in zip("abc", rows, wanted, strict=True):
            bad = np.flatnonzero((g != w).any(axis=1))
            assert bad.size == 0, f"{name} vs {what}: {bad.size} rows differ, first {bad[:5].tolist()}"


@pytest.mark.parametrize("chunk_rows", [7, 1 << 20], ids=["rows7", "rows_past_m"])
def test_resident_circuit_with_a_wide_coefficient_table(backend, rng, chunk_rows):
    """A coefficient table past 2^16 entries (a chunk's coefficient indices 32-bit, not 16)
    resident in chunks of 7 rows (not dividing the 60) or one chunk past the circuit: the
    reference's rows."""
    pce, z = wide_circuit(rng, 60, 3, 500)
    assert streamed_coeff_index_bytes(pce) == 4
    handle = load_resident(backend, pce, chunk_rows)
    try:
        got = backend.evaluate_r1cs(handle, z)
    finally:
        handle.release()
    want = _reference_of(pce).evaluate(limbs_to_objects(z))
    for name, g, w in zip("abc", got, want, strict=True):
        bad = np.flatnonzero((g != ints_to_limbs(w)).any(axis=1))
        assert bad.size == 0, f"{name}: {bad.size} rows differ, first {bad[:5].tolist()}"


@pytest.mark.parametrize("chunk_rows", [7, 1 << 20], ids=["rows7", "rows_past_m"])
def test_streamed_circuit_with_a_wide_coefficient_table(backend, rng, chunk_rows):
    """A coefficient table past 2^16 entries (a streamed chunk's coefficient indices 32-bit, not
    16), rows of up to hundreds of terms, chunks of 7 rows (which do not divide the 60 rows) or
    one past the circuit: the streamed rows are the resident ones and the reference's."""
    pce, z = wide_circuit(rng, 60, 3, 500)
    assert streamed_coeff_index_bytes(pce) == 4 and max(int(m.coeff_idx.max()) for m in (pce.a, pce.b, pce.c)) >= 1 << 16
    resident = backend.load_circuit(pce)
    try:
        want = backend.evaluate_r1cs(resident, z)
    finally:
        resident.release()
    handle, asked = load_streamed(backend, pce, chunk_rows)
    try:
        got = backend.evaluate_r1cs(handle, z)
        if handle.streamed:
            assert handle.nbytes == streamed_circuit_device_bytes(pce, asked)
    finally:
        handle.release()
    reference = [ints_to_limbs(w) for w in _reference_of(pce).evaluate(limbs_to_objects(z))]
    for what, wanted in (("resident", want), ("reference", reference)):
        for name, g, w in zip("abc", got, wanted, strict=True):
            bad = np.flatnonzero((g != w).any(axis=1))
            assert bad.size == 0, f"{name} vs {what}: {bad.size} rows differ, first {bad[:5].tolist()}"


def test_row_sums_that_wrap_many_times(backend, rng):
    """Long rows of r - 1 times r - 1 (each term 1) and of r - 1 times large values: the sums
    exceed r many times over and must still reduce exactly."""
    n = 600
    rows = np.repeat(np.arange(3), n)
    cols = np.tile(np.arange(n), 3)
    coeffs = [R - 1] * n + [R - 1] * n + [int.from_bytes(rng.bytes(32), "little") % R for _ in range(n)]
    mat = SparseMatrix.from_terms(rows, cols, coeffs)
    z = ints_to_limbs([1] + [R - 1] * (n - 1))
    r1cs = R1CS(1, n - 1, 3, mat, mat, SparseMatrix.from_terms([], [], []))
    check_evaluation(backend, precompile_r1cs(r1cs, "wrap"), r1cs, z)


def test_refuses_a_witness_of_the_wrong_length(backend, rng):
    r1cs, z = random_circuit(rng, 10, 2, 10)
    handle = backend.load_circuit(precompile_r1cs(r1cs, "short"))
    try:
        with pytest.raises(ValueError):
            backend.evaluate_r1cs(handle, z[:-1])
    finally:
        handle.release()


def _reference_of(pce: PrecompiledCircuit) -> R1CS:
    """The circuit's rows (input constraints included) as a reference R1CS on Python ints."""
    coeffs = limbs_to_objects(np.asarray(pce.coeffs))
    mats = []
    for mat in (pce.a, pce.b, pce.c):
        rows = np.repeat(np.arange(pce.num_constraints), np.diff(np.asarray(mat.row_ptr).astype(np.int64)))
        mats.append(SparseMatrix(rows, np.asarray(mat.cols).astype(np.int64), coeffs[np.asarray(mat.coeff_idx)]))
    return R1CS(pce.num_inputs, pce.num_aux, pce.num_constraints, *mats)


@pytest.fixture(scope="module")
def porep_2k_case(porep_2k_pce_cache, session_seed):
    """The recorded 2 KiB PoRep circuit, a Filecoin-like z drawn from the session seed, and the
    reference a, b, c of it as limbs: ~10 s of Python-int work, made once for every backend."""
    from cuzk_plugin.adapters.curio.porep.job import ensure_porep_pce

    pce = load_pce(ensure_porep_pce("porep-2k", porep_2k_pce_cache))
    rng = np.random.default_rng(session_seed ^ zlib.crc32(b"recorded porep-2k"))
    kinds = rng.choice(4, size=pce.num_vars, p=[0.45, 0.45, 0.08, 0.02])
    values = np.zeros((pce.num_vars, 4), np.uint64)
    values[kinds == 1, 0] = 1
    big = np.flatnonzero(kinds >= 2)
    values[big] = ints_to_limbs([int.from_bytes(rng.bytes(32), "little") % R for _ in big])
    values[0] = (1, 0, 0, 0)
    want = _reference_of(pce).evaluate(limbs_to_objects(values))
    return pce, values, [ints_to_limbs(w) for w in want]


@pytest.mark.slow
def test_recorded_porep_2k_circuit_matches_reference(backend, seed, porep_2k_case):
    # seed: reports the session seed (CUZK_TEST_SEED) that draws porep_2k_case's z on a failure
    pce, values, want = porep_2k_case
    handle = backend.load_circuit(pce)
    try:
        got = backend.evaluate_r1cs(handle, values)
    finally:
        handle.release()
    for name, g, w in zip("abc", got, want, strict=True):
        bad = np.flatnonzero((g != w).any(axis=1))
        assert bad.size == 0, f"{name}: {bad.size} rows differ, first {bad[:5].tolist()}"


def test_unsatisfied_rows_finds_exactly_the_broken_rows(rng):
    """The host check used on evaluated a, b, c (bits compared, the rest multiplied)."""
    from cuzk_plugin.backends.cpu.r1cs_eval import unsatisfied_rows

    n = 5000
    vals = [_value(rng) for _ in range(3 * n)]
    a, b = vals[:n], vals[n:2 * n]
    c = [x * y % R for x, y in zip(a, b, strict=True)]
    broken = sorted({int(j) for j in rng.choice(n, 40, replace=False)})
    for j in broken:
        c[j] = (c[j] + 1 + j) % R
    got = unsatisfied_rows(ints_to_limbs(a), ints_to_limbs(b), ints_to_limbs(c), chunk=1000)
    assert got.tolist() == broken
