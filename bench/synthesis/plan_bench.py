"""Time the plan of a PoRep C1 or of a SnapDeals request as the daemon plans it (PoRep:
porep_partitions, parse, validate, every partition's witness built and checked; SnapDeals:
snap_job, every PartitionProof decoded and checked), from the files the test sealers write.
Run from the repository root:

    python -m cuzk_plugin.filecoin.fixtures.seal --sector-size 32GiB --sparse --out /tmp/c1.json
    python bench/synthesis/plan_bench.py porep /tmp/c1.json [RUNS] [--profile] [--envelope] [--processes N]
    python -m cuzk_plugin.filecoin.fixtures.snap_seal --sector-size 32GiB --sparse --out /tmp/snap
    python bench/synthesis/plan_bench.py snap /tmp/snap [RUNS] [--profile]

Prints each run's seconds after a warm-up, and their median; with --profile a cProfile of one more.
"""

import argparse
import base64
import cProfile
import json
import multiprocessing
import pstats
import re
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def curio_envelope(raw: bytes) -> bytes:
    """Curio's envelope of a bare C1 (its SectorSize from the C1's registered_proof). Built here,
    not with the adapter's ``curio_envelope``: host_plan_ab.sh runs this file against older
    source trees that lack it."""
    from cuzk_plugin.filecoin.proofs import seal_proof_by_name

    name = re.search(rb'"registered_proof":\s*"([^"]+)"', raw[:4096])
    size = seal_proof_by_name(name.group(1).decode()).sector_size if name else 0
    return json.dumps({"SectorNum": 1, "Phase1Out": base64.b64encode(raw).decode(), "SectorSize": size}).encode()


def porep_plan(path: Path, processes: int = 0, envelope: bool = False) -> tuple[str, Callable[[], object]]:
    """The C1 (in Curio's envelope with ``envelope``), its partitions checked in ``processes``
    planning processes side by side as the daemon's provider does (0: in turn)."""
    from cuzk_plugin.adapters.curio.porep.job import porep_partitions

    c1 = path.read_bytes()
    what = f"C1 of {len(c1):,} bytes" + (" in its envelope" if envelope else "")
    # the envelope as the server hands it over: a memoryview into the request
    raw: bytes | memoryview = memoryview(curio_envelope(c1)) if envelope else c1
    if not processes:
        return what + ", checked in turn", lambda: porep_partitions(raw)
    pool = ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"))
    list(pool.map(abs, range(processes)))  # started before the runs
    return f"{what}, partitions checked in {processes} processes", lambda: porep_partitions(raw, pool=pool)


def snap_plan(folder: Path) -> tuple[str, Callable[[], object]]:
    from cuzk_plugin.adapters.curio.snap.job import snap_job
    from cuzk_plugin.engine.types import ProofKind, ProofRequest

    blobs = tuple(base64.b64decode(s) for s in json.loads((folder / "snap-vproof.json").read_text()))
    f = json.loads((folder / "snap-request.json").read_text())
    req = ProofRequest("bench", ProofKind.SNAP_DEALS_UPDATE, registered_proof=f["registered_proof"],
                       vanilla_proofs=blobs, comm_r_old=bytes.fromhex(f["comm_r_old"]),
                       comm_r_new=bytes.fromhex(f["comm_r_new"]), comm_d_new=bytes.fromhex(f["comm_d_new"]))
    return f"{len(blobs)} PartitionProofs of {len(blobs[0]):,} bytes", lambda: snap_job(req)


def main(what: str, plan: Callable[[], object], runs: int, profile: bool) -> None:
    plan()  # warm-up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        plan()
        times.append(time.perf_counter() - t)
    print(f"{what}: plan {', '.join(f'{x:.3f}' for x in times)} s, median {statistics.median(times):.3f} s")
    if profile:
        pr = cProfile.Profile()
        pr.enable()
        plan()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=["porep", "snap"])
    ap.add_argument("path", type=Path, help="the C1 JSON (porep) or snap_seal's output folder (snap)")
    ap.add_argument("runs", nargs="?", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--processes", type=int, default=0,
                    help="porep: check the partitions in this many planning processes (the daemon's provider: "
                         "min(10, cores) where it proves 32 GiB or larger sectors); 0: in turn")
    ap.add_argument("--envelope", action="store_true", help="porep: the C1 in Curio's envelope, as the daemon gets it")
    a = ap.parse_args()
    plan = porep_plan(a.path, a.processes, a.envelope) if a.kind == "porep" else snap_plan(a.path)
    main(*plan, a.runs, a.profile)
