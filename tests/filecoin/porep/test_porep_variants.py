"""SyntheticPoRep and NI-PoRep: partition counts per variant (porep-variants-facts.md section
2), challenge derivations (section 3) against direct computations and known ChaCha20 vectors,
and the test sealer's variant C1s accepted with the right partitions and public inputs."""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
import pytest

from cuzk_plugin.adapters.curio.porep.c1 import C1Error
from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.filecoin.fixtures import variant_seal as variant_cli
from cuzk_plugin.filecoin.fixtures.variant_seal import (
    VARIANT_PROOFS,
    seal_variant,
    variant_c1_json,
    variant_c1_output,
)
from cuzk_plugin.filecoin.params import porep_params
from cuzk_plugin.filecoin.porep.challenges import (
    NI_TAG,
    chacha20_keystream,
    interactive_challenges,
    ni_challenges,
    synthetic_challenges,
    synthetic_indexes,
)
from cuzk_plugin.filecoin.proofs import seal_proof_by_number
from cuzk_plugin.filecoin.trees import fr_to_bytes

SYNTH, NI = VARIANT_PROOFS


def test_partition_counts_per_variant():
    # porep-variants-facts.md section 2 table: (partitions, challenges per partition)
    for number in range(20):
        proof = seal_proof_by_number(number)
        p = porep_params(proof.sector_size, non_interactive=not proof.interactive)
        big = proof.sector_size >= 32 << 30
        if number >= 15:
            assert (p.partitions, p.challenges_per_partition) == ((126, 18) if big else (13, 2)), proof.name
        else:
            assert (p.partitions, p.challenges_per_partition) == ((10, 18) if big else (1, 2)), proof.name
        assert p.num_public_inputs == (328 if big else 40)  # one circuit (and .params) per size
    kinds = {seal_proof_by_number(n).challenge_kind for n in (3, 8, 13, 18)}
    assert kinds == {"interactive", "synthetic", "non-interactive"}


def test_chacha20_known_answers():
    # RFC 7539 appendix A.1 test vector #1 (all-zero key and nonce, block 0)
    assert chacha20_keystream(bytes(32), bytes(12), 0, 32).hex() == \
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
    # RFC 8439 section 2.3.2 block function vector (key 00..1f, nonce 000000090000004a00000000,
    # counter 1), read as a seek to byte 64 and again from an unaligned offset
    key, nonce = bytes(range(32)), bytes.fromhex("000000090000004a00000000")
    assert chacha20_keystream(key, nonce, 64, 16).hex() == "10f1e7e4d13b5915500fdd1fa32071c4"
    assert chacha20_keystream(key, nonce, 70, 4) == chacha20_keystream(key, nonce, 64, 16)[6:10]


def test_ni_challenges_direct():
    rid, comm_r = bytes(range(32)), bytes(range(32, 64))
    got = ni_challenges(rid, comm_r, 1 << 30, 18, 125)
    j = 18 * 125 + 17
    h = hashlib.sha256(b"filecoin.io|PoRep|1|NonInteractive|1" + rid + comm_r + struct.pack("<I", j)).digest()
    assert len(NI_TAG) == 36 and got[17] == int.from_bytes(h, "little") % ((1 << 30) - 1) + 1
    assert got != interactive_challenges(rid, comm_r, 1 << 30, 18, 125)


def test_synthetic_challenges_direct():
    rid, comm_r, seed = bytes(range(32)), bytes(range(32, 64)), bytes(range(64, 96))
    nodes = 1 << 30
    idx = synthetic_indexes(rid, seed, nodes, 18, 9)
    sel_key = hashlib.blake2b(rid + seed, digest_size=32, key=b"filecoin.io|PoRep|1|Synthetic|1|Selection").digest()
    raw = chacha20_keystream(sel_key, b"synth-porep\x00", 4 * 9 * 18, 4 * 18)
    assert idx == [x % (1 << 18) for x in struct.unpack("<18I", raw)]
    gen_key = hashlib.blake2b(rid + comm_r, digest_size=32, key=b"filecoin.io|PoRep|1|Synthetic|1|Generation").digest()
    got = synthetic_challenges(rid, comm_r, seed, nodes, 18, 9)
    for s, c in zip(idx, got, strict=False):
        block = chacha20_keystream(gen_key, b"synth-porep\x00", 32 * s, 32)
        assert c == int.from_bytes(block, "little") % (nodes - 1) + 1
    # 2 KiB: the synthetic count is the sector's 64 nodes
    assert all(i < 64 for i in synthetic_indexes(rid, seed, 64, 2, 0))


@pytest.fixture(scope="module", params=[SYNTH, NI])
def variant(request):
    s = seal_variant(request.param, miner_id=1000, sector_id=7, data_seed=1)
    return s, variant_c1_json(s)


def test_variant_c1_accepted_with_partitions_and_inputs(variant):
    s, raw = variant
    job = porep_partitions(raw)
    expected_parts = 13 if s.proof.number >= 15 else 1
    assert job.num_partitions == expected_parts and job.circuit_id == "porep-2k"
    for k in range(job.num_partitions):
        inputs = job.public_inputs(k)
        assert len(inputs) == 39 and inputs[:3] == [int.from_bytes(s.replica_id, "little"), s.comm_d, s.comm_r]
        if s.proof.synthetic:
            chs = synthetic_challenges(s.replica_id, fr_to_bytes(s.comm_r), s.seed, 64, 2, k)
        else:
            chs = ni_challenges(s.replica_id, fr_to_bytes(s.comm_r), 64, 2, k)
        # per challenge: comm_d path, 6 DRG + 8 expander parents, challenge, comm_r_last and comm_c paths
        assert [inputs[3 + 18 * i] for i in range(2)] == chs
        assert [inputs[3 + 18 * i + 15] for i in range(2)] == chs


def test_interactive_c1_relabelled_as_a_variant_is_refused(c1_dict):
    # the interactive sector's proofs open the interactive challenges, not the variant's
    for name, kind in ((SYNTH, "synthetic"), (NI, "non-interactive")):
        doc = json.loads(json.dumps(c1_dict))
        doc["registered_proof"] = name
        parts = doc["vanilla_proofs"]["StackedDrg2KiBV1"]
        if kind == "non-interactive":
            doc["vanilla_proofs"]["StackedDrg2KiBV1"] = parts * 13
        with pytest.raises(C1Error, match=rf"labeling_proofs\[0\]\.node: challenge \d+, but the {kind} derivation"):
            porep_partitions(json.dumps(doc).encode())


def test_ni_c1_with_interactive_partition_count_is_refused(variant):
    s, raw = variant
    if s.proof.number < 15:
        pytest.skip("NI only")
    doc = json.loads(raw)
    doc["vanilla_proofs"]["StackedDrg2KiBV1"] = doc["vanilla_proofs"]["StackedDrg2KiBV1"][:1]
    with pytest.raises(C1Error, match=r"1 partitions, StackedDrg2KiBV1_2_Feat_NonInteractivePoRep has 13"):
        porep_partitions(json.dumps(doc).encode())


def test_zero_seed_is_refused(variant):
    _, raw = variant
    doc = json.loads(raw)
    doc["seed"] = [0] * 32
    with pytest.raises(C1Error, match=r"\$\.seed: all zero"):
        porep_partitions(json.dumps(doc).encode())


@pytest.mark.slow
def test_variant_witness_satisfies_every_constraint(variant, porep_2k_pce_cache):
    """The last partition's witness (the fast path, equal to the reference synthesis by
    test_fast_witness) holds on every row of the recorded 2 KiB circuit."""
    from cuzk_plugin.adapters.curio.porep.job import ensure_porep_pce
    from cuzk_plugin.backends.cpu.r1cs_eval import evaluate_r1cs, unsatisfied_rows
    from cuzk_plugin.formats.pce import load_pce

    s, raw = variant
    job = porep_partitions(raw)
    k = job.num_partitions - 1
    inputs, aux = job.assignment(k)  # raises on a path, label or encoding that does not hold
    pce = load_pce(ensure_porep_pce(job.circuit_id, porep_2k_pce_cache))
    assert unsatisfied_rows(*evaluate_r1cs(pce, np.concatenate([inputs, aux]))).size == 0
    assert [int(x) for x in variant_c1_output(s)["comm_r"]] == list(fr_to_bytes(s.comm_r))


def test_cli_writes_a_variant_envelope(tmp_path, capsys):
    out = tmp_path / "c1.json"
    assert variant_cli._main(["--proof", VARIANT_PROOFS[-1], "--envelope", "--sector-id", "12", "--out", str(out)]) == 0
    assert VARIANT_PROOFS[-1] in capsys.readouterr().out
    job = porep_partitions(out.read_bytes())
    assert (job.sector_id, job.params.sector_size) == (12, 2048)
    assert [p.name for p in tmp_path.iterdir()] == ["c1.json"]  # no temporary file left
