"""Bad requests get a clear error naming the problem, and the daemon keeps serving."""

from __future__ import annotations

import base64
import json

import grpc
import pytest
from daemon_helpers import synthetic_request, verify_synthetic

from cuzk_plugin.server.proto import cuzk_pb2 as pb


async def _still_serving(stub, param_cache, tag: str) -> None:
    res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request(f"alive-{tag}", log2=4, seed=3)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED and verify_synthetic(param_cache, 4, 3, res.proof)


def _porep(vanilla: bytes) -> pb.SubmitProofRequest:
    return pb.SubmitProofRequest(request_id="porep-1000-1", proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=vanilla,
                                 sector_number=1, miner_id=1000, sector_size=32 << 30)


def _c1_envelope(registered_proof: str) -> bytes:
    c1 = json.dumps({"registered_proof": registered_proof, "vanilla_proofs": {}}).encode()
    return json.dumps({"SectorNum": 1, "Phase1Out": base64.b64encode(c1).decode(), "SectorSize": 32 << 30}).encode()


INVALID = [
    ("empty vanilla_proof", _porep(b""), "vanilla_proof: empty"),
    ("garbage vanilla_proof", _porep(b"\x00\xffnot json at all"), "vanilla_proof: not a JSON C1 envelope"),
    ("envelope without Phase1Out", _porep(b'{"SectorNum": 1}'), "vanilla_proof.Phase1Out: Field required"),
    ("Phase1Out not base64", _porep(b'{"SectorNum": 1, "Phase1Out": "%%%", "SectorSize": 2048}'),
     "vanilla_proof.Phase1Out: not standard base64"),
    ("unknown seal proof", _porep(_c1_envelope("StackedDrg1TiBV9")),
     "vanilla_proof.Phase1Out.registered_proof: unknown registered seal proof 'StackedDrg1TiBV9'"),
    ("unspecified kind", pb.SubmitProofRequest(request_id="k0", proof_kind=0), "proof_kind: PROOF_KIND_UNSPECIFIED"),
    ("unknown kind number", pb.SubmitProofRequest(request_id="k57", proof_kind=57), "proof_kind: 57 is not a known ProofKind"),
    ("unknown priority", pb.SubmitProofRequest(request_id="p9", proof_kind=pb.SYNTHETIC, priority=9,
                                               synthetic=pb.SyntheticInput(log2_constraints=4)), "priority: 9"),
    ("synthetic without input", pb.SubmitProofRequest(request_id="s0", proof_kind=pb.SYNTHETIC), "synthetic:"),
    ("synthetic too large", synthetic_request("s30", log2=30), "synthetic.log2_constraints: 30"),
    ("PoSt without randomness", pb.SubmitProofRequest(request_id="w1", proof_kind=pb.WINNING_POST, vanilla_proofs=[b"x"]),
     "randomness: expected 32 bytes"),
    ("WindowPoSt with a winning proof type", pb.SubmitProofRequest(
        request_id="w2", proof_kind=pb.WINDOW_POST_PARTITION, vanilla_proofs=[b"x"], randomness=b"r" * 32, registered_proof=2),
     "registered_proof: 2 is not a WindowPoSt proof type"),
    ("Snap without commitments", pb.SubmitProofRequest(request_id="sn", proof_kind=pb.SNAP_DEALS_UPDATE, vanilla_proofs=[b"x"]),
     "comm_r_old: expected 32 bytes"),
    ("registered circuit with a path", pb.SubmitProofRequest(
        request_id="r1", proof_kind=pb.REGISTERED_CIRCUIT,
        registered=pb.RegisteredCircuitInput(circuit_id="../etc/passwd", witnesses=[b"wtns"])), "not a file stem"),
    ("registered circuit with a garbage witness", pb.SubmitProofRequest(
        request_id="r2", proof_kind=pb.REGISTERED_CIRCUIT,
        registered=pb.RegisteredCircuitInput(circuit_id="c", witnesses=[b"junk"])), "registered.witnesses[0]: not a circom .wtns"),
]


@pytest.mark.parametrize("rpc", ["SubmitProof", "Prove"])
async def test_invalid_requests_are_refused_with_the_field(make_daemon, rpc):
    d = await make_daemon()
    stub = d.stub()
    for what, req, expect in INVALID:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            if rpc == "Prove":
                await stub.Prove(pb.ProveRequest(submit=req))
            else:
                await stub.SubmitProof(req)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, what
        assert expect in err.value.details(), (what, err.value.details())
    await _still_serving(stub, d.param_cache, rpc)
    assert d.engine.status().failed == 0  # refused requests never became jobs


async def test_missing_filecoin_circuit_fails_with_its_name(make_daemon):
    d = await make_daemon()
    stub = d.stub()
    from cuzk_plugin.filecoin.fixtures.post_seal import ProvenSector, post_test_sector, post_vanilla_proofs
    from cuzk_plugin.filecoin.post.params import post_proof_by_number

    vanilla = post_vanilla_proofs(post_proof_by_number(13), [ProvenSector(1, post_test_sector(32 << 30))], b"r" * 32)
    wpost = pb.SubmitProofRequest(request_id="wdpost-1", proof_kind=pb.WINDOW_POST_PARTITION, vanilla_proofs=vanilla,
                                  randomness=b"r" * 32, registered_proof=13)
    res = (await stub.Prove(pb.ProveRequest(submit=wpost))).result
    assert res.status == pb.AwaitProofResponse.FAILED and "wpost-32g" in res.error_message
    await _still_serving(stub, d.param_cache, "filecoin")
    assert d.engine.status().failed == 1


async def test_unknown_registered_circuit(make_daemon):
    d = await make_daemon()
    stub = d.stub()
    req = pb.SubmitProofRequest(request_id="unknown-circuit", proof_kind=pb.REGISTERED_CIRCUIT,
                                registered=pb.RegisteredCircuitInput(circuit_id="no-such-circuit", witnesses=[b"wtns...."]))
    res = (await stub.Prove(pb.ProveRequest(submit=req))).result
    assert res.status == pb.AwaitProofResponse.FAILED
    assert "'no-such-circuit' is not registered" in res.error_message and "no-such-circuit.r1cs" in res.error_message
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="no-such-circuit"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    await _still_serving(stub, d.param_cache, "unknown")


async def test_oversized_message_is_refused(make_daemon):
    d = await make_daemon()
    big_options = [("grpc.max_send_message_length", 300 << 20), ("grpc.max_receive_message_length", 300 << 20)]
    async with grpc.aio.insecure_channel(d.tcp, options=big_options) as ch:
        from cuzk_plugin.server.proto import cuzk_pb2_grpc

        stub = cuzk_pb2_grpc.ProvingEngineStub(ch)
        huge = _porep(b"x" * ((256 << 20) + 1024))
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.Prove(pb.ProveRequest(submit=huge))
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # Under gRPC's limit but over any C1's size: refused by its size before JSON expands it.
    stub = d.stub()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.SubmitProof(_porep(b"\xff" * (250 << 20)))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "more than a C1 of any sector size" in err.value.details()
    # Under the C1 bound: refused on content.
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.SubmitProof(_porep(b"\xff" * (64 << 20)))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "not a JSON C1 envelope" in err.value.details()
    await _still_serving(stub, d.param_cache, "big")


async def test_witness_that_violates_the_circuit(make_daemon, tmp_path):
    """A registered circuit with a wrong witness: synthesis refuses it, the job FAILS."""
    from daemon_helpers import circom_wtns, write_circom_r1cs

    from cuzk_plugin.circuit.examples import filecoin_like
    from cuzk_plugin.groth16.setup import setup

    d = await make_daemon()
    r1cs, inputs, aux = filecoin_like(40, seed=1).finish()
    write_circom_r1cs(d.param_cache / "bad-witness.r1cs", r1cs)
    setup(r1cs).save(d.param_cache / "bad-witness.params")
    aux = aux.copy()
    aux[-1, 0] ^= 1  # flip the last boolean: b(1-b) = 0 breaks only if b leaves {0,1}
    aux[-1, 0] += 5
    req = pb.SubmitProofRequest(request_id="bad-wit", proof_kind=pb.REGISTERED_CIRCUIT,
                                registered=pb.RegisteredCircuitInput(circuit_id="bad-witness", witnesses=[circom_wtns(inputs, aux)]))
    res = (await d.stub().Prove(pb.ProveRequest(submit=req))).result
    assert res.status == pb.AwaitProofResponse.FAILED and "does not satisfy constraint" in res.error_message
    await _still_serving(d.stub(), d.param_cache, "witness")
