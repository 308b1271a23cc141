"""Pre-compiled circuits: recording equals the reference synthesis row for row (memoized
gadgets replayed with constants, negations and repeated variables), the file round-trips
memory-mapped, and a corrupted or truncated file is refused naming its path."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_plugin.bls12_381.fields import limbs_to_objects
from cuzk_plugin.circuit.fast_cs import FastConstraintSystem
from cuzk_plugin.circuit.pce_record import (
    RecordingConstraintSystem,
    precompile_r1cs,
    record_circuit,
)
from cuzk_plugin.filecoin.gadgets.boolean import FALSE, TRUE, alloc_bit
from cuzk_plugin.filecoin.gadgets.num import alloc_num
from cuzk_plugin.filecoin.gadgets.poseidon import poseidon_hash
from cuzk_plugin.filecoin.gadgets.sha256 import sha256_block_no_padding
from cuzk_plugin.formats.pce import (
    PceError,
    load_pce,
    read_header,
    save_pce,
    verify_digest,
)


def gadget_circuit(cs) -> None:
    """Memoized gadgets called with repeated patterns: plain bits, then negated bits, constants
    and one bit used twice (bellpepper merges it within a row), each pattern twice; Poseidon on
    distinct and on repeated numbers; a public input in the middle."""
    bits = [alloc_bit(cs, None) for _ in range(1100)]
    sha256_block_no_padding(cs, bits[:512])
    sha256_block_no_padding(cs, bits[512:1024])
    cs.alloc_input(None)
    for base in (0, 300):
        mixed = [bits[base]] * 2 + [b.not_() for b in bits[base + 2:base + 200]] + [TRUE, FALSE] * 56
        mixed += bits[base + 600:base + 600 + 512 - len(mixed)]
        assert len(mixed) == 512
        sha256_block_no_padding(cs, mixed)
    nums = [alloc_num(cs, None) for _ in range(6)]
    poseidon_hash(cs, nums[:2])
    poseidon_hash(cs, nums[2:4])
    poseidon_hash(cs, [nums[4], nums[4]])
    poseidon_hash(cs, [nums[5], nums[5]])
    poseidon_hash(cs, nums[:8][:6] + nums[:2])


def reference_rows(synthesize) -> tuple:
    cs = FastConstraintSystem()
    synthesize(cs)
    r1cs, _, _ = cs.finish()
    return r1cs


def assert_same_rows(pce, r1cs) -> None:
    full = r1cs.with_input_constraints()
    assert (pce.num_inputs, pce.num_aux, pce.num_constraints) == (full.num_inputs, full.num_aux, full.num_constraints)
    coeffs = limbs_to_objects(np.asarray(pce.coeffs))
    for name in "abc":
        ref, mat = getattr(full, name), getattr(pce, name)
        order = np.lexsort((ref.cols, ref.rows))
        rows = np.repeat(np.arange(pce.num_constraints), np.diff(np.asarray(mat.row_ptr).astype(np.int64)))
        assert mat.nnz == ref.rows.size, name
        assert (rows == ref.rows[order]).all(), name
        assert (np.asarray(mat.cols) == ref.cols[order]).all(), name
        assert (coeffs[np.asarray(mat.coeff_idx)] == ref.coeffs[order]).all(), name
    dense = [full.a.column_density(full.num_vars), full.b.column_density(full.num_vars)]
    n = full.num_inputs
    assert (np.asarray(pce.a_aux_density) == dense[0][n:]).all()
    assert (np.asarray(pce.b_input_density) == dense[1][:n]).all()
    assert (np.asarray(pce.b_aux_density) == dense[1][n:]).all()


def test_recorded_gadgets_equal_reference_rows(tmp_path):
    path = tmp_path / "pce-gadgets.pce"
    seen = {}

    def synth(cs):
        gadget_circuit(cs)
        if isinstance(cs, RecordingConstraintSystem):
            seen["replays"], seen["templates"] = cs.memo_hits, cs.templates

    digest = record_circuit(synth, path, "gadgets")
    assert seen["replays"] >= 4 and seen["templates"] >= 4  # the replay path ran
    pce = load_pce(path)
    assert pce.digest == digest and pce.name == "gadgets"
    assert_same_rows(pce, reference_rows(gadget_circuit))


def test_small_chunks_give_the_same_file(tmp_path):
    """Spilling every few terms (bounded memory) changes nothing in the file."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = RecordingConstraintSystem(tmp_path / "a", chunk_terms=1 << 20)
    b = RecordingConstraintSystem(tmp_path / "b", chunk_terms=7)
    gadget_circuit(a)
    gadget_circuit(b)
    assert a.finish(tmp_path / "a.pce", "g") == b.finish(tmp_path / "b.pce", "g")
    assert (tmp_path / "a.pce").read_bytes() == (tmp_path / "b.pce").read_bytes()


def _small(tmp_path):
    from tests.conformance.test_r1cs_eval import random_circuit

    r1cs, _ = random_circuit(np.random.default_rng(5), 200, 4, 150)
    pce = precompile_r1cs(r1cs, "small")
    path = tmp_path / "pce-small.pce"
    save_pce(path, pce)
    return pce, path


def test_round_trip_is_memory_mapped_and_equal(tmp_path):
    pce, path = _small(tmp_path)
    got = load_pce(path)
    assert isinstance(got.a.cols.base, np.memmap) or isinstance(got.a.cols, np.memmap)
    assert got.digest == pce.digest
    for name in "abc":
        for field in ("row_ptr", "cols", "coeff_idx"):
            assert (getattr(getattr(got, name), field) == getattr(getattr(pce, name), field)).all()
    assert (got.coeffs == pce.coeffs).all() and (got.b_aux_density == pce.b_aux_density).all()
    assert all(off % 64 == 0 for _, off, _, _, _ in read_header(path).sections)


def test_corrupted_byte_is_detected_by_the_digest(tmp_path):
    _, path = _small(tmp_path)
    load_pce(path)  # verified once (verdict recorded)
    hdr = read_header(path)
    _, off, nbytes, _, _ = next(s for s in hdr.sections if s[0] == "b.cols")
    raw = bytearray(path.read_bytes())
    raw[off + nbytes // 2] ^= 0x10
    path.write_bytes(bytes(raw))
    with pytest.raises(PceError, match=str(path)) as err:
        load_pce(path)
    assert "digest" in str(err.value)
    with pytest.raises(PceError):
        verify_digest(path)


@pytest.mark.parametrize("cut", [100, 5000, -1])
def test_truncated_file_is_refused(tmp_path, cut):
    _, path = _small(tmp_path)
    raw = path.read_bytes()
    path.write_bytes(raw[:cut])
    with pytest.raises(PceError, match=r"truncated|shorter") as err:
        load_pce(path)
    assert str(path) in str(err.value)


def test_corrupted_header_is_refused(tmp_path):
    _, path = _small(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[20] ^= 1  # a count
    path.write_bytes(bytes(raw))
    with pytest.raises(PceError, match="checksum"):
        load_pce(path)


def test_not_a_pce_file(tmp_path):
    path = tmp_path / "x.pce"
    path.write_bytes(b"\0" * 5000)
    with pytest.raises(PceError, match="not a pre-compiled circuit"):
        load_pce(path)


@pytest.mark.slow
def test_porep_8mib_counts_match_the_shape_pass(tmp_path):
    from cuzk_plugin.filecoin.params import porep_params
    from cuzk_plugin.filecoin.porep.circuit import blank_partition, synthesize_partition
    from cuzk_plugin.filecoin.porep.count import count_partition

    params = porep_params("8MiB")
    path = tmp_path / "pce-porep-8m.pce"
    record_circuit(lambda cs: synthesize_partition(cs, params, blank_partition(params)), path, "porep-8m")
    hdr = read_header(path)
    shape = count_partition("8MiB")
    assert (hdr.num_inputs, hdr.num_aux) == (shape.num_inputs, shape.num_aux)
    assert hdr.num_constraints == shape.num_constraints + shape.num_inputs  # + the input rows


def test_circuit_with_an_empty_matrix_round_trips(tmp_path):
    """C without a single term (an empty section in the file) is written and read back."""
    from cuzk_plugin.circuit.r1cs import R1CS, SparseMatrix

    a = SparseMatrix.from_terms([0, 1], [1, 2], [3, 5])
    empty = SparseMatrix.from_terms([], [], [])
    pce = precompile_r1cs(R1CS(2, 1, 2, a, a, empty), "empty-c")
    path = tmp_path / "pce-empty-c.pce"
    save_pce(path, pce)
    got = load_pce(path)
    assert got.c.nnz == 0 and got.digest == pce.digest and (got.a.cols == pce.a.cols).all()


def test_recorded_circuit_with_an_empty_matrix(tmp_path):
    """The recorder writes no chunk at all for a matrix without terms (booleanity only)."""
    def synth(cs):
        for _ in range(3):
            alloc_bit(cs, None)  # (1 - b) * b = 0: C is empty

    path = tmp_path / "pce-bits.pce"
    record_circuit(synth, path, "bits")
    got = load_pce(path)
    assert got.c.nnz == 0 and got.num_constraints == 4
    assert_same_rows(got, reference_rows(synth))


def test_a_recording_removes_spill_dirs_of_dead_recordings_only(tmp_path):
    """Issue 28 item 13b: a kill -9 during `cuzk pce extract` left its spill directory (131 MB
    at 32 GiB) for good. A recording first removes those of this host's dead processes, and
    never one of a live process or of another host (a param cache on shared storage)."""
    import os
    import socket
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(done.stdout)
    host = socket.gethostname()
    path = tmp_path / "pce-gadgets.pce"
    dirs = {
        "dead": tmp_path / f".{path.name}.{host}.{dead}.spill-x1",
        "live": tmp_path / f".{path.name}.{host}.{os.getpid()}.spill-x2",
        "other host": tmp_path / f".{path.name}.elsewhere.{dead}.spill-x3",
        "other circuit": tmp_path / f".pce-other.pce.{host}.{dead}.spill-x4",
    }
    for d in dirs.values():
        d.mkdir()
        (d / "a.rows").write_bytes(b"\0" * 4096)
    record_circuit(gadget_circuit, path, "gadgets")
    assert {k for k, d in dirs.items() if d.exists()} == {"live", "other host", "other circuit"}
    assert sorted(p.name for p in tmp_path.iterdir() if ".spill-" in p.name) == sorted(
        d.name for k, d in dirs.items() if k != "dead")  # and the recording's own is gone
