"""Keys the daemon trusts: Filecoin's files found by Filecoin's names, a missing one refused
before synthesis naming the path, the verifying key pinned (a swapped key file is refused)."""

from __future__ import annotations

import grpc
import pytest

from cuzk_plugin.adapters.curio.porep.provider import PorepCircuitProvider, PorepKeyGenerator
from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.engine.circuits import KeySource
from cuzk_plugin.engine.errors import CircuitUnavailable
from cuzk_plugin.engine.srs import pin_verifying_key, vk_pin_path
from cuzk_plugin.engine.types import ProofKind, ProofRequest
from cuzk_plugin.errors import ParamsError
from cuzk_plugin.filecoin.fixtures.seal import c1_json, seal
from cuzk_plugin.filecoin.param_files import FILECOIN_CIRCUITS, KNOWN_DIGESTS, find_filecoin_params, params_digest
from cuzk_plugin.formats.params import ProvingKey
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.server.proto import cuzk_pb2 as pb

STEM = FILECOIN_CIRCUITS["porep-2k"].stem


def _key(n_inputs_with_one: int, seed: int) -> ProvingKey:
    r1cs, _, _ = filecoin_like(16, seed=seed, num_inputs=n_inputs_with_one - 1).finish()
    return setup(r1cs)


@pytest.fixture(scope="module")
def c1_2k() -> bytes:
    return c1_json(seal("StackedDrg2KiBV1_1", miner_id=1000, sector_id=7, data_seed=1))



def _porep_request(c1: bytes, request_id: str) -> pb.SubmitProofRequest:
    return pb.SubmitProofRequest(request_id=request_id, proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=c1,
                                 sector_number=7, miner_id=1000)


async def test_missing_filecoin_file_is_refused_before_synthesis_naming_the_path(make_daemon, fil_dir, c1_2k):
    d = await make_daemon()
    res = (await d.stub().Prove(pb.ProveRequest(submit=_porep_request(c1_2k, "porep-1000-7")))).result
    assert res.status == pb.AwaitProofResponse.FAILED
    assert str(d.param_cache / f"{STEM}.params") in res.error_message
    assert str(fil_dir / f"{STEM}.params") in res.error_message and "allow_test_keys" in res.error_message
    assert res.synthesis_ms == 0 and res.gpu_compute_ms == 0
    assert not list(d.param_cache.glob("porep-2k*"))  # no key was made


async def test_filecoin_layout_is_found_checked_and_pinned(make_daemon, fil_dir, monkeypatch):
    """A small test circuit under the 2 KiB PoRep's names (40 inputs, as that circuit has):
    PreloadSRS finds it in $FIL_PROOFS_PARAMETER_CACHE, checks the digests once, and refuses the
    same name holding another valid key."""
    key = _key(40, seed=1)
    key.save(fil_dir / f"{STEM}.params")
    key.vk.save(fil_dir / f"{STEM}.vk")
    monkeypatch.setitem(KNOWN_DIGESTS, STEM, (params_digest(fil_dir / f"{STEM}.params"),
                                              params_digest(fil_dir / f"{STEM}.vk")))
    d = await make_daemon()
    stub = d.stub()
    await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="porep-2k"))
    status = d.engine.status()
    assert [s.circuit_id for s in status.srs if s.tier != 2] == ["porep-2k"]
    await stub.EvictSRS(pb.EvictSrsRequest(circuit_id="porep-2k"))
    _key(40, seed=2).save(fil_dir / f"{STEM}.params")  # another valid key, same circuit shape, same name
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="porep-2k"))
    assert f"{STEM}.params" in err.value.details()
    assert "digest" in err.value.details() and "not Filecoin's" in err.value.details()


def test_params_whose_vk_is_not_filecoins_vk_file_are_refused(fil_dir, monkeypatch):
    """Both files match their digests, but the .params holds another key than the .vk: the pin
    is the .vk, so self-verification can never accept proofs of the other key."""
    a, b = _key(40, seed=1), _key(40, seed=2)
    a.save(fil_dir / f"{STEM}.params")
    b.vk.save(fil_dir / f"{STEM}.vk")
    monkeypatch.setitem(KNOWN_DIGESTS, STEM, (params_digest(fil_dir / f"{STEM}.params"),
                                              params_digest(fil_dir / f"{STEM}.vk")))
    files = find_filecoin_params([fil_dir], "porep-2k")
    source = KeySource("porep-2k", files.params, filecoin=files)
    with pytest.raises(ParamsError, match=r"differs from the pinned one .*\.vk"):
        pin_verifying_key(source, ProvingKey.open(files.params))
    b.save(fil_dir / f"{STEM}.params")
    monkeypatch.setitem(KNOWN_DIGESTS, STEM, (params_digest(fil_dir / f"{STEM}.params"),
                                              params_digest(fil_dir / f"{STEM}.vk")))
    pin_verifying_key(source, ProvingKey.open(files.params))


def test_own_key_swapped_for_another_valid_key_is_refused(tmp_path):
    """A circuit of our own: pinned to the digest recorded when the key was first loaded."""
    path = tmp_path / "mine.params"
    _key(5, seed=1).save(path)
    source = KeySource("mine", path)
    pin_verifying_key(source, ProvingKey.open(path))
    assert vk_pin_path(path).is_file()
    pin_verifying_key(source, ProvingKey.open(path))  # same key: accepted
    _key(5, seed=2).save(path)  # same circuit, another setup: a valid key, not the pinned one
    with pytest.raises(ParamsError, match=r"mine\.params: its verifying key .* not the one pinned in mine\.vk-pin"):
        pin_verifying_key(source, ProvingKey.open(path))


def test_test_keys_only_when_allowed_and_named_so(fil_dir, tmp_path, c1_2k):
    request = ProofRequest("r", ProofKind.POREP_SEAL_COMMIT, vanilla_proof=c1_2k)
    cache = tmp_path / "cache"
    with pytest.raises(CircuitUnavailable, match=r"porep-2k: Filecoin's parameter file is missing: looked for .*"
                                                  + STEM + r"\.params"):
        PorepCircuitProvider().plan(request, cache)
    with pytest.raises(CircuitUnavailable, match="test keys are off"):
        PorepCircuitProvider().key_source("porep-2k-test-key", cache)
    with pytest.raises(CircuitUnavailable, match="Filecoin's parameter file is missing"):
        PorepCircuitProvider().key_source("porep-2k", cache)
    assert PorepCircuitProvider().key_source("synthetic-k4", cache) is None
    provider = PorepCircuitProvider(allow_test_keys=True)
    plan = provider.plan(request, cache)
    assert plan.circuit_id == "porep-2k-test-key"
    source = provider.key_source(plan.circuit_id, cache)
    assert source.test_key and source.path == cache / "porep-2k-test-key.params"
    assert source.generate == PorepKeyGenerator("2KiB", source.path)
    # no test key can be made for a large size: still refused, naming the paths
    with pytest.raises(CircuitUnavailable, match="no test key can be made"):
        from cuzk_plugin.adapters.curio.keys import plan_filecoin_key
        from cuzk_plugin.adapters.curio.porep.provider import porep_test_key
        plan_filecoin_key("porep-32g", cache, allow_test_keys=True, make_test_key=porep_test_key)


async def test_preloading_a_test_key_is_refused_while_test_keys_are_off(make_daemon, fil_dir):
    d = await make_daemon()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await d.stub().PreloadSRS(pb.PreloadSrsRequest(circuit_id="porep-2k-test-key"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND and "allow_test_keys = false" in err.value.details()


async def test_a_replaced_key_file_is_refused_by_the_daemon(make_daemon, param_cache):
    """A registered circuit's key is pinned when the daemon first loads it; the same file name
    holding another valid key of the same circuit is refused at the next load, naming both files."""
    cid = "pin-check-circuit"
    params = param_cache / f"{cid}.params"
    _key(5, seed=1).save(params)
    try:
        d = await make_daemon()
        stub = d.stub()
        await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id=cid))
        assert vk_pin_path(params).is_file()
        await stub.EvictSRS(pb.EvictSrsRequest(circuit_id=cid))
        _key(5, seed=2).save(params)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id=cid))
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert f"{cid}.params" in err.value.details() and f"{cid}.vk-pin" in err.value.details()
    finally:
        params.unlink(missing_ok=True)
        vk_pin_path(params).unlink(missing_ok=True)
