"""A PoRep partition's full assignment without linear combinations, vectorized: the entry the
Curio adapter calls.

:func:`partition_assignment` returns what synthesizing
:func:`cuzk_plugin.filecoin.porep.circuit.synthesize_partition` into a witness constraint system
returns (inputs with ONE first, aux), in the same variable order, computed part by part for all
challenges at once (:mod:`.witness_parts`, in the offsets of :mod:`.witness_layout`): in this
process, or over forked workers (:mod:`.witness_pool`).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.shared_memory import SharedMemory
from typing import cast

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS
from cuzk_plugin.filecoin.params import PorepParams
from cuzk_plugin.filecoin.porep.circuit import PartitionWitness
from cuzk_plugin.filecoin.porep.witness_layout import porep_layout
from cuzk_plugin.filecoin.porep.witness_parts import (
    _PARENTS,
    Part,
    _Aux,
    _check_shape,
    _comm_d_part,
    _finish,
    _Gathered,
    _header,
    _labels_part,
    _own_part,
    _parents_part,
    _timed,
    _values,
    _write_header,
    zeroed_aux,
)
from cuzk_plugin.filecoin.porep.witness_pool import WitnessPool
from cuzk_plugin.filecoin.witness.forked import aux_in_block

__all__ = ["partition_assignment"]


def partition_assignment(params: PorepParams, w: PartitionWitness, *, partition: int | None = None,
                         check: bool = True, timings: dict | None = None,
                         workers: int = 1, into: SharedMemory | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(inputs (num_inputs, 4) uint64 with ONE first, aux (num_aux, 4) uint64), canonical Fr
    limbs, equal to the reference synthesis of ``w``. With ``check`` a witness that violates a
    root equality raises :class:`WitnessMismatch` (``partition`` only names it). ``timings``,
    if given, receives each phase's wall seconds. With ``into`` (a new, zero shared-memory block
    of at least the aux's size) the aux array is written at its start, where a reader in
    another process maps it: no copy of the GBs afterwards.

    ``workers`` > 1 computes the partition in that many forked processes for this call
    (:class:`~cuzk_plugin.filecoin.porep.witness_pool.WitnessPool`; hold one to keep them). With one,
    the SHA-256 work (comm_d paths, labels; numpy, which releases the GIL) runs in two threads
    beside the Poseidon work (Python ints) of the calling thread; each writes its own aux."""
    if workers > 1:
        with WitnessPool(params, workers) as pool:
            return pool.assignment(w, partition=partition, check=check, timings=timings, into=into)
    _check_shape(params, w)
    lay = porep_layout(params)
    all_aux = _timed(timings, "allocate", zeroed_aux, lay) if into is None else aux_in_block(into, (lay.num_aux, FR_LIMBS))
    aux = _Aux.of(lay, all_aux)
    t0 = time.perf_counter()
    h = _header(w)
    header_ok = _write_header(lay, cast(np.ndarray, aux.header), h)
    v = _values(params, w.challenges)
    if timings is not None:
        timings["header and values"] = time.perf_counter() - t0

    got = _Gathered.empty(params.challenges_per_partition)
    everything = params.challenges_per_partition
    with ThreadPoolExecutor(max_workers=2) as pool:
        comm_d_job = pool.submit(_timed, timings, "comm_d paths (thread)", _comm_d_part, lay, aux, v)
        labels_job = pool.submit(_timed, timings, "labels (thread)", _labels_part, lay, aux, v, h)
        t1 = time.perf_counter()
        got.add(Part("parents", 0, everything), _parents_part(lay, aux, v, slice(0, _PARENTS)))
        t2 = time.perf_counter()
        label_vals = labels_job.result()
        t3 = time.perf_counter()
        got.add(Part("labels", 0, everything), _own_part(lay, aux, v, label_vals))
        t4 = time.perf_counter()
        got.add(Part("comm_d", 0, everything), comm_d_job.result())
    if timings is not None:
        t5 = time.perf_counter()
        timings["poseidon (main thread)"] = (t2 - t1) + (t4 - t3)
        timings["waiting for threads"] = (t3 - t2) + (t5 - t4)
    return _finish(lay, w, h, header_ok, got, partition, check), all_aux
