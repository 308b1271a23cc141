"""Every error class crosses a process boundary intact (synthesis runs in worker processes):
type, message and attributes, whatever its ``__init__`` takes."""

from __future__ import annotations

import pickle

import pytest

from cuzk_plugin.adapters.curio.bincode import BincodeError
from cuzk_plugin.adapters.curio.porep.c1 import C1Error
from cuzk_plugin.adapters.curio.post.job import PostRequestError
from cuzk_plugin.errors import CuzkError, ParamsError
from cuzk_plugin.filecoin.porep.witness_parts import WitnessMismatch


@pytest.mark.parametrize("exc", [
    WitnessMismatch(3, 7, 1234, "comm_d inclusion of the data leaf", 272864),
    C1Error("$.vanilla_proofs[0]", "17 challenges, expected 18"),
    BincodeError("vanilla_proofs[0].sectors", 12, "truncated"),
    PostRequestError("randomness", "not 32 bytes"),
    ParamsError("truncated file"),
], ids=lambda e: type(e).__name__)
def test_errors_round_trip_through_pickle(exc):
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and isinstance(back, CuzkError)
    assert str(back) == str(exc) and back.args == exc.args
    assert vars(back) == vars(exc)
