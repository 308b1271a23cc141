"""REGISTERED_CIRCUIT: a circom-format circuit and key in the param cache, witnesses over gRPC."""

from __future__ import annotations

from daemon_helpers import circom_wtns, write_circom_r1cs

from cuzk_plugin.bls12_381.fields import limbs_to_ints
from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.formats.params import VerifyingKey
from cuzk_plugin.formats.proof import decode_proofs
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import batch_verify
from cuzk_plugin.server.proto import cuzk_pb2 as pb


async def test_prove_a_registered_circuit(make_daemon):
    d = await make_daemon()
    shape, _, _ = filecoin_like(48, seed=0).finish()
    write_circom_r1cs(d.param_cache / "demo-circuit.r1cs", shape)
    setup(shape).save(d.param_cache / "demo-circuit.params")
    witnesses, publics = [], []
    for seed in (21, 22, 23):
        _, inputs, aux = filecoin_like(48, seed=seed).finish()
        witnesses.append(circom_wtns(inputs, aux))
        publics.append(limbs_to_ints(inputs)[1:])
    req = pb.SubmitProofRequest(request_id="reg-1", proof_kind=pb.REGISTERED_CIRCUIT,
                                registered=pb.RegisteredCircuitInput(circuit_id="demo-circuit", witnesses=witnesses))
    res = (await d.stub("unix").Prove(pb.ProveRequest(submit=req))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert res.circuit_id == "demo-circuit" and res.partitions == 3
    vk = VerifyingKey.load(d.param_cache / "demo-circuit.params")
    proofs = decode_proofs(res.proof)
    assert batch_verify(vk, proofs, publics)
    assert not batch_verify(vk, proofs, [publics[1], publics[0], publics[2]])  # bound to each partition's inputs
