"""`cuzk pce check`: does every partition of a PoRep C1 satisfy every row of its pre-compiled
circuit? The witness of each partition (filecoin/witness), then A z * B z = C z on a backend: on
CUDA the rows are evaluated and compared on the device (a 32 GiB partition's a, b, c are 12.5 GB
that never cross PCIe), elsewhere a, b, c come back and are compared on the host.

    cuzk pce check --c1 c1.json [--param-cache DIR] [--backend cuda] [--partitions 0,3]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["PartitionCheck", "check_partitions", "add_check_parser"]


@dataclass(frozen=True)
class PartitionCheck:
    """One partition's result: rows that fail (0: the witness satisfies the circuit) and timings."""

    partition: int
    rows: int
    unsatisfied: int
    first_unsatisfied: int | None
    witness_s: float
    check_s: float


def _violations(backend, handle, z) -> tuple[int, int | None]:
    check = getattr(backend, "check_r1cs", None)
    if callable(check):
        return check(handle, z)
    from cuzk_plugin.backends.cpu.r1cs_eval import unsatisfied_rows

    rows = unsatisfied_rows(*backend.evaluate_r1cs(handle, z))
    return int(rows.size), (int(rows[0]) if rows.size else None)


def check_partitions(c1: bytes, param_cache: Path, backend_name: str, partitions: list[int] | None = None):
    """Yield a :class:`PartitionCheck` per partition of the C1 (all, or ``partitions``)."""
    import numpy as np

    from cuzk_plugin.adapters.curio.porep.job import ensure_porep_pce, porep_partitions
    from cuzk_plugin.backends.registry import get_backend
    from cuzk_plugin.formats.pce import load_pce

    job = porep_partitions(c1)
    pce = load_pce(ensure_porep_pce(job.circuit_id, param_cache))
    backend = get_backend(backend_name)
    handle = backend.load_circuit(pce)
    try:
        for k in partitions if partitions is not None else range(job.num_partitions):
            if not 0 <= k < job.num_partitions:
                raise ValueError(f"--partitions: {k} is not a partition of this C1 (0-{job.num_partitions - 1})")
            t0 = time.perf_counter()
            inputs, aux = job.assignment(k)
            z = np.concatenate([inputs, aux])
            del aux
            t1 = time.perf_counter()
            count, first = _violations(backend, handle, z)
            yield PartitionCheck(k, pce.num_constraints, count, first, t1 - t0, time.perf_counter() - t1)
    finally:
        handle.release()


def cmd_pce_check(args: argparse.Namespace) -> int:
    parts = [int(x) for x in args.partitions.split(",")] if args.partitions else None
    failed = 0
    for r in check_partitions(Path(args.c1).read_bytes(), Path(args.param_cache).expanduser(), args.backend, parts):
        failed += r.unsatisfied > 0
        if args.json:
            print(json.dumps(asdict(r)))
        else:
            verdict = "every row holds" if not r.unsatisfied else f"{r.unsatisfied:,} rows fail, first {r.first_unsatisfied}"
            print(f"partition {r.partition}: {r.rows:,} rows, {verdict}; witness {r.witness_s:.2f}s, "
                  f"check on {args.backend} {r.check_s:.2f}s", flush=True)
    return 1 if failed else 0


def add_check_parser(psub, backends: list[str]) -> None:
    """``cuzk pce check`` under ``cuzk pce``."""
    pc = psub.add_parser("check", help="check every partition of a PoRep C1 against its pre-compiled circuit")
    pc.add_argument("--c1", required=True, help="a C1 output JSON or Curio's envelope")
    pc.add_argument("--param-cache", default="/var/tmp/filecoin-proof-parameters",
                    help="where the pre-compiled circuit is (recorded there if missing)")
    pc.add_argument("--backend", default="cpu", choices=backends, help="where a, b, c are evaluated (default cpu)")
    pc.add_argument("--partitions", help="comma-separated partition indices (default: all)")
    pc.add_argument("--json", action="store_true", help="one JSON object a partition")
    pc.set_defaults(func=cmd_pce_check)
