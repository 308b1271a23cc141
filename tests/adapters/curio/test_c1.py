"""Curio C1 models and registered proofs: our sealer's C1 parses; malformed or inconsistent
C1s are refused with the JSON path of the bad field."""

from __future__ import annotations

import base64
import json

import pytest

from cuzk_plugin.adapters.curio.porep.c1 import C1EnvelopeHeader, C1Error, curio_envelope, parse_c1, plain_envelope
from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.filecoin.proofs import SEAL_PROOFS, prover_id_from_miner, replica_id, seal_proof_by_name, seal_proof_by_number
from cuzk_plugin.filecoin.trees import fr_to_bytes

V1 = "StackedDrg2KiBV1"


def test_registered_seal_proofs():
    assert len(SEAL_PROOFS) == 20
    assert seal_proof_by_number(3).name == "StackedDrg32GiBV1"
    p = seal_proof_by_number(8)
    assert (p.name, p.sector_size, p.api_version, p.v1_name) == ("StackedDrg32GiBV1_1", 32 << 30, "1.1.0", "StackedDrg32GiBV1")
    assert seal_proof_by_number(17).name == "StackedDrg512MiBV1_2_Feat_NonInteractivePoRep"
    assert seal_proof_by_number(17).go_name == "StackedDrg512MiBV1_2_Feat_NiPoRep"
    assert seal_proof_by_name("StackedDrg64GiBV1_1_Feat_SyntheticPoRep").number == 14
    assert seal_proof_by_number(5).porep_id == bytes([5]) + bytes(31)
    with pytest.raises(ValueError):
        seal_proof_by_number(20)


def test_prover_id_is_leb128():
    assert prover_id_from_miner(1000)[:3] == bytes([0xE8, 0x07, 0x00])
    assert prover_id_from_miner(128)[:3] == bytes([0x80, 0x01, 0x00])
    assert prover_id_from_miner(5) == bytes([5]) + bytes(31)


def test_sealer_c1_parses_and_is_consistent(sealed, c1_bytes):
    c1 = parse_c1(c1_bytes)
    assert c1.registered_proof == "StackedDrg2KiBV1_1"
    assert list(c1.vanilla_proofs) == [V1]
    assert len(c1.partitions) == 1 and len(c1.partitions[0]) == 2
    vp = c1.partitions[0][0]
    assert vp.comm_d_proofs.data.variant == "Single"
    assert len(vp.labeling_proofs) == 2 and len(vp.replica_column_proofs.exp_parents) == 8
    rid = replica_id(prover_id_from_miner(1000), 7, bytes(c1.ticket), bytes(c1.comm_d), sealed.proof.porep_id)
    assert rid == bytes(c1.replica_id)
    job = porep_partitions(c1_bytes)
    assert job.num_partitions == 1 and job.circuit_id == "porep-2k"
    inputs = job.public_inputs(0)
    assert len(inputs) == 3 + 18 * 2
    assert inputs[:3] == [int.from_bytes(bytes(c1.replica_id), "little"), sealed.comm_d, sealed.comm_r]
    ch = inputs[3]
    assert inputs[3 + 15:3 + 18] == [ch, ch, ch]
    assert tuple(inputs[4:10]) == sealed.graph.drg_parents(ch)


def test_envelope(c1_bytes):
    env = json.dumps({"SectorNum": 7, "Phase1Out": base64.b64encode(c1_bytes).decode(), "SectorSize": 2048})
    job = porep_partitions(env.encode())
    assert job.sector_id == 7
    bad = json.dumps({"SectorNum": 7, "Phase1Out": "not base64!", "SectorSize": 2048})
    with pytest.raises(C1Error) as e:
        porep_partitions(bad)
    assert e.value.path == "$.Phase1Out"
    wrong = json.dumps({"SectorNum": 7, "Phase1Out": base64.b64encode(c1_bytes).decode(), "SectorSize": 4096})
    with pytest.raises(C1Error, match=r"\$\.SectorSize"):
        porep_partitions(wrong)


def test_curio_envelope_is_what_curio_sends(c1_bytes):
    """The clients' envelope against one built with the standard library as Curio's Go writes it
    (``json.Marshal`` of the struct, ``[]byte`` as standard base64); both readers take it back."""
    env = curio_envelope(c1_bytes, 7, 2048)
    assert json.loads(env) == {"SectorNum": 7, "Phase1Out": base64.b64encode(c1_bytes).decode(), "SectorSize": 2048}
    assert plain_envelope(env) == (C1EnvelopeHeader(SectorNum=7, SectorSize=2048), c1_bytes)
    assert porep_partitions(env).sector_id == 7
    assert base64.b64decode(json.loads(curio_envelope(b"\xff\xfe\xfd", 1, 2048))["Phase1Out"], validate=True) == b"\xff\xfe\xfd"


def _refused(doc) -> C1Error:
    with pytest.raises(C1Error) as e:
        porep_partitions(json.dumps(doc).encode())
    return e.value


def test_malformed_fields_named(c1_dict):
    doc = json.loads(json.dumps(c1_dict))
    doc["vanilla_proofs"][V1][0][1]["comm_d_proofs"]["data"]["Single"]["path"]["path"][3]["hashes"][0][5] = 256
    err = _refused(doc)
    assert err.path == f"$.vanilla_proofs.{V1}[0][1].comm_d_proofs.data.Single.path.path[3].hashes[0][5]"

    # the lists of 32-byte values are checked a list at a time; a bad item is still named
    col = f"$.vanilla_proofs.{V1}[0][0].replica_column_proofs.drg_parents[1].column.rows"
    for bad, where, message in (([1] * 31, "[1]", "31 bytes, expected 32"),
                                (1 << 40, "[1]", "expected a list"),  # never bytes(2**40): no allocation
                                ([0] * 31 + [-1], "[1][31]", "-1 is not an integer 0..255"),
                                (["7"] * 32, "[1][0]", "'7' is not an integer")):
        doc = json.loads(json.dumps(c1_dict))
        doc["vanilla_proofs"][V1][0][0]["replica_column_proofs"]["drg_parents"][1]["column"]["rows"][1] = bad
        err = _refused(doc)
        assert (err.path, err.message[:len(message)]) == (col + where, message)
    doc = json.loads(json.dumps(c1_dict))
    doc["vanilla_proofs"][V1][0][0]["replica_column_proofs"]["drg_parents"][1]["column"]["rows"] = "00" * 32
    assert _refused(doc).path == col

    doc = json.loads(json.dumps(c1_dict))
    del doc["seed"]
    assert _refused(doc).path == "$.seed"

    doc = json.loads(json.dumps(c1_dict))
    doc["registered_proof"] = "StackedDrg3KiBV1"
    assert _refused(doc).path == "$.registered_proof"

    doc = json.loads(json.dumps(c1_dict))
    doc["vanilla_proofs"] = {"StackedDrg32GiBV1": doc["vanilla_proofs"][V1]}
    assert _refused(doc).path == "$.vanilla_proofs"

    doc = json.loads(json.dumps(c1_dict))
    doc["vanilla_proofs"][V1][0][0]["comm_r_last_proof"]["data"]["Sub"] = {}
    assert _refused(doc).path.startswith(f"$.vanilla_proofs.{V1}[0][0].comm_r_last_proof.data")


def test_inconsistent_fields_named(c1_dict):
    base = f"$.vanilla_proofs.{V1}[0]"
    doc = json.loads(json.dumps(c1_dict))
    doc["vanilla_proofs"][V1][0][1]["labeling_proofs"][0]["node"] += 1
    assert _refused(doc).path == f"{base}[1].labeling_proofs[0].node"

    doc = json.loads(json.dumps(c1_dict))
    doc["vanilla_proofs"][V1][0][0]["replica_column_proofs"]["drg_parents"].pop()
    assert _refused(doc).path == f"{base}[0].replica_column_proofs.drg_parents"

    doc = json.loads(json.dumps(c1_dict))
    doc["vanilla_proofs"][V1][0][0]["replica_column_proofs"]["exp_parents"][2]["column"]["rows"].pop()
    assert _refused(doc).path == f"{base}[0].replica_column_proofs.exp_parents[2].column.rows"

    doc = json.loads(json.dumps(c1_dict))
    doc["vanilla_proofs"][V1][0][0]["comm_r_last_proof"]["data"]["Single"]["path"]["path"][0]["hashes"].pop()
    assert _refused(doc).path == f"{base}[0].comm_r_last_proof.data.Single.path.path[0].hashes"

    doc = json.loads(json.dumps(c1_dict))
    doc["vanilla_proofs"][V1][0][1]["comm_d_proofs"]["data"]["Single"]["path"]["path"][4]["index"] = 2
    assert _refused(doc).path == f"{base}[1].comm_d_proofs.data.Single.path.path[4].index"

    doc = json.loads(json.dumps(c1_dict))
    doc["comm_r"] = list(fr_to_bytes(12345))
    assert _refused(doc).path == "$.comm_r"

    doc = json.loads(json.dumps(c1_dict))
    doc["replica_id"] = [255] * 32
    assert _refused(doc).path == "$.replica_id"

    doc = json.loads(json.dumps(c1_dict))
    doc["vanilla_proofs"][V1][0].pop()
    assert _refused(doc).path == f"{base}"


def test_engine_provider_plans_partitions(c1_bytes, tmp_path, monkeypatch):
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(tmp_path / "fil"))
    import pickle

    from cuzk_plugin.adapters.curio.porep.provider import PorepCircuitProvider, PorepKeyGenerator
    from cuzk_plugin.engine.errors import InvalidRequest
    from cuzk_plugin.engine.types import ProofKind, ProofRequest

    env = json.dumps({"SectorNum": 7, "Phase1Out": base64.b64encode(c1_bytes).decode(), "SectorSize": 2048})
    provider = PorepCircuitProvider(allow_test_keys=True)  # no Filecoin file here: the 2 KiB test key
    plan = provider.plan(ProofRequest("r", ProofKind.POREP_SEAL_COMMIT, vanilla_proof=env.encode()), tmp_path)
    assert plan.circuit_id == "porep-2k-test-key" and len(plan.tasks) == 1
    assert pickle.loads(pickle.dumps(plan.tasks[0])) == plan.tasks[0]
    doc = json.loads(c1_bytes)
    doc["seed"][0] = 300
    bad = json.dumps({"SectorNum": 7, "Phase1Out": base64.b64encode(json.dumps(doc).encode()).decode(), "SectorSize": 2048})
    with pytest.raises(InvalidRequest, match=r"^vanilla_proof\.Phase1Out\.seed\[0\]: "):
        provider.plan(ProofRequest("r", ProofKind.POREP_SEAL_COMMIT, vanilla_proof=bad.encode()), tmp_path)
    src = provider.key_source("porep-2k-test-key", tmp_path)
    assert isinstance(src.generate, PorepKeyGenerator) and src.test_key
    assert provider.key_source("synthetic-k4", tmp_path) is None


def test_test_key_generators_declare_their_size():
    """The engine bounds key generation by [srs] max_generated_log2 before it starts: the 2 KiB PoRep
    test key (2,687,921 constraints + 40 input rows) and the 2 KiB update key declare their domains."""
    from pathlib import Path

    from cuzk_plugin.adapters.curio.porep.provider import PorepKeyGenerator
    from cuzk_plugin.adapters.curio.snap.provider import SnapKeyGenerator

    assert PorepKeyGenerator("2KiB", Path("unused")).log2_constraints == 22
    assert SnapKeyGenerator(2 << 10, Path("unused")).log2_constraints == 21


def test_bench_builds_the_envelope_once(c1_bytes, tmp_path):
    """cuzk-bench wraps a bare C1 as Curio does, once per file (a 32 GiB one takes ~2 s)."""
    import argparse

    from cuzk_plugin.cli.bench_daemon import _porep_envelope, build_request

    path = tmp_path / "c1.json"
    path.write_bytes(c1_bytes)
    args = argparse.Namespace(type="porep", c1=str(path), vanilla=None, priority=None, sector=7, miner=1000,
                              circuit=None, log2=None, partitions=None, seed=0, wtns=None)
    hits = _porep_envelope.cache_info().hits
    first, second = build_request(args, "a"), build_request(args, "b")
    assert _porep_envelope.cache_info().hits == hits + 1  # the second request reused the first's envelope
    assert first.vanilla_proof == second.vanilla_proof and second.request_id == "b"
    env = json.loads(first.vanilla_proof)
    assert env["SectorNum"] == 7 and env["SectorSize"] == 2048 and base64.b64decode(env["Phase1Out"]) == c1_bytes
    assert porep_partitions(first.vanilla_proof).sector_id == 7
