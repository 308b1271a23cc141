"""Fixtures for the Filecoin circuit tests: one sealed 2 KiB sector and its C1 JSON per session."""

from __future__ import annotations

import json

import pytest

from cuzk_plugin.filecoin.seal import c1_json, seal


@pytest.fixture(scope="session")
def sealed():
    return seal("StackedDrg2KiBV1_1", miner_id=1000, sector_id=7, data_seed=1)


@pytest.fixture(scope="session")
def c1_bytes(sealed) -> bytes:
    return c1_json(sealed)


@pytest.fixture(scope="session")
def reference_2kib(c1_bytes):
    """The reference synthesis of the sealed 2 KiB C1's partition (R1CS, inputs, aux): ~25 s on
    two cores, so made once for every test that compares with it."""
    from cuzk_plugin.adapters.curio.porep import porep_partitions

    return porep_partitions(c1_bytes).circuit(0)


@pytest.fixture(scope="session")
def porep_2k_pce_cache(tmp_path_factory):
    """A param cache holding the recorded porep-2k circuit (~8 s to record), shared read-only."""
    from cuzk_plugin.adapters.curio.porep import ensure_porep_pce

    cache = tmp_path_factory.mktemp("porep-2k-pce")
    ensure_porep_pce("porep-2k", cache)
    return cache


@pytest.fixture
def c1_dict(c1_bytes) -> dict:
    """A fresh, mutable copy of the C1 JSON."""
    return json.loads(c1_bytes)
