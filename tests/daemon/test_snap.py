"""SnapDeals through the daemon: a Curio-shaped SNAP_DEALS_UPDATE request of the test sealer's
update, its malformed variants refused naming the field, and a 2 KiB proof with our own
test key, self-verified by the daemon and again here against the key's verifying key.

The 2 KiB test key (domain 2^21, 6.4 M points) is made by the lane from the pre-compiled
circuit, never written. On the OpenCL backend its points are made on the device
(kernels/fixed_base.cl): on a 2-core host with PoCL the key takes ~85 s and the proof ~30 s, so
that variant runs in the suite; on the CPU backend the points take 3-5 minutes on every core
(arkworks) and the proof minutes more (object-array NTTs): heavy (``./dev test -m heavy``)."""

from __future__ import annotations

import grpc
import pytest

from cuzk_plugin.adapters.curio.snap.provider import SnapCircuitProvider
from cuzk_plugin.adapters.synthetic import SyntheticProvider
from cuzk_plugin.backends.registry import get_backend, probe
from cuzk_plugin.cli.bench_daemon import request_public_inputs, verify_records
from cuzk_plugin.engine.circuits import ProviderRegistry
from cuzk_plugin.filecoin import param_files as pf
from cuzk_plugin.filecoin.fixtures.seal import seal
from cuzk_plugin.filecoin.fixtures.snap_seal import snap_update, vanilla_proofs
from cuzk_plugin.filecoin.param_files import test_key_path
from cuzk_plugin.formats.params import VerifyingKey
from cuzk_plugin.formats.pce import pce_path
from cuzk_plugin.formats.proof import decode_proofs
from cuzk_plugin.groth16.verifier import verify
from cuzk_plugin.server.batch import record
from cuzk_plugin.server.proto import cuzk_pb2 as pb


@pytest.fixture(scope="module")
def update():
    return snap_update(seal("StackedDrg2KiBV1_1", miner_id=1000, sector_id=9, data_seed=4), data_seed=5)


def _request(u, blobs=None, request_id="snap-1000-9", **fields) -> pb.SubmitProofRequest:
    """As Curio's ProveUpdateCuzk fills it (snap-facts.md section 9)."""
    args = {"request_id": request_id, "proof_kind": pb.SNAP_DEALS_UPDATE, "registered_proof": u.registered_proof,
            "vanilla_proofs": vanilla_proofs(u) if blobs is None else blobs, "sector_number": 9, "miner_id": 1000,
            "comm_r_old": u.comm_r_old, "comm_r_new": u.comm_r_new, "comm_d_new": u.comm_d_new}
    args.update(fields)
    return pb.SubmitProofRequest(**args)



async def test_malformed_snap_requests_are_refused_naming_the_field(make_daemon, update, fil_dir):
    d = await make_daemon()
    stub = d.stub()
    (blob,) = vanilla_proofs(update)
    flipped = bytearray(blob)
    flipped[304] ^= 0x80
    cases = [
        (_request(update, [blob[:1000]]), "vanilla_proofs[0].challenge_proofs"),
        (_request(update, [bytes(flipped)]), "vanilla_proofs[0].challenge_proofs[0].proof_r_old.variant (byte 304)"),
        (_request(update, [blob, blob]), "vanilla_proofs: 2 partition proofs, update proof 0 has 1"),
        (_request(update, registered_proof=7), "registered_proof: 7 is not a registered update proof"),
        (_request(update, comm_d_new=b"\xff" * 32), "comm_d_new: not a canonical field element"),
        (_request(update, comm_r_new=update.comm_r_old), "vanilla_proofs[0].challenge_proofs[0].proof_r_old: path addresses"),
    ]
    for req, expect in cases:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.SubmitProof(req)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, expect
        assert expect in err.value.details(), (expect, err.value.details())
    assert d.engine.status().failed == 0


async def test_snap_without_filecoin_key_fails_before_synthesis(make_daemon, update, fil_dir):
    d = await make_daemon()
    res = (await d.stub().Prove(pb.ProveRequest(submit=_request(update)))).result
    assert res.status == pb.AwaitProofResponse.FAILED
    stem = pf.FILECOIN_CIRCUITS["snap-2k"].stem
    assert str(fil_dir / f"{stem}.params") in res.error_message and "allow_test_keys" in res.error_message
    assert res.synthesis_ms == 0


@pytest.mark.parametrize("backend", [
    pytest.param("opencl", marks=[pytest.mark.slow, pytest.mark.skipif(probe("opencl") is not None,
                                                                       reason=f"opencl unavailable: {probe('opencl')}")]),
    pytest.param("cpu", marks=pytest.mark.heavy),
])
async def test_snap_2kib_end_to_end_with_a_test_key(make_daemon, update, fil_dir, param_cache, backend):
    """The lane makes the key (never written: only its verifying key is) and proves with it."""
    providers = ProviderRegistry([SnapCircuitProvider(allow_test_keys=True), SyntheticProvider()], load_plugins=False)
    d = await make_daemon(backends=[get_backend(backend)], providers=providers,
                          srs={"allow_test_keys": True, "max_generated_log2": 21})
    res = (await d.stub().Prove(pb.ProveRequest(submit=_request(update)), timeout=3600)).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert len(res.proof) == 192  # one partition at 2 KiB
    assert pce_path(param_cache, "snap-2k").is_file()  # the witness went to the pre-compiled circuit
    key = test_key_path(param_cache, "snap-2k")
    assert not key.exists()
    vk = VerifyingKey.load(key.with_suffix(".vk"))
    (proof,) = decode_proofs(res.proof)
    inputs = [1] + [int.from_bytes(x, "little") for x in (update.comm_r_old, update.comm_d_new, update.comm_r_new)]
    assert verify(vk, proof, inputs)  # k_and_h_select = 1 at 2 KiB (snap-facts.md section 6)
    assert not verify(vk, proof, [inputs[0], inputs[1], inputs[2] + 1, inputs[3]])
    assert not verify(vk, proof, [2, *inputs[1:]])
    assert not verify(vk, type(proof)(proof.a, proof.b, proof.a), inputs)
    # cuzk-bench --verify-vk: the client derives the same inputs from its request and checks
    req = _request(update)
    assert verify_records([record(res, 0.0, 0.0)], lambda _id, _i: req, str(key.with_suffix(".vk"))) == []
    res.proof = res.proof[:-1] + bytes([res.proof[-1] ^ 1])
    assert verify_records([record(res, 0.0, 0.0)], lambda _id, _i: req, str(key.with_suffix(".vk"))) != []


def test_client_derives_each_partitions_public_inputs(update):
    """What cuzk-bench --verify-vk checks a SnapDeals proof against: k_and_h_select (1 for the
    one 2 KiB partition, snap-facts.md section 6), comm_r_old, comm_d_new, comm_r_new."""
    comms = [int.from_bytes(x, "little") for x in (update.comm_r_old, update.comm_d_new, update.comm_r_new)]
    assert request_public_inputs(_request(update)) == [[1, *comms]]


def test_sealer_cli_output_is_what_cuzk_bench_sends(tmp_path, capsys):
    # python -m cuzk_plugin.filecoin.fixtures.snap_seal writes Curio's snap-vproof.json (a JSON list of
    # base64 PartitionProofs) and prints the cuzk-bench command; the request it makes plans
    import shlex

    from cuzk_plugin.adapters.curio.snap.job import snap_job
    from cuzk_plugin.cli.bench_daemon import hex32, read_vanilla
    from cuzk_plugin.engine.types import ProofKind, ProofRequest
    from cuzk_plugin.filecoin.fixtures.snap_seal import _main

    assert _main(["--out", str(tmp_path), "--sector-id", "3"]) == 0
    words = shlex.split(capsys.readouterr().out)
    flag = {words[i]: words[i + 1] for i in range(4, len(words) - 1, 2)}
    assert words[:4] == ["cuzk-bench", "single", "-t", "snap"] and flag["--registered-proof"] == "0"
    req = ProofRequest("snap-1000-3", ProofKind.SNAP_DEALS_UPDATE, registered_proof=0,
                       vanilla_proofs=tuple(read_vanilla([flag["--vanilla"]])), comm_r_old=hex32(flag["--comm-r-old"]),
                       comm_r_new=hex32(flag["--comm-r-new"]), comm_d_new=hex32(flag["--comm-d-new"]))
    assert snap_job(req).circuit_id == "snap-2k"
