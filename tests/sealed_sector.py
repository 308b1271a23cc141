"""Fixtures for the Filecoin circuit and Curio adapter tests (a plugin of the root conftest): one
sealed 2 KiB sector, its C1 JSON and the reference syntheses of its PoRep partition and of its
SnapDeals update per session (the recorded porep-2k circuit, ``porep_2k_pce_cache``, is in the
tests' root conftest)."""

from __future__ import annotations

import json

import pytest

from cuzk_plugin.filecoin.fixtures.seal import c1_json, seal


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
    from cuzk_plugin.adapters.curio.porep.job import porep_partitions

    return porep_partitions(c1_bytes).circuit(0)


@pytest.fixture
def c1_dict(c1_bytes) -> dict:
    """A fresh, mutable copy of the C1 JSON."""
    return json.loads(c1_bytes)


@pytest.fixture(scope="session")
def snap_reference_2kib(sealed):
    """The reference synthesis (R1CS, inputs, aux; every constraint checked as it is enforced) of
    the SnapDeals update of the sealed sector with new data seed 3, from its encoded vanilla
    proof as the provider decodes it: ~15 s on two cores, so made once for the tests that use it."""
    from cuzk_plugin.adapters.curio.snap.job import SnapPartitionTask
    from cuzk_plugin.filecoin.fixtures.snap_seal import snap_update, vanilla_proofs

    u = snap_update(sealed, data_seed=3)
    (blob,) = vanilla_proofs(u)
    task = SnapPartitionTask(0, blob, 0, sealed.comm_r, u.tree_d_new.root, int.from_bytes(u.comm_r_new, "little"))
    return task.circuit()  # with cyclic GC paused (~5 s of ~23 s otherwise)
