"""The PoSt test-data tool: sparse test-fixture sets at any size (post_seal --sparse) must be
valid PoSt vanilla proofs, each for its own sector id and comm_r."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import struct

import pytest

from cuzk_plugin.adapters.curio.post.job import PostJob, PostRequestError
from cuzk_plugin.circuit.fast_cs import FastConstraintSystem
from cuzk_plugin.filecoin.fixtures.post_seal import (
    _main,
    parse_sector_size,
    post_test_sectors,
    post_vanilla_proofs,
    random_randomness,
)
from cuzk_plugin.filecoin.poseidon import poseidon_hash
from cuzk_plugin.filecoin.post.circuit import blank_slots, synthesize_post
from cuzk_plugin.filecoin.post.params import post_proof_by_number

KIB2, MIB8, GIB32 = 2 << 10, 8 << 20, 32 << 30


def _leaf(randomness: bytes, sector_id: int, n: int, leaves: int) -> int:
    """generate_leaf_challenge written out (V1_2 Window / Winning: the index is n)."""
    h = hashlib.sha256(randomness + struct.pack("<QQ", sector_id, n)).digest()
    return int.from_bytes(h[:8], "little") % leaves


def _tool(tmp_path, *args: str) -> tuple[list[bytes], bytes, list[str]]:
    """Run the tool; (the vanilla proofs it wrote, the randomness of its command line, its lines)."""
    out = tmp_path / "post.json"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert _main([*args, "--out", str(out)]) == 0
    lines = buf.getvalue().splitlines()
    rand = bytes.fromhex(lines[-1].split("--randomness ")[1].split()[0])
    return [base64.b64decode(v) for v in json.loads(out.read_text())], rand, lines


@pytest.mark.parametrize("name, size, number", [
    ("2KiB", KIB2, 10),  # StackedDrgWindow2KiBV1_1
    pytest.param("8MiB", MIB8, 11, marks=pytest.mark.slow),  # 64,266 constraints: ~10 s of blank synthesis
])
def test_sparse_window_set_satisfies_the_circuit(tmp_path, name, size, number):
    """Two sector numbers (a small partition's capacity) from one sparse tree: decoded and
    checked as the daemon checks them, challenges as the verifier derives them, and the
    vectorized witness satisfies every constraint of the blank circuit the key is made from."""
    blobs, rand, lines = _tool(tmp_path, "--kind", "window", "--sector-size", name, "--sparse",
                               "--sectors", "2", "--first-sector", "77", "--seed", "5")
    assert f"--registered-proof {number}" in lines[-1]
    job = PostJob.from_fields(number, rand, blobs)
    assert [s.sector_id for s in job.sectors] == [77, 78]
    assert job.sectors[0].comm_r != job.sectors[1].comm_r
    for s in job.sectors:
        sp = s.sectors[0]
        assert s.comm_r == poseidon_hash([sp.comm_c, sp.comm_r_last])
        assert [m.leaf_index for m in sp.inclusion_proofs] == [_leaf(rand, s.sector_id, n, size // 32) for n in range(10)]
    inputs, aux = job.assignment()
    cs = FastConstraintSystem()
    synthesize_post(cs, job.shape, blank_slots(job.shape))
    r1cs, _, _ = cs.finish()
    assert r1cs.first_unsatisfied(r1cs.assignment(inputs, aux)) is None
    # and a wrong sector number in the set is refused: the challenges are the sector's own
    bad = bytearray(blobs[1])
    bad[0:8] = struct.pack("<Q", 79)
    with pytest.raises(PostRequestError):
        PostJob.from_fields(number, rand, [blobs[0], bytes(bad)])


def test_sparse_32gib_window_sectors_each_open_their_own_challenges():
    """Forty 32 GiB sectors share one tree: every proof opens its own sector's leaves and
    passes the daemon's checks (roots, comm_r, challenged leaves); swapping two ids fails."""
    proof = post_proof_by_number(13)
    ids = list(range(1000, 1040))
    sectors = post_test_sectors(GIB32, ids, seed=1)
    assert len({ps.sector.comm_r for ps in sectors}) == 40
    assert len({ps.sector.tree_r_last.root for ps in sectors}) == 1
    rand = random_randomness(3)
    blobs = post_vanilla_proofs(proof, sectors, rand)
    job = PostJob.from_fields(13, rand, blobs)
    assert len(job.slots) == 2349 and len(job.public_inputs) == 2349 * 11
    for s in job.sectors:
        assert [m.leaf_index for m in s.sectors[0].inclusion_proofs] == [_leaf(rand, s.sector_id, n, GIB32 // 32)
                                                                        for n in range(10)]
    swapped = list(blobs)
    swapped[0], swapped[1] = blobs[0][:8] + blobs[1][8:], blobs[1][:8] + blobs[0][8:]  # ids kept, bodies swapped
    with pytest.raises(PostRequestError):
        PostJob.from_fields(13, rand, swapped)


def test_sparse_winning_and_refusals(tmp_path):
    blobs, rand, lines = _tool(tmp_path, "--kind", "winning", "--sector-size", "2KiB", "--sparse", "--first-sector", "9")
    assert "-t winning" in lines[-1] and "--registered-proof 0" in lines[-1]
    job = PostJob.from_fields(0, rand, blobs)
    assert [s.sector_id for s in job.sectors] == [9] and len(job.slots) == 66
    for argv in (["--kind", "window", "--sector-size", "32GiB", "--sectors", "1"],  # not sparse
                 ["--kind", "window", "--sector-size", "8MiB", "--sparse", "--sectors", "3"],  # over a partition
                 ["--kind", "winning", "--sector-size", "8MiB", "--sparse", "--registered-proof", "3"]):  # 32 GiB id
        with pytest.raises(SystemExit):
            _main([*argv, "--out", str(tmp_path / "x.json")])
    assert parse_sector_size("32gib") == GIB32 and parse_sector_size(str(MIB8)) == MIB8
    with pytest.raises(ValueError, match="'1GiB'"):
        parse_sector_size("1GiB")
    with pytest.raises(ValueError, match="repeat"):
        post_test_sectors(MIB8, [1, 1])
