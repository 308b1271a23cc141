"""Filecoin's parameter files: names by Filecoin's rule, the lookup, size arithmetic, digests
checked once, the pinned verifying key, test keys only when asked for."""

from __future__ import annotations

import hashlib
import logging
import shutil
from pathlib import Path

import pytest

from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.errors import ParamsError
from cuzk_plugin.filecoin import param_files as pf
from cuzk_plugin.filecoin.param_files import (
    FILECOIN_CIRCUITS,
    KNOWN_DIGESTS,
    circuit_for_post_proof,
    circuit_for_seal_proof,
    circuit_for_update_proof,
    filecoin_cache_dirs,
    find_filecoin_params,
    params_digest,
    vk_file_size,
)
from cuzk_plugin.groth16.setup import setup


def test_every_file_in_filecoins_manifest_is_named_by_our_identifiers():
    """The 22 stems of parameters.json come out of SHA-256 over the identifier strings."""
    stems = {c.stem for c in FILECOIN_CIRCUITS.values()}
    assert set(KNOWN_DIGESTS) <= stems and len(KNOWN_DIGESTS) == 22
    # cuzk's id table (params-files-facts.md section 7), by hash prefix
    for cid, prefix in [("porep-32g", "82a357d2"), ("porep-64g", "96f1b4a0"), ("wpost-32g", "0377ded6"),
                        ("winning-32g", "559e581f"), ("snap-32g", "3b7f44a9"), ("snap-64g", "102e1444")]:
        assert FILECOIN_CIRCUITS[cid].stem.rsplit("-", 1)[1].startswith(prefix), cid
    assert FILECOIN_CIRCUITS["snap-32g"].stem.startswith("v28-empty-sector-update-merkletree")
    assert FILECOIN_CIRCUITS["snap-poseidon-32g"].stem.startswith("v28-empty-sector-update-poseidon-merkletree")
    assert hashlib.sha256(b"empty_sector_update::PublicParams{ sector_nodes: 64 }").hexdigest() in FILECOIN_CIRCUITS["snap-2k"].stem


def test_every_registered_proof_has_its_circuit():
    # every PoRep API version of a size (V1, V1_1, SyntheticPoRep, NI-PoRep) shares one file
    assert {circuit_for_seal_proof(n).circuit_id for n in (0, 5, 10, 15)} == {"porep-2k"}
    assert {circuit_for_seal_proof(n).circuit_id for n in (3, 8, 13, 18)} == {"porep-32g"}
    assert circuit_for_seal_proof(19).circuit_id == "porep-64g"
    assert circuit_for_post_proof(0).circuit_id == "winning-2k" and circuit_for_post_proof(4).circuit_id == "winning-64g"
    assert circuit_for_post_proof(8).circuit_id == circuit_for_post_proof(13).circuit_id == "wpost-32g"
    assert circuit_for_update_proof(3).circuit_id == "snap-32g"
    for bad, fn in [(20, circuit_for_seal_proof), (15, circuit_for_post_proof), (5, circuit_for_update_proof)]:
        with pytest.raises(ValueError, match=str(bad)):
            fn(bad)
    assert all(c.digests is not None for c in FILECOIN_CIRCUITS.values() if c.kind != "snap-poseidon")
    by_name = pf.circuit_for_proof_name
    assert {by_name("seal", n).circuit_id for n in ("StackedDrg32GiBV1", "StackedDrg32GiBV1_1",
            "StackedDrg32GiBV1_1_Feat_SyntheticPoRep", "StackedDrg32GiBV1_2_Feat_NonInteractivePoRep",
            "StackedDrg32GiBV1_2_Feat_NiPoRep")} == {"porep-32g"}
    assert by_name("post", "StackedDrgWinning2KiBV1").circuit_id == "winning-2k"
    assert {by_name("post", f"StackedDrgWindow64GiBV1{v}").circuit_id for v in ("", "_1", "_2")} == {"wpost-64g"}
    assert by_name("update", "StackedDrg512MiBV1").circuit_id == "snap-512m"
    for family, name in [("post", "StackedDrgWinning2KiBV1_1"), ("seal", "StackedDrg1TiBV1"), ("update", "StackedDrg32GiBV1_1")]:
        with pytest.raises(ValueError, match="not a registered"):
            by_name(family, name)


def test_vk_sizes_are_the_published_ones():
    """.vk = 868 + 96 * inputs; the listing of a 32 GiB miner's directory (facts section 6)."""
    size = {cid: vk_file_size(c.public_inputs) for cid, c in FILECOIN_CIRCUITS.items()}
    assert size["porep-32g"] == size["porep-64g"] == 32_356
    assert size["wpost-32g"] == 2_481_508 and size["wpost-64g"] == 2_429_764
    assert {size[f"winning-{s}"] for s in ("2k", "8m", "512m", "32g", "64g")} == {13_636}
    assert size["snap-32g"] == 1_348
    assert size["porep-2k"] == size["porep-512m"] == 868 + 96 * 40 and size["wpost-2k"] == 868 + 96 * 23


def _key_with_inputs(n_inputs_with_one: int, seed: int):
    r1cs, _, _ = filecoin_like(16, seed=seed, num_inputs=n_inputs_with_one - 1).finish()
    return setup(r1cs)


@pytest.fixture
def fil_cache(tmp_path, monkeypatch):
    """A param cache laid out as Filecoin lays it out, holding a small test circuit under the
    2 KiB PoRep's names (40 public inputs, as that circuit has), in $FIL_PROOFS_PARAMETER_CACHE."""
    fil = tmp_path / "filecoin-proof-parameters"
    fil.mkdir()
    monkeypatch.setenv(pf.FIL_CACHE_ENV, str(fil))
    key = _key_with_inputs(40, seed=1)
    stem = FILECOIN_CIRCUITS["porep-2k"].stem
    key.save(fil / f"{stem}.params")
    key.vk.save(fil / f"{stem}.vk")
    (fil / f"{stem}.meta").write_text('{"sector_size":2048}')
    monkeypatch.setitem(KNOWN_DIGESTS, stem, (params_digest(fil / f"{stem}.params"), params_digest(fil / f"{stem}.vk")))
    monkeypatch.setattr(pf, "VERDICTS", pf.VerdictCache())
    return fil


def test_a_filecoin_layout_is_found_in_FIL_PROOFS_PARAMETER_CACHE(fil_cache, tmp_path):
    ours = tmp_path / "ours"
    dirs = filecoin_cache_dirs(ours)
    assert dirs == [ours, fil_cache]
    files = find_filecoin_params(dirs, "porep-2k")
    stem = FILECOIN_CIRCUITS["porep-2k"].stem
    assert files.params == fil_cache / f"{stem}.params" and files.vk == fil_cache / f"{stem}.vk"
    files.check_layout()
    assert files.pinned_vk_bytes() == (fil_cache / f"{stem}.vk").read_bytes()
    assert find_filecoin_params(dirs, "porep-32g") is None
    # [srs] param_cache comes first
    ours.mkdir()
    shutil.copy(files.params, ours / files.params.name)
    assert find_filecoin_params(dirs, "porep-2k").params == ours / files.params.name


def test_default_cache_without_the_variable(monkeypatch):
    monkeypatch.delenv(pf.FIL_CACHE_ENV, raising=False)
    assert filecoin_cache_dirs(None) == [Path("/var/tmp/filecoin-proof-parameters")]


def test_size_arithmetic_refuses_truncated_and_foreign_files(fil_cache):
    files = find_filecoin_params([fil_cache], "porep-2k")
    data = files.params.read_bytes()
    files.params.write_bytes(data[:-96])
    with pytest.raises(ParamsError, match=r"\.params: the vector counts imply .*\(truncated"):
        files.check_layout()
    files.params.write_bytes(data)
    files.meta.write_text('{"sector_size":34359738368}')
    with pytest.raises(ParamsError, match=r"\.meta: sector_size 34359738368, porep-2k is 2048 bytes"):
        files.check_layout()
    files.meta.write_text('{"sector_size":2048}')
    files.check_layout()
    _key_with_inputs(23, seed=2).save(files.params)  # a key of another circuit (a 2 KiB Window PoSt's size)
    with pytest.raises(ParamsError, match=r"23 public inputs \(ic\), porep-2k has 40"):
        files.check_layout()


def test_digest_is_checked_once_and_the_verdict_cached(fil_cache, monkeypatch, tmp_path):
    calls = []
    real = pf.params_digest
    monkeypatch.setattr(pf, "params_digest", lambda p: calls.append(Path(p).suffix) or real(p))
    store = tmp_path / "verdicts.json"
    files = find_filecoin_params([fil_cache], "porep-2k", verdict_store=store)
    files.pinned_vk_bytes()
    files.pinned_vk_bytes()
    assert sorted(calls) == [".params", ".vk"]
    # a new process (a fresh cache) reads the verdicts back instead of hashing again
    monkeypatch.setattr(pf, "VERDICTS", pf.VerdictCache())
    files.pinned_vk_bytes()
    assert len(calls) == 2
    # another valid key under the same name is a new file: hashed again, and refused
    _key_with_inputs(40, seed=3).save(files.params)
    files.check_known_digests()  # not hashed yet: nothing known against it, no hashing here
    assert len(calls) == 2
    with pytest.raises(ParamsError, match=r"\.params: digest [0-9a-f]{32} is not Filecoin's"):
        files.pinned_vk_bytes()
    assert len(calls) == 3
    # from now on the next plan refuses it at once, without hashing
    with pytest.raises(ParamsError, match="is not Filecoin's"):
        files.check_known_digests()
    assert len(calls) == 3


def test_test_key_names():
    assert pf.test_key_id("porep-2k") == "porep-2k-test-key"
    assert pf.is_test_key_id("porep-2k-test-key") == "porep-2k"
    assert pf.is_test_key_id("porep-2k") is None and pf.is_test_key_id("synthetic-k4-test-key") is None
    assert pf.test_key_path(Path("/c"), "snap-2k") == Path("/c/snap-2k-test-key.params")


def test_without_a_vk_file_the_params_digest_decides(fil_cache):
    files = find_filecoin_params([fil_cache], "porep-2k")
    vk_bytes = files.vk.read_bytes()
    files.vk.unlink()
    assert files.pinned_vk_bytes() == vk_bytes  # the verifying key at the front of the digest-checked .params
    # a circuit Filecoin publishes no digest for, and no .vk: nothing to pin to
    circuit = FILECOIN_CIRCUITS["snap-poseidon-2k"]
    assert circuit.digests is None
    _key_with_inputs(5, seed=4).save(fil_cache / f"{circuit.stem}.params")
    with pytest.raises(ParamsError, match=r"\.vk is missing and Filecoin publishes no digest"):
        find_filecoin_params([fil_cache], "snap-poseidon-2k").pinned_vk_bytes()


def test_trust_params_skips_hashing_the_params_as_curio_does(fil_cache, monkeypatch):
    calls = []
    real = pf.params_digest
    monkeypatch.setattr(pf, "params_digest", lambda p: calls.append(Path(p).suffix) or real(p))
    monkeypatch.setenv("TRUST_PARAMS", "1")
    files = find_filecoin_params([fil_cache], "porep-2k")
    assert files.pinned_vk_bytes() == files.vk.read_bytes() and calls == [".vk"]
    files.vk.unlink()  # without a .vk, the .params digest is all there is to trust
    files.pinned_vk_bytes()
    assert calls == [".vk", ".params"]
    snap = FILECOIN_CIRCUITS["snap-2k"]
    key = _key_with_inputs(5, seed=5)
    key.save(fil_cache / f"{snap.stem}.params")
    key.vk.save(fil_cache / f"{snap.stem}.vk")
    monkeypatch.setitem(KNOWN_DIGESTS, snap.stem, ("0" * 32, params_digest(fil_cache / f"{snap.stem}.vk")))
    # never trusted for empty-sector-update files: the .params is hashed (and here refused)
    with pytest.raises(ParamsError, match=r"update-.*\.params: digest [0-9a-f]{32} is not Filecoin's 0{32}"):
        find_filecoin_params([fil_cache], "snap-2k").pinned_vk_bytes()


def test_digest_reads_ahead_in_blocks_and_says_how_long_it_will_take(tmp_path, monkeypatch, caplog):
    data = bytes(range(256)) * 4099  # ~1 MB, not a multiple of the block
    path = tmp_path / "big.params"
    path.write_bytes(data)
    monkeypatch.setattr(pf, "ANNOUNCE_BYTES", 1 << 10)
    with caplog.at_level(logging.INFO, logger=pf.__name__):
        got = params_digest(path, block=4096, progress_every_s=0.0)
    assert got == hashlib.blake2b(data).hexdigest()[:32]
    lines = [r.getMessage() for r in caplog.records]
    assert "about" in lines[0] and "s at" in lines[0] and "GB/s on one core" in lines[0]  # the estimate, first
    assert any("% hashed" in m and "s left" in m for m in lines)  # progress
    assert "hashed in" in lines[-1]
    with pytest.raises(FileNotFoundError):  # named, never a hang
        params_digest(tmp_path / "gone")


def test_verdicts_live_in_the_state_directory_not_the_param_cache(fil_cache, monkeypatch, tmp_path):
    calls = []
    real = pf.params_digest
    monkeypatch.setattr(pf, "params_digest", lambda p: calls.append(Path(p).suffix) or real(p))
    state = tmp_path / "state"
    monkeypatch.setattr(pf, "VERDICTS", pf.VerdictCache())
    store = pf.remember_checks_in(state)
    before = sorted(p.name for p in fil_cache.iterdir())
    find_filecoin_params([fil_cache], "porep-2k").pinned_vk_bytes()
    assert sorted(calls) == [".params", ".vk"] and store.is_file() and store.parent == state
    assert sorted(p.name for p in fil_cache.iterdir()) == before  # nothing written beside Filecoin's files
    # the next start (a fresh process) reads the verdicts back: no hashing, whatever the cache's permissions
    monkeypatch.setattr(pf, "VERDICTS", pf.VerdictCache(store))
    find_filecoin_params([fil_cache], "porep-2k").pinned_vk_bytes()
    assert len(calls) == 2
