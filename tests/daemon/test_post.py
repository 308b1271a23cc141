"""WindowPoSt and WinningPoSt through the daemon, as Curio fills the requests (post-facts.md
section 7): malformed ones refused naming the field, a missing Filecoin key failing before
synthesis, and (slow) 2 KiB proofs with our own test keys, self-verified by the daemon and
verified again here against public inputs derived independently, at the kinds' default
priorities, counted per kind in the metrics.

Making the 2 KiB test keys takes about 20 s (Window) and 1 min (Winning) on a CPU; the slow
tests keep them in ``$CUZK_TEST_KEY_CACHE`` (default ``~/.cache/cuzk-plugin/test-keys``)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import grpc
import pytest

from cuzk_plugin.adapters.curio.post.provider import PostCircuitProvider
from cuzk_plugin.adapters.synthetic import SyntheticProvider
from cuzk_plugin.cli.bench_daemon import request_public_inputs, verify_records
from cuzk_plugin.engine.circuits import ProviderRegistry
from cuzk_plugin.engine.types import Priority
from cuzk_plugin.filecoin import param_files as pf
from cuzk_plugin.filecoin.fixtures.post_seal import ProvenSector, post_vanilla_proofs, random_randomness
from cuzk_plugin.filecoin.fixtures.seal import seal
from cuzk_plugin.filecoin.param_files import test_key_path
from cuzk_plugin.filecoin.post.params import post_proof_by_number
from cuzk_plugin.formats.params import VerifyingKey
from cuzk_plugin.formats.proof import decode_proofs
from cuzk_plugin.groth16.verifier import verify
from cuzk_plugin.server.batch import record
from cuzk_plugin.server.proto import cuzk_pb2 as pb

MINER = 1000
RAND = random_randomness(21)


@pytest.fixture(scope="module")
def sectors() -> list[ProvenSector]:
    return [ProvenSector(n, seal("StackedDrg2KiBV1_1", miner_id=MINER, sector_id=n, data_seed=n)) for n in (12, 7)]


def _window(sectors, blobs=None, request_id="wdpost-1000-0", **fields) -> pb.SubmitProofRequest:
    """As Curio's WindowPoStCuzk fills it: registered proof 10 (V1_1), partition_index 0."""
    proof = post_proof_by_number(fields.get("registered_proof", 10))
    args = {"request_id": request_id, "proof_kind": pb.WINDOW_POST_PARTITION, "registered_proof": proof.number,
            "sector_size": 2 << 10, "miner_id": MINER, "randomness": RAND, "partition_index": 0,
            "vanilla_proofs": post_vanilla_proofs(proof, sectors, RAND) if blobs is None else blobs}
    args.update(fields)
    return pb.SubmitProofRequest(**args)


def _winning(sector, blobs=None, request_id="winpost-1000-0", **fields) -> pb.SubmitProofRequest:
    """As Curio's WinningPoStCuzk fills it: registered proof 0, no priority (CRITICAL by default)."""
    args = {"request_id": request_id, "proof_kind": pb.WINNING_POST, "registered_proof": 0, "sector_size": 2 << 10,
            "miner_id": MINER, "randomness": RAND,
            "vanilla_proofs": post_vanilla_proofs(post_proof_by_number(0), [sector], RAND) if blobs is None else blobs}
    args.update(fields)
    return pb.SubmitProofRequest(**args)



async def test_malformed_post_requests_are_refused_naming_the_field(make_daemon, sectors, fil_dir):
    d = await make_daemon()
    stub = d.stub()
    blobs = post_vanilla_proofs(post_proof_by_number(10), sectors, RAND)
    flipped = bytearray(blobs[1])
    flipped[8 + 31] ^= 0x80  # comm_r's top bit
    cases = [
        (_window(sectors, [blobs[0][:1000]]), "vanilla_proofs[0].vanilla_proof.sectors[0].inclusion_proofs[1]"),
        (_window(sectors, [blobs[0], bytes(flipped)]), "vanilla_proofs[1].comm_r (byte 8): not a canonical field element"),
        (_window(sectors, blobs + blobs[:1]), "vanilla_proofs: 3 entries, a StackedDrgWindow2KiBV1_1 partition proves 1 to 2"),
        # V1_1 proofs sent as V1, whose challenge index is position * 10 + n: position 0 agrees, 1 does not.
        (_window(sectors, blobs, registered_proof=5),
         "vanilla_proofs[1].vanilla_proof.sectors[0].inclusion_proofs[0].Single: path indices open leaf"),
        (_window(sectors, randomness=b"\xff" * 32), "randomness: not a canonical field element"),
        (_window(sectors, sector_size=32 << 30), "sector_size: 34359738368, but StackedDrgWindow2KiBV1_1 proves 2048"),
        (_window(sectors, blobs, registered_proof=3), "registered_proof: 3 is not a WindowPoSt proof type"),
        (_winning(sectors[0], blobs=blobs[:1]), "vanilla_proofs[0].vanilla_proof.sectors[0].inclusion_proofs (byte 48): count 10, expected 66"),
        (_winning(sectors[0], partition_index=1), "partition_index: 1: a WinningPoSt has one partition"),
        (_winning(sectors[0], blobs=[]), "vanilla_proofs: empty"),
    ]
    for req, expect in cases:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.SubmitProof(req)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, expect
        assert expect in err.value.details(), (expect, err.value.details())
    assert d.engine.status().failed == 0


async def test_post_without_filecoin_key_fails_before_synthesis(make_daemon, sectors, fil_dir):
    d = await make_daemon()
    for req, circuit in ((_window(sectors), "wpost-2k"), (_winning(sectors[0]), "winning-2k")):
        res = (await d.stub().Prove(pb.ProveRequest(submit=req))).result
        assert res.status == pb.AwaitProofResponse.FAILED
        stem = pf.FILECOIN_CIRCUITS[circuit].stem
        assert str(fil_dir / f"{stem}.params") in res.error_message and "allow_test_keys" in res.error_message
        assert res.synthesis_ms == 0


# -- end to end with test keys -----------------------------------------------------------------

def _key_cache() -> Path:
    return Path(os.environ.get("CUZK_TEST_KEY_CACHE", Path.home() / ".cache" / "cuzk-plugin" / "test-keys"))


def _restore_key(param_cache: Path, circuit: str) -> Path:
    key = test_key_path(param_cache, circuit)
    cached = _key_cache() / key.name
    if cached.is_file() and not key.is_file():
        shutil.copyfile(cached, key)
    return key


def _keep_key(key: Path) -> None:
    cached = _key_cache() / key.name
    if not cached.is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(key, cached.with_suffix(".tmp"))
        os.replace(cached.with_suffix(".tmp"), cached)


def _leaf(sector_id: int, index: int) -> int:
    """post-facts.md 3.2: SHA-256(randomness || sector id u64 LE || index u64 LE), 8 bytes LE, mod 64 leaves."""
    h = hashlib.sha256(RAND + sector_id.to_bytes(8, "little") + index.to_bytes(8, "little")).digest()
    return int.from_bytes(h[:8], "little") % 64


async def _post_daemon(make_daemon):
    providers = ProviderRegistry([PostCircuitProvider(allow_test_keys=True), SyntheticProvider()], load_plugins=False)
    return await make_daemon(providers=providers, srs={"allow_test_keys": True, "max_generated_log2": 17})


@pytest.mark.slow
async def test_window_post_2kib_end_to_end_with_a_test_key(make_daemon, sectors, fil_dir, param_cache):
    key = _restore_key(param_cache, "wpost-2k")
    d = await _post_daemon(make_daemon)
    stub = d.stub()
    sub = await stub.SubmitProof(_window(sectors))
    assert d.engine.job(sub.job_id).priority == Priority.HIGH  # WindowPoSt's default
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id=sub.job_id, timeout_ms=600_000))
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert len(res.proof) == 192 and res.circuit_id == "wpost-2k-test-key"
    _keep_key(key)
    vk = VerifyingKey.load(key)
    (proof,) = decode_proofs(res.proof)
    # V1_2 challenges (registered proof 10): index = n; sectors sorted by number: 7, then 12.
    inputs = []  # without ONE
    for ps in sorted(sectors, key=lambda p: p.sector_id):
        inputs += [ps.sector.comm_r] + [_leaf(ps.sector_id, n) for n in range(10)]
    assert verify(vk, proof, inputs)
    bad = list(inputs)
    bad[4] = (bad[4] + 1) % 64
    assert not verify(vk, proof, bad)
    assert not verify(vk, type(proof)(proof.a, proof.b, proof.a), inputs)
    metrics = (await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text
    assert 'cuzk_jobs_total{kind="window_post",status="completed"} 1.0' in metrics

    # A corrupted sibling hash parses and passes the plan; the circuit names its inclusion proof.
    blobs = post_vanilla_proofs(post_proof_by_number(10), sectors, RAND)
    corrupt = bytearray(blobs[1])
    corrupt[48 + 8 + 4 + 64 + 8 + 8 + 5] ^= 0x01  # inclusion_proofs[0].Single.path[0].hashes[0]
    res = (await stub.Prove(pb.ProveRequest(submit=_window(sectors, [blobs[0], bytes(corrupt)], request_id="wdpost-bad")))).result
    assert res.status == pb.AwaitProofResponse.FAILED
    assert "vanilla_proofs[1].vanilla_proof.sectors[0].inclusion_proofs[0]: violates constraint" in res.error_message


@pytest.mark.slow
async def test_winning_post_2kib_end_to_end_with_a_test_key(make_daemon, sectors, fil_dir, param_cache):
    key = _restore_key(param_cache, "winning-2k")
    d = await _post_daemon(make_daemon)
    stub = d.stub()
    ps = sectors[0]
    sub = await stub.SubmitProof(_winning(ps))
    assert d.engine.job(sub.job_id).priority == Priority.CRITICAL  # WinningPoSt's default
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id=sub.job_id, timeout_ms=600_000))
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert len(res.proof) == 192 and res.circuit_id == "winning-2k-test-key"
    _keep_key(key)
    vk = VerifyingKey.load(key)
    (proof,) = decode_proofs(res.proof)
    # 66 slots of one challenge, all the same sector: comm_r, leaf_i = H(rand || id || i) mod 64.
    inputs = []  # without ONE
    for i in range(66):
        inputs += [ps.sector.comm_r, _leaf(ps.sector_id, i)]
    assert verify(vk, proof, inputs)
    assert not verify(vk, proof, [*inputs[:-1], (inputs[-1] + 1) % 64])
    metrics = (await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text
    assert 'cuzk_jobs_total{kind="winning_post",status="completed"} 1.0' in metrics

    # cuzk-bench --verify-vk: the client derives the same public inputs from its own request.
    req = _winning(ps)
    assert request_public_inputs(req) == [inputs]
    assert verify_records([record(res, 0.0, 0.0)], lambda _id, _i: req, str(key)) == []
    res.proof = res.proof[:-1] + bytes([res.proof[-1] ^ 1])
    assert verify_records([record(res, 0.0, 0.0)], lambda _id, _i: req, str(key)) != []
