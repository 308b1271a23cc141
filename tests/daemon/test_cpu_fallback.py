"""No silent CPU fallback: backend = "auto" that ends on a CPU device says so loudly at start and
in status, and refuses Filecoin jobs of sectors above [gpus] cpu_fallback_max_sector_size."""

from __future__ import annotations

import logging

import pytest

from cuzk_plugin.adapters.curio.post.provider import PostCircuitProvider
from cuzk_plugin.engine.circuits import ProviderRegistry
from cuzk_plugin.filecoin.fixtures.post_seal import post_test_sectors, random_randomness
from cuzk_plugin.filecoin.fixtures.post_seal import post_vanilla_proofs as vanilla
from cuzk_plugin.filecoin.post.params import post_proof_by_number
from cuzk_plugin.server.proto import cuzk_pb2 as pb

RAND = random_randomness(3)


@pytest.fixture(scope="module")
def winning_request() -> pb.SubmitProofRequest:
    (sector,) = post_test_sectors(2 << 10, [5])
    return pb.SubmitProofRequest(request_id="win", proof_kind=pb.WINNING_POST, registered_proof=0, miner_id=1000,
                                 randomness=RAND, vanilla_proofs=vanilla(post_proof_by_number(0), [sector], RAND))


async def _daemon(make_daemon, **gpus):
    providers = ProviderRegistry([PostCircuitProvider(allow_test_keys=True)], load_plugins=False)
    return await make_daemon(providers=providers, srs={"allow_test_keys": True}, gpus=gpus)


async def test_auto_on_a_cpu_says_so_and_refuses_filecoin_sizes(make_daemon, winning_request, caplog, fil_dir):
    with caplog.at_level(logging.WARNING):
        d = await _daemon(make_daemon, backend="auto", cpu_fallback_max_sector_size="1KiB")
    assert "NO GPU: backend auto fell back to the CPU" in caplog.text
    stub = d.stub()
    st = await stub.GetStatus(pb.GetStatusRequest())
    assert st.backend.startswith("CPU FALLBACK")
    res = (await stub.Prove(pb.ProveRequest(submit=winning_request))).result
    assert res.status == pb.AwaitProofResponse.FAILED and res.synthesis_ms == 0
    assert "refused on the CPU fallback" in res.error_message and "cpu_fallback_max_sector_size" in res.error_message


async def test_a_chosen_cpu_backend_is_no_fallback(make_daemon, caplog, fil_dir):
    with caplog.at_level(logging.WARNING):
        d = await _daemon(make_daemon, backend="cpu", cpu_fallback_max_sector_size="1KiB")
    assert not d.engine.cpu_fallback and "NO GPU" not in caplog.text
    assert not (await d.stub().GetStatus(pb.GetStatusRequest())).backend.startswith("CPU FALLBACK")
