"""One PoRep partition's assignment computed by several processes at once.

A 32 GiB partition's witness is 18 challenges of SHA-256 programs (numpy steps too short to
share a GIL well) and Poseidon over Python ints: one process takes ~5.7 s on a 16-core host.
:class:`WitnessPool` forks N workers once (after the layout is traced, so they inherit it) and
splits each partition into :class:`~cuzk_plugin.filecoin.porep.witness_parts.Part` pieces (comm_d
paths, labels, parent columns, by runs of challenges) that the workers write straight into
one shared aux array: the caller's shared-memory block (``into``: the daemon's synthesis
worker hands the engine that very block, so the 4.2 GB are written once) or a memfd the
parent creates, mapped after the workers are done. The assignment never goes through a pipe
and its pages are faulted by the workers in parallel. The parent meanwhile writes the header;
the small roots and packed index values come back through the pool and are checked as in the
one-process path.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from multiprocessing.shared_memory import SharedMemory

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS
from cuzk_plugin.filecoin.params import BASE_DEGREE, EXP_DEGREE, PorepParams
from cuzk_plugin.filecoin.porep.circuit import PartitionWitness
from cuzk_plugin.filecoin.porep.witness_layout import porep_layout
from cuzk_plugin.filecoin.porep.witness_parts import (
    Part,
    _check_shape,
    _finish,
    _Gathered,
    _Header,
    _header,
    _write_header,
    compute_part,
)
from cuzk_plugin.filecoin.witness.forked import ForkedWorkers, kept_pool, mapped_aux

__all__ = ["WitnessPool", "plan_parts", "shared_pool"]

_PARENTS = BASE_DEGREE + EXP_DEGREE


def plan_parts(challenges: int, workers: int) -> list[Part]:
    """The pieces of a partition for ``workers`` processes, in dispatch order. Labels first:
    they write ~80 % of the aux (the compressions' bits: ~107 M of 130 M rows at 32 GiB) and
    run ~30 compressions whatever their number of challenges, so about one piece per two
    workers; then comm_d (all levels at once, cheap); then the parent columns (Poseidon, cost
    proportional to challenges x parents) in pieces that fill the rest, about two a worker."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")

    def runs(n: int) -> list[tuple[int, int]]:
        n = max(1, min(n, challenges))
        bounds = [round(k * challenges / n) for k in range(n + 1)]
        return [(a, b - a) for a, b in itertools.pairwise(bounds) if b > a]

    n_labels = 1 if workers == 1 else workers // 2 + 1
    n_comm_d = 1 if workers < 8 else 2
    n_parents = max(2, 2 * workers - n_comm_d - n_labels)
    challenge_runs = runs(n_parents)
    halves = min(2, math.ceil(n_parents / len(challenge_runs)))
    cut = [round(k * _PARENTS / halves) for k in range(halves + 1)]
    parts = [Part("labels", a, n) for a, n in runs(n_labels)] + [Part("comm_d", a, n) for a, n in runs(n_comm_d)]
    parts += [Part("parents", a, n, (p0, p1)) for a, n in challenge_runs for p0, p1 in itertools.pairwise(cut)]
    return parts


def _run_part(path: str, params: PorepParams, header: _Header, chs: list, part: Part) -> tuple[dict, float]:
    """In a worker: map the partition's aux file, write ``part`` into it, return its values."""
    t = time.perf_counter()
    lay = porep_layout(params)
    with mapped_aux(path, (lay.num_aux, FR_LIMBS)) as all_aux:
        got = compute_part(params, all_aux, header, chs, part)
    return got, time.perf_counter() - t


class WitnessPool(ForkedWorkers):
    """``workers`` forked processes that compute one partition of ``params``' shape at a time
    together (:meth:`assignment`, equal to ``partition_assignment``'s result bit for bit).
    Create it before the process starts threads (fork); close it (or use ``with``) to end the
    workers."""

    def __init__(self, params: PorepParams, workers: int, *, on_fork: Callable[[int], None] | None = None):
        """``on_fork(parent pid)`` runs first in each worker (the daemon's: die with the parent)."""
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.params = params
        porep_layout(params)  # traced here once: the forked workers inherit it
        super().__init__(workers, on_fork=on_fork)

    def assignment(self, w: PartitionWitness, *, partition: int | None = None, check: bool = True,
                   timings: dict | None = None, into: SharedMemory | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(inputs (num_inputs, 4), aux (num_aux, 4)) uint64, as ``partition_assignment``. The
        aux array lies at the start of ``into`` (a new, zero block of at least its size), or
        else of a memfd that lives as long as the array."""
        if self.closed:
            raise ValueError("the witness pool is closed")
        params = self.params
        _check_shape(params, w)
        lay = porep_layout(params)
        t0 = time.perf_counter()
        h = _header(w)
        chs = list(w.challenges)
        parts = plan_parts(params.challenges_per_partition, self.workers)
        header = np.zeros((lay.header_aux, FR_LIMBS), dtype=np.uint64)
        header_ok: list[bool] = []
        t1 = t0

        def meanwhile() -> None:  # the header, while the workers compute
            nonlocal t1
            t1 = time.perf_counter()
            header_ok.append(_write_header(lay, header, h))

        results, all_aux = self.write((lay.num_aux, FR_LIMBS), into,
                                      [(_run_part, (params, h, chs[p.first:p.first + p.count], p)) for p in parts],
                                      meanwhile)
        t2 = time.perf_counter()
        got = _Gathered.empty(params.challenges_per_partition)
        slowest: dict[str, float] = {}
        for p, (values, seconds) in zip(parts, results, strict=True):
            got.add(p, values)
            slowest[p.kind] = max(slowest.get(p.kind, 0.0), seconds)
        all_aux[:lay.header_aux] = header
        inputs = _finish(lay, w, h, header_ok[0], got, partition, check)
        if timings is not None:
            timings["dispatch"] = t1 - t0
            timings["parts (workers)"] = t2 - t1
            timings.update({f"slowest {kind} part": seconds for kind, seconds in slowest.items()})
            timings["map and finish"] = time.perf_counter() - t2
        return inputs, all_aux


def shared_pool(params: PorepParams, workers: int, *, on_fork: Callable[[int], None] | None = None) -> WitnessPool:
    """This process's pool for ``params``' shape (one at a time: another shape or size replaces
    it), forked on first use and kept for the partitions that follow (:func:`kept_pool`)."""
    return kept_pool(WitnessPool, (params, workers), lambda: WitnessPool(params, workers, on_fork=on_fork))
