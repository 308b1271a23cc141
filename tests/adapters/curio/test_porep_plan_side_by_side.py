"""A large C1's partitions checked side by side (``porep_partitions(raw, pool=...)``: each
partition's JSON decoded and checked in a process of its own) give the job the planning thread
gives, and a C1 refused either way is refused with the same error, naming the same field.

An NI-PoRep 2 KiB C1 stands in for a 32 GiB one: 13 partitions in 1.6 MB, large enough for the
decoder to leave each partition's text to a process."""

from __future__ import annotations

import base64
import json
import multiprocessing
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

from cuzk_plugin.adapters.curio import json_pieces
from cuzk_plugin.adapters.curio.porep import job as porep_job
from cuzk_plugin.adapters.curio.porep.c1 import C1Error, parse_envelope, plain_envelope
from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.adapters.curio.porep.provider import PlanningProcesses, PorepCircuitProvider
from cuzk_plugin.filecoin.fixtures.variant_seal import VARIANT_PROOFS, seal_variant, variant_c1_json
from cuzk_plugin.formats.pce import pce_path

NI = VARIANT_PROOFS[1]
NAME = "StackedDrg2KiBV1"


@pytest.fixture(scope="module")
def ni_c1() -> bytes:
    return variant_c1_json(seal_variant(NI, miner_id=1000, sector_id=7, data_seed=1))


@pytest.fixture
def threads(monkeypatch):
    """A pool of threads (the same calls as processes, without their start-up), used for every C1
    whatever its size."""
    monkeypatch.setattr(porep_job, "PARALLEL_C1_BYTES", 0)
    with ThreadPoolExecutor(3) as pool:
        yield pool


def _envelope(raw: bytes) -> bytes:
    return json.dumps({"SectorNum": 7, "Phase1Out": base64.b64encode(raw).decode(), "SectorSize": 2048}).encode()


def _same_job(a, b) -> None:
    assert (a.num_partitions, a.circuit_id, a.sector_id) == (b.num_partitions, b.circuit_id, b.sector_id)
    for k in range(a.num_partitions):
        assert a.partition(k) == b.partition(k)


def test_keep_raw_leaves_the_chosen_containers_as_their_text():
    doc = {"a": [[i, [i] * 300] for i in range(50)], "b": {"c": [7] * 400}}
    raw = json.dumps(doc).encode()
    got = json_pieces.loads(raw, max_piece=256, keep_raw=lambda path: path[:1] == ("a",) and len(path) == 2)
    assert all(isinstance(x, json_pieces.RawJSON) for x in got["a"])
    assert [json.loads(x) for x in got["a"]] == doc["a"] and got["b"] == doc["b"]
    assert json_pieces.loads(raw, max_piece=256) == doc


def test_processes_give_the_planning_threads_job(ni_c1, monkeypatch):
    monkeypatch.setattr(porep_job, "PARALLEL_C1_BYTES", 0)
    in_turn = porep_partitions(ni_c1)
    assert in_turn.num_partitions == 13
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert porep_job._checked_side_by_side(ni_c1, plain_envelope(ni_c1), pool) is not None  # not the fallback
        _same_job(porep_partitions(ni_c1, pool=pool), in_turn)
        _same_job(porep_partitions(_envelope(ni_c1), pool=pool), porep_partitions(_envelope(ni_c1)))


def _vp(doc, k, i=0):
    return doc["vanilla_proofs"][NAME][k][i]


def _c_root(vp):
    return vp["replica_column_proofs"]["c_x"]["inclusion_proof"]["data"]["Single"]["root"]


def _r_root(vp):
    data = vp["comm_r_last_proof"]["data"]
    return data[next(iter(data))]["root"]


def _set_every_r_root(doc, k, value):
    for vp in doc["vanilla_proofs"][NAME][k]:
        data = vp["comm_r_last_proof"]["data"]
        data[next(iter(data))]["root"] = value


TAMPERED = {
    "a sibling hash not in the field (partition 5)":
        lambda d: _vp(d, 5, 1)["comm_d_proofs"]["data"]["Single"]["path"]["path"][0].update(hashes=[[255] * 32]),
    "comm_c of one challenge differs (partition 7, challenge 0)":
        lambda d: _c_root(_vp(d, 7)).__setitem__(0, _c_root(_vp(d, 7))[0] ^ 1),
    "comm_r_last differs in a whole partition (3)":
        lambda d: _set_every_r_root(d, 3, [1] + [0] * 31),
    "a node that is not a number (partition 2)": lambda d: _vp(d, 2)["labeling_proofs"][0].update(node="x"),
    "an unknown field (partition 12)": lambda d: _vp(d, 12).update(extra=1),
    "a challenge missing (partition 4)": lambda d: d["vanilla_proofs"][NAME][4].pop(),
    "a partition missing": lambda d: d["vanilla_proofs"][NAME].pop(),
    "comm_r of 31 bytes": lambda d: d.update(comm_r=d["comm_r"][:31]),
    "comm_r not Poseidon(comm_c, comm_r_last)": lambda d: d["comm_r"].__setitem__(0, d["comm_r"][0] ^ 1),
    "a zero seed": lambda d: d.update(seed=[0] * 32),
    "a second proof name": lambda d: d["vanilla_proofs"].update(Other=[]),
}


@pytest.mark.parametrize("what", TAMPERED)
def test_a_tampered_c1_is_refused_with_the_planning_threads_error(what, ni_c1, threads):
    doc = json.loads(ni_c1)
    TAMPERED[what](doc)
    raw = json.dumps(doc).encode()
    for body in (raw, _envelope(raw)):
        with pytest.raises(C1Error) as in_turn:
            porep_partitions(body)
        with pytest.raises(C1Error) as side_by_side:
            porep_partitions(body, pool=threads)
        assert str(side_by_side.value) == str(in_turn.value)


def test_malformed_json_inside_a_partition_is_refused_as_in_turn(ni_c1, threads):
    doc = json.loads(ni_c1)
    text = json.dumps(doc)
    at = text.index(json.dumps(doc["vanilla_proofs"][NAME][6]))  # its opening '['
    raw = (text[:at] + "[," + text[at + 1:]).encode()
    assert porep_job._checked_side_by_side(raw, plain_envelope(raw), threads) is None
    with pytest.raises(C1Error) as in_turn:
        porep_partitions(raw)
    with pytest.raises(C1Error) as side_by_side:
        porep_partitions(raw, pool=threads)
    assert str(side_by_side.value) == str(in_turn.value) and "not a JSON" in str(in_turn.value)


def test_the_provider_starts_planning_processes_where_it_proves_a_large_sector(tmp_path):
    provider = PorepCircuitProvider()
    provider.start(tmp_path)  # no large pre-compiled circuit here: nothing started
    assert provider._planners is None
    pce_path(tmp_path, "porep-32g").write_bytes(b"")
    provider.start(tmp_path)
    try:
        assert provider._planners is not None
    finally:
        provider.close()
    assert provider._planners is None


def test_a_plain_envelope_is_read_without_decoding_its_string_as_json(ni_c1):
    env, raw = plain_envelope(_envelope(ni_c1))
    assert raw == ni_c1 and (env.SectorNum, env.SectorSize) == (7, 2048)
    assert parse_envelope(_envelope(ni_c1))[0].header() == env
    spaced = b'{ "SectorNum" : 7 ,\n "Phase1Out"\t:  "' + base64.b64encode(ni_c1) + b'" , "SectorSize": 2048 }'
    assert plain_envelope(spaced) == (env, ni_c1)


@pytest.mark.parametrize("piece", [1, 5, 11, 64, 1 << 20])
def test_the_key_is_found_across_the_quote_scan_pieces(monkeypatch, piece):
    """The quotes are searched a piece at a time: the key (11 bytes) straddles the pieces'
    edges here, and an envelope with too many quotes is refused whatever piece shows it."""
    monkeypatch.setattr(json_pieces, "SCAN_PIECE", piece)
    env, raw = plain_envelope(b'{"SectorNum": 7, "Phase1Out": "QUJD", "SectorSize": 2048}')
    assert raw == b"ABC" and (env.SectorNum, env.SectorSize) == (7, 2048)
    crowded = b'{"SectorNum": 7, "Phase1Out": "QUJD", "SectorSize": 2048, "Extra": [' + b",".join([b'"x"'] * 40) + b"]}"
    assert plain_envelope(crowded) is None
    assert plain_envelope(b" " * 3 * piece + b'{"SectorNum": 7, "Phase1Out": "QUJD", "SectorSize": 2048}') == (env, raw)


@pytest.mark.parametrize("body", [
    b'{"SectorNum": 7, "Phase1Out": "QUJD\\/Rw==", "SectorSize": 2048}',  # an escape: read as JSON
    b'{"SectorNum": 7, "Phase1Out": "QUJD", "Phase1Out": "QUJD", "SectorSize": 2048}',
    b'{"SectorNum": 7, "Note": "Phase1Out", "SectorSize": 2048}',
    b'{"SectorNum": 7, "Phase1Out": 12, "SectorSize": 2048}',
    b'{"SectorNum": 7, "Phase1Out": "QUJD=A==", "SectorSize": 2048}',  # padding inside
    b'{"SectorNum": 7, "Phase1Out": "QUJD", "SectorSize": 2048, "Extra": 1}',
    b'{"SectorNum": -1, "Phase1Out": "QUJD", "SectorSize": 2048}',
    b'{"Inner": {"Phase1Out": "QUJD"}, "SectorNum": 7, "SectorSize": 2048}',
    # more quotes than an envelope holds: not searched for the key
    b'{"SectorNum": 7, "Phase1Out": "QUJD", "SectorSize": 2048, "Extra": [' + b",".join([b'"x"'] * 40) + b"]}",
])
def test_an_envelope_that_is_not_plain_is_left_to_the_json_reader(body):
    assert plain_envelope(body) is None
    with pytest.raises(C1Error) as refused:
        porep_partitions(body)
    with pytest.raises(C1Error) as as_json:
        parse_envelope(body)
    assert str(refused.value) == str(as_json.value)
    assert plain_envelope(body[:-1]) is None  # not JSON
    with pytest.raises(C1Error, match=r"^\$: not a JSON C1 envelope \(Expecting"):
        porep_partitions(body[:-1])


def test_a_dead_planning_process_costs_one_plan_not_every_later_one(ni_c1, monkeypatch):
    monkeypatch.setattr(porep_job, "PARALLEL_C1_BYTES", 0)
    planners = PlanningProcesses(2)
    try:
        assert porep_job._checked_side_by_side(ni_c1, plain_envelope(ni_c1), planners) is not None
        victim = next(iter(planners._pool._processes.values()))
        os.kill(victim.pid, signal.SIGKILL)
        victim.join(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the pool notices the death in its own thread
            job = porep_job._checked_side_by_side(ni_c1, plain_envelope(ni_c1), planners)
            if job is not None:
                break
        assert job is not None and job.num_partitions == 13
        assert victim.pid not in {p.pid for p in planners._pool._processes.values()}
    finally:
        planners.shutdown(wait=False, cancel_futures=True)


def test_large_bodies_that_are_no_c1_start_no_planning_processes():
    from cuzk_plugin.engine.errors import InvalidRequest
    from cuzk_plugin.engine.types import ProofKind, ProofRequest

    provider = PorepCircuitProvider()
    body = b'{"registered_proof": "StackedDrg32GiBV1_1", "vanilla_proofs": [' + b"1," * (5 << 20) + b"1]}"
    assert len(body) >= porep_job.PARALLEL_C1_BYTES
    request = ProofRequest("flood", ProofKind.POREP_SEAL_COMMIT, vanilla_proof=body)
    for _ in range(2):
        with pytest.raises(InvalidRequest, match="refused before decoding"):
            provider.plan(request, None)
    assert provider._planners is None
