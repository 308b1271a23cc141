"""Host side of one WindowPoSt partition, without a daemon or a GPU: what the daemon's plan does
with a request (decode and check the vanilla proofs, build the task), the size of the task a
synthesis worker receives (pickled), and the worker's witness, written where the engine maps
it, with 1 and N processes (bench/post/wpost-host-2026-12-03.md has the figures).

    python -m cuzk_plugin.filecoin.fixtures.post_seal --kind window --sector-size 32GiB --sparse --sectors 2349 --out /tmp/wpost.json
    python bench/post/wpost_host.py /tmp/wpost.json --randomness HEX --processes 1 2 [--profile]

Runs the tree it imports: PYTHONPATH=<older checkout> times that one (up to eb2d57a the task
carried the request's bytes and the worker decoded them again, then the engine copied the
witness into a fresh shared-memory block; both are timed as the worker's).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import cProfile
import io
import json
import os
import pickle
import pstats
import statistics
import time
from multiprocessing.shared_memory import SharedMemory

import numpy as np

import cuzk_plugin
from cuzk_plugin.adapters.curio.post.job import PostJob
from cuzk_plugin.adapters.curio.post.provider import PostPartitionTask

NEW = "partition" in PostJob.__dataclass_fields__  # the task carries the decoded arrays


def _plan(number: int, rand: bytes, blobs: list[bytes]):
    """What PostCircuitProvider.plan does but the key look-up: the job and its task."""
    job = PostJob.from_fields(number, rand, blobs)
    if NEW:
        return job, PostPartitionTask(job.partition, None)
    return job, PostPartitionTask(number, rand, tuple(bytes(b) for b in blobs), 0, None)  # type: ignore[call-arg, arg-type]


@contextlib.contextmanager
def _hash_clock():
    """Yield a one-element list that receives the seconds the witness spends in poseidon_into
    (this process only) until the block ends."""
    from cuzk_plugin.filecoin.post import witness_slots as post

    spent = [0.0]
    inner = post.poseidon_into

    def timed(*args):
        t = time.perf_counter()
        try:
            return inner(*args)
        finally:
            spent[0] += time.perf_counter() - t

    post.poseidon_into = timed
    try:
        yield spent
    finally:
        post.poseidon_into = inner


def _worker(blob: bytes, processes: int) -> dict:
    """A synthesis worker: unpickle the task, the witness into a fresh shared-memory block."""
    t = {}
    t0 = time.perf_counter()
    task = pickle.loads(blob)
    t["unpickle"] = time.perf_counter() - t0
    block = None
    try:
        if NEW:
            from cuzk_plugin.filecoin.post.witness_slots import post_layout
            from cuzk_plugin.filecoin.post.witness_pool import shared_post_pool

            pool = None
            if processes > 1:
                t1 = time.perf_counter()
                pool = shared_post_pool(processes)
                t["pool fork (first use only)"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            part = task.partition
            block = SharedMemory(create=True, size=post_layout(part.shape).aux_nbytes)
            inner: dict = {}
            with _hash_clock() as hashing:
                inputs, aux = part.assignment(into=block, pool=pool, timings=inner)
            t["witness into the block"] = time.perf_counter() - t1
            t.update({f"  {k}": v for k, v in inner.items()})
            if pool is None:
                t["  of which in the C Poseidon (with the page faults of what it writes)"] = hashing[0]
        else:
            t1 = time.perf_counter()
            job = PostJob.from_fields(task.registered_proof, task.randomness, task.vanilla_proofs, task.partition_index)
            t["decode again"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            inputs, aux = job.assignment()
            t["witness"] = time.perf_counter() - t1
            t1 = time.perf_counter()  # export_partition: a fresh block, the aux copied in
            block = SharedMemory(create=True, size=aux.nbytes)
            np.ndarray(aux.shape, aux.dtype, buffer=block.buf)[...] = aux
            t["copy into a fresh block"] = time.perf_counter() - t1
        t["worker total"] = time.perf_counter() - t0
        t["aux GB"] = aux.nbytes / 1e9
        del aux, inputs
    finally:
        if block is not None:
            block.close()
            block.unlink()
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vanilla", help="post_seal's --out file (a JSON list of base64 vanilla proofs)")
    ap.add_argument("--randomness", required=True, help="hex, as post_seal printed it")
    ap.add_argument("--registered-proof", type=int, default=13)
    ap.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--plan-runs", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="print the plan's cProfile (top 15 by cumulative time)")
    args = ap.parse_args()
    print(f"tree {os.path.dirname(os.path.dirname(cuzk_plugin.__file__))}, {os.cpu_count()} cores")
    with open(args.vanilla) as f:
        blobs = [base64.b64decode(x) for x in json.load(f)]
    rand = bytes.fromhex(args.randomness)
    print(f"{len(blobs)} vanilla proofs, {sum(map(len, blobs)) / 1e6:.1f} MB")
    _plan(args.registered_proof, rand, blobs[:2])  # imports, the C Poseidon built and loaded
    seconds = []
    for _ in range(args.plan_runs):
        t0 = time.perf_counter()
        job, task = _plan(args.registered_proof, rand, blobs)
        seconds.append(time.perf_counter() - t0)
    print(f"plan {statistics.median(seconds):.2f} s median of {len(seconds)} (min {min(seconds):.2f}, max {max(seconds):.2f})")
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(_plan, args.registered_proof, rand, blobs)
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumtime").print_stats(15)
        print(out.getvalue())
    t0 = time.perf_counter()
    blob = pickle.dumps(task)
    print(f"task pickled: {len(blob) / 1e6:.1f} MB in {time.perf_counter() - t0:.3f} s")
    del job, task
    for n in args.processes:
        print(f"worker, {n} process(es):")
        for k, v in _worker(blob, n).items():
            print(f"  {k}: {v:.2f}")


if __name__ == "__main__":
    main()
