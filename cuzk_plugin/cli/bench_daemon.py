"""`cuzk-bench` commands that drive a running daemon over cuzk.v1.

    cuzk-bench single  -a ADDR [--log2 K --partitions N | --c1 FILE | --circuit ID --wtns F...]
    cuzk-bench batch   -a ADDR -c COUNT -j CONCURRENCY [--log2 K --partitions N] [--plot out.png]
    cuzk-bench status  -a ADDR        cuzk-bench metrics -a ADDR
    cuzk-bench preload -a ADDR CIRCUIT_ID      cuzk-bench evict -a ADDR CIRCUIT_ID
    cuzk-bench demo    (starts a daemon on the embedded default config, runs a batch, stops it)

ADDR is ``host:port`` or ``unix:///path`` (default: $CUZK_ADDR, else unix:///run/curio/cuzk.sock).
Every command takes ``--json`` for machine-readable output.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cuzk_plugin.server.batch import format_record, print_summary, run_batch, summarize

DEFAULT_ADDR = os.environ.get("CUZK_ADDR", "unix:///run/curio/cuzk.sock")
TIER_NAMES = {0: "HOT", 1: "WARM", 2: "COLD"}


# -- requests -----------------------------------------------------------------------------------
def build_request(args: argparse.Namespace, request_id: str, index: int = 0):
    """A SubmitProofRequest from the command line (synthetic unless --c1 / --circuit is given)."""
    from cuzk_plugin.server.proto import cuzk_pb2 as pb

    priority = pb.Priority.Value(args.priority.upper()) if args.priority else 0
    kind = getattr(args, "type", None)
    if kind == "porep" and not getattr(args, "c1", None):
        raise SystemExit("cuzk-bench: -t porep needs --c1 FILE (a C1 output JSON or Curio's envelope)")
    if kind == "registered" and not getattr(args, "circuit", None):
        raise SystemExit("cuzk-bench: -t registered needs --circuit ID --wtns FILE...")
    if getattr(args, "c1", None):
        raw = Path(args.c1).read_bytes()
        envelope = raw if raw.lstrip().startswith(b'{"SectorNum"') else json.dumps(
            {"SectorNum": args.sector, "Phase1Out": base64.b64encode(raw).decode(), "SectorSize": 32 << 30}).encode()
        return pb.SubmitProofRequest(request_id=request_id, proof_kind=pb.POREP_SEAL_COMMIT, priority=priority,
                                     vanilla_proof=envelope, sector_number=args.sector, miner_id=args.miner)
    if getattr(args, "circuit", None):
        witnesses = [Path(w).read_bytes() for w in args.wtns]
        return pb.SubmitProofRequest(request_id=request_id, proof_kind=pb.REGISTERED_CIRCUIT, priority=priority,
                                     registered=pb.RegisteredCircuitInput(circuit_id=args.circuit, witnesses=witnesses))
    return pb.SubmitProofRequest(
        request_id=request_id, proof_kind=pb.SYNTHETIC, priority=priority,
        synthetic=pb.SyntheticInput(log2_constraints=args.log2, partitions=args.partitions, seed=args.seed + 1000 * index))


# -- commands -----------------------------------------------------------------------------------
def cmd_single(args: argparse.Namespace) -> int:
    records, wall = asyncio.run(run_batch(args.addr, functools.partial(build_request, args), 1, 1, False))
    r = records[0]
    if args.out and r.proof:
        Path(args.out).write_bytes(r.proof)
    if args.json:
        print(json.dumps({k: v for k, v in asdict(r).items() if k != "proof"}, indent=2))
    else:
        print(format_record(r))
    return 0 if r.status == "COMPLETED" else 1


def cmd_batch(args: argparse.Namespace) -> int:
    show = not args.json and (args.progress or sys.stderr.isatty())
    records, wall = asyncio.run(run_batch(args.addr, functools.partial(build_request, args), args.count, args.concurrency, show))
    summary = summarize(records, wall, args.partitions)
    if args.plot:
        from cuzk_plugin.cli.bench_daemon_plot import plot_timeline

        plot_timeline(records, args.plot, title=f"{args.count} jobs, {args.concurrency} concurrent")
        summary["plot"] = args.plot
    if args.json:
        summary["records"] = [{k: v for k, v in asdict(r).items() if k not in ("proof", "timeline")} for r in records]
        print(json.dumps(summary, indent=2))
    else:
        print_summary(summary)
        if args.plot:
            print(f"timeline: {args.plot}")
    return 0 if summary["failed"] == 0 else 1


def _unary(args: argparse.Namespace, rpc: str, request):
    from cuzk_plugin.server.client import sync_channel
    from cuzk_plugin.server.proto import cuzk_pb2_grpc

    with sync_channel(args.addr) as channel:
        return getattr(cuzk_pb2_grpc.ProvingEngineStub(channel), rpc)(request, timeout=args.timeout)


def cmd_status(args: argparse.Namespace) -> int:
    from google.protobuf.json_format import MessageToDict

    from cuzk_plugin.server.proto import cuzk_pb2 as pb

    st = _unary(args, "GetStatus", pb.GetStatusRequest())
    if args.json:
        print(json.dumps(MessageToDict(st, always_print_fields_with_no_presence=True), indent=2))
        return 0
    print(f"backend: {st.backend}")
    print(f"uptime {st.uptime_seconds} s; proofs completed {st.total_proofs_completed}, failed {st.total_proofs_failed}, "
          f"cancelled {st.total_proofs_cancelled}; key memory {st.pinned_memory_bytes / 1e6:.1f} of "
          f"{st.pinned_memory_limit_bytes / 1e6:.1f} MB")
    for g in st.gpus:
        busy = f"busy with {g.current_job_id} ({g.current_proof_kind})" if g.current_job_id else "idle"
        print(f"  gpu {g.ordinal}: {g.name}, {g.vram_free_bytes / 1e9:.1f} of {g.vram_total_bytes / 1e9:.1f} GB free, {busy}")
    for s in st.loaded_srs:
        print(f"  srs {s.circuit_id}: {TIER_NAMES.get(s.tier, s.tier)}, {s.size_bytes / 1e6:.1f} MB, refs {s.ref_count}")
    for q in st.queues:
        print(f"  queue {q.proof_kind}: {q.pending} pending, {q.in_progress} in progress")
    return 0


def cmd_preload(args: argparse.Namespace) -> int:
    from cuzk_plugin.server.proto import cuzk_pb2 as pb

    r = _unary(args, "PreloadSRS", pb.PreloadSrsRequest(circuit_id=args.circuit_id))
    out = {"circuit_id": args.circuit_id, "already_loaded": r.already_loaded, "load_time_ms": r.load_time_ms}
    print(json.dumps(out) if args.json else
          f"{args.circuit_id}: {'already loaded' if r.already_loaded else 'loaded'} in {r.load_time_ms} ms")
    return 0


def cmd_evict(args: argparse.Namespace) -> int:
    from cuzk_plugin.server.proto import cuzk_pb2 as pb

    r = _unary(args, "EvictSRS", pb.EvictSrsRequest(circuit_id=args.circuit_id))
    out = {"circuit_id": args.circuit_id, "was_loaded": r.was_loaded, "freed_bytes": r.freed_bytes}
    print(json.dumps(out) if args.json else
          f"{args.circuit_id}: {'evicted, freed %d bytes' % r.freed_bytes if r.was_loaded else 'was not loaded'}")
    return 0


def cmd_metrics(args: argparse.Namespace) -> int:
    from cuzk_plugin.server.proto import cuzk_pb2 as pb

    text = _unary(args, "GetMetrics", pb.GetMetricsRequest()).prometheus_text
    print(json.dumps({"prometheus_text": text}) if args.json else text, end="" if not args.json else "\n")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from cuzk_plugin.server.demo import run_demo

    return run_demo(log2=args.log2, partitions=args.partitions, count=args.count, concurrency=args.concurrency,
                    backend=args.backend, json_out=args.json)


# -- argument parsing ------------------------------------------------------------------------------
def _common(p: argparse.ArgumentParser, *, addr: bool = True) -> None:
    if addr:
        # SUPPRESS: when absent here, the top-level `cuzk-bench -a ADDR` value stands.
        p.add_argument("-a", "--addr", default=argparse.SUPPRESS, help=f"daemon address, host:port or unix:///path (default {DEFAULT_ADDR})")
        p.add_argument("--timeout", type=float, default=30.0, help="seconds, for the status/preload/evict/metrics calls")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _proof_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--type", choices=["synthetic", "porep", "registered"],
                   help="proof type (the reference's -t); implied by --c1 (porep) or --circuit (registered)")
    p.add_argument("--log2", type=int, default=10, help="synthetic: 2^K constraints per partition (default 10)")
    p.add_argument("--partitions", type=int, default=1, help="synthetic: partitions per proof (default 1)")
    p.add_argument("--seed", type=int, default=1, help="synthetic: witness seed")
    p.add_argument("--priority", choices=["low", "normal", "high", "critical"], help="default: the kind's")
    p.add_argument("--c1", help="PoRep: a C1 output JSON (or Curio's envelope) instead of a synthetic job")
    p.add_argument("--sector", type=int, default=0, help="PoRep: sector number")
    p.add_argument("--miner", type=int, default=1000, help="PoRep: miner id")
    p.add_argument("--circuit", help="a registered circuit id (with --wtns, one file per partition)")
    p.add_argument("--wtns", nargs="+", default=[], help="circom witnesses for --circuit")


def add_daemon_commands(subparsers) -> None:
    """Register single, batch, status, preload, evict, metrics and demo on ``cuzk-bench``."""
    p = subparsers.add_parser("single", help="one proof through a running daemon")
    _common(p)
    _proof_args(p)
    p.add_argument("--out", help="write the proof bytes here")
    p.set_defaults(handler=cmd_single)

    p = subparsers.add_parser("batch", help="COUNT proofs, CONCURRENCY at a time: throughput and latency")
    _common(p)
    _proof_args(p)
    p.add_argument("-c", "--count", type=int, default=10)
    p.add_argument("-j", "--concurrency", type=int, default=2)
    p.add_argument("--plot", help="write a PNG timeline of the batch (stages per partition and worker)")
    p.add_argument("--progress", action="store_true", help="show the progress bar even when stderr is not a terminal")
    p.set_defaults(handler=cmd_batch)

    for name, helptext, handler in (("status", "GetStatus", cmd_status), ("metrics", "Prometheus metrics", cmd_metrics)):
        p = subparsers.add_parser(name, help=helptext)
        _common(p)
        p.set_defaults(handler=handler)
    for name, helptext, handler in (("preload", "load a key before it is needed (PreloadSRS)", cmd_preload),
                                    ("evict", "free a loaded key (EvictSRS)", cmd_evict)):
        p = subparsers.add_parser(name, help=helptext)
        _common(p)
        p.add_argument("circuit_id", help="e.g. synthetic-k10, porep-32g, or a registered circuit")
        p.set_defaults(handler=handler)

    p = subparsers.add_parser("demo", help="start a daemon on the embedded default config, prove a small batch, stop it")
    _common(p, addr=False)
    p.add_argument("--log2", type=int, default=10, help="2^K constraints per partition (default 10)")
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("-c", "--count", type=int, default=4, help="proofs (default 4)")
    p.add_argument("-j", "--concurrency", type=int, default=2)
    p.add_argument("--backend", default="auto")
    p.set_defaults(handler=cmd_demo)
