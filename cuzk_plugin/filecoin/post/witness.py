"""A Fallback PoSt partition's full assignment without linear combinations, vectorized: the
entry the Curio adapter calls.

:func:`post_assignment` returns what synthesizing
:func:`cuzk_plugin.filecoin.post.circuit.synthesize_post` into a witness constraint system
returns (inputs with ONE first, aux), in the same variable order, computed for every slot and
challenge at once (:mod:`.witness_slots`): in this process as one run of slots, or by runs over
forked processes (:mod:`.witness_pool`); both run
:func:`~cuzk_plugin.filecoin.post.witness_slots.write_run`, so the result is the same bit for bit.
"""

from __future__ import annotations

from multiprocessing.shared_memory import SharedMemory

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS
from cuzk_plugin.filecoin.post.circuit import SlotWitness
from cuzk_plugin.filecoin.post.params import PostShape
from cuzk_plugin.filecoin.post.witness_pool import PostWitnessPool
from cuzk_plugin.filecoin.post.witness_slots import SlotArrays, post_layout, raise_first, write_run, zeroed_slots
from cuzk_plugin.filecoin.witness.forked import aux_in_block

__all__ = ["post_assignment", "post_inputs"]


def post_assignment(shape: PostShape, slots: list[SlotWitness] | SlotArrays, *, into: SharedMemory | None = None,
                    pool: PostWitnessPool | None = None, timings: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, aux) as (n, 4) uint64 canonical limbs, ONE first, in synthesize_post's order.

    ``into``: a new, zero shared-memory block of at least the aux's size; the aux is written at
    its start (the engine then exports it without a copy). ``pool``: forked processes that
    compute runs of slots into it at once (:class:`~.witness_pool.PostWitnessPool`). Slots given as
    the same :class:`SlotWitness` object (or the same row of :class:`SlotArrays`) are computed
    once per run and copied."""
    lay = post_layout(shape)
    arrays = slots if isinstance(slots, SlotArrays) else SlotArrays.from_witnesses(shape, slots)
    arrays.check(shape)
    if pool is not None:
        aux3, failures = pool.write_slots(lay, arrays, into, timings)
    else:
        aux_shape = (shape.sector_slots, lay.slot_aux, FR_LIMBS)
        aux3 = aux_in_block(into, aux_shape) if into is not None else zeroed_slots(aux_shape)
        failures = [write_run(lay, arrays, aux3, 0)]
    raise_first(lay, arrays, failures)
    return post_inputs(shape, arrays), aux3.reshape(-1, FR_LIMBS)


def post_inputs(shape: PostShape, arrays: SlotArrays) -> np.ndarray:
    """(1 + slots x (1 + challenges), 4) uint64: ONE, then per slot comm_r and its packed
    path indices, as the circuit inputizes them."""
    inputs = np.zeros((arrays.rows, 1 + shape.challenges_per_slot, FR_LIMBS), dtype=np.uint64)
    inputs[:, 0] = arrays.comm_r
    inputs[:, 1:, 0] = arrays.packed_indices(shape)
    one = np.array([[1, 0, 0, 0]], dtype=np.uint64)
    return np.concatenate([one, inputs[arrays.order].reshape(-1, FR_LIMBS)])
