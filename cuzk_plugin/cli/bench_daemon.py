"""`cuzk-bench` commands that drive a running daemon over cuzk.v1, with cuzk-bench's flags.

    cuzk-bench single  -a ADDR -t porep --c1 FILE | -t snap|wpost|winning --vanilla FILE ... | --log2 K --partitions N
    cuzk-bench batch   -a ADDR -c COUNT -j CONCURRENCY [the same request flags] [--plot out.png]
    cuzk-bench status  -a ADDR        cuzk-bench metrics -a ADDR
    cuzk-bench preload -a ADDR -c CIRCUIT_ID      cuzk-bench evict -a ADDR -c CIRCUIT_ID
    cuzk-bench demo    (starts a daemon on the embedded default config, runs a batch, stops it)

ADDR is ``host:port``, ``http://host:port`` or ``unix:///path`` (default: $CUZK_ADDR, else
unix:///run/curio/cuzk.sock). Every command takes ``--json`` for machine-readable output.

``--vanilla FILE`` holds PoSt / SnapDeals vanilla proofs as Curio sends them (``vanilla_proofs``:
bincode, one per sector or partition): either the raw bytes of one proof, or several as a JSON
list of base64 strings (``["AAEC...", "..."]``). The flag may be repeated; the proofs are sent
in the order given.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import functools
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cuzk_plugin.server.batch import format_record, print_summary, run_batch, summarize

DEFAULT_ADDR = os.environ.get("CUZK_ADDR", "unix:///run/curio/cuzk.sock")
TIER_NAMES = {0: "HOT", 1: "WARM", 2: "COLD"}
#: -t values: cuzk-bench's (porep, snap, wpost, winning) and ours (synthetic, registered)
PROOF_TYPES = ("porep", "snap", "wpost", "winning", "synthetic", "registered")
#: cuzk-bench's other spellings of -t
PROOF_TYPE_ALIASES = {"porep-c2": "porep", "seal-commit": "porep", "snap-deals": "snap", "update": "snap",
                      "window-post": "wpost", "windowpost": "wpost", "winning-post": "winning", "winningpost": "winning"}
#: --randomness when wpost/winning gives none (cuzk-bench's default): 32 zero bytes
ZERO_RANDOMNESS = bytes(32)
#: registered_proof when -t snap|wpost|winning is given without --registered-proof: the 32 GiB ones
#: (update 3 StackedDrg32GiBV1; Window 13 StackedDrgWindow32GiBV1_1; Winning 3 StackedDrgWinning32GiBV1)
DEFAULT_REGISTERED = {"snap": 3, "wpost": 13, "winning": 3}
#: one --vanilla file at most this big (a 32 GiB WindowPoSt partition is ~ 2349 sector proofs of ~ 40 KB)
MAX_VANILLA_FILE = 256 << 20


class BenchInputError(ValueError):
    """A request flag or input file that cannot become a request (names the flag or file)."""


def normalize_address(addr: str) -> str:
    """``http://host:port`` (cuzk's form) -> ``host:port``; ``unix:///path`` and ``host:port`` as they are."""
    if addr.startswith("http://"):
        rest = addr.removeprefix("http://").rstrip("/")
        if not rest or "/" in rest:
            raise BenchInputError(f"-a {addr}: expected http://host:port")
        return rest
    if addr.startswith("https://"):
        raise BenchInputError(f"-a {addr}: TLS addresses are not supported here; give host:port or unix:///path")
    return addr


def hex32(text: str) -> bytes:
    """32 bytes from 64 hex digits (``0x`` allowed): --randomness, --comm-r-old, --comm-r-new, --comm-d-new."""
    raw = text.removeprefix("0x")
    try:
        value = bytes.fromhex(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not hex") from None
    if len(value) != 32:
        raise argparse.ArgumentTypeError(f"expected 32 bytes (64 hex digits), got {len(value)}")
    return value


def proof_type_name(text: str) -> str:
    """-t as cuzk-bench takes it (case-insensitive, its aliases too) -> our canonical name."""
    name = text.strip().lower()
    return PROOF_TYPE_ALIASES.get(name, name)


def read_vanilla(paths: list[str]) -> list[bytes]:
    """The vanilla proofs in ``paths``: each file a JSON list of base64 strings, or one raw proof."""
    proofs: list[bytes] = []
    for path in paths:
        p = Path(path)
        size = p.stat().st_size
        if size > MAX_VANILLA_FILE:
            raise BenchInputError(f"--vanilla {path}: {size:,} bytes, more than {MAX_VANILLA_FILE:,}")
        raw = p.read_bytes()
        if not raw:
            raise BenchInputError(f"--vanilla {path}: empty")
        if raw.lstrip()[:1] == b"[":
            try:
                items = json.loads(raw)
                if not all(isinstance(x, str) for x in items):
                    raise ValueError("not every element is a string")
                decoded = [base64.b64decode(x, validate=True) for x in items]
            except (ValueError, binascii.Error) as exc:
                raise BenchInputError(f"--vanilla {path}: not a JSON list of base64 strings ({exc})") from None
            if not decoded or any(not d for d in decoded):
                raise BenchInputError(f"--vanilla {path}: an empty list or an empty proof")
            proofs += decoded
        else:
            proofs.append(raw)
    return proofs


def proof_type(args: argparse.Namespace) -> str:
    """-t, or what the other flags imply: --c1 porep, --circuit registered, else synthetic."""
    if getattr(args, "type", None):
        return args.type
    if getattr(args, "c1", None):
        return "porep"
    if getattr(args, "circuit", None):
        return "registered"
    return "synthetic"


def check_request_args(args: argparse.Namespace) -> str | None:
    """What the request flags lack for their -t (a message for parser.error), or None."""
    kind = proof_type(args)
    vanilla = getattr(args, "vanilla", None) or []
    if kind == "porep" and not (getattr(args, "c1", None) or len(vanilla) == 1):
        return "-t porep needs --c1 FILE (a C1 output JSON or Curio's envelope)"
    if kind == "registered" and not (getattr(args, "circuit", None) and args.wtns):
        return "-t registered needs --circuit ID --wtns FILE..."
    if kind in ("snap", "wpost", "winning") and not vanilla:
        return f"-t {kind} needs --vanilla FILE (the vanilla proofs Curio sends)"
    if kind == "snap" and not (args.comm_r_old and args.comm_r_new and args.comm_d_new):
        return "-t snap needs --comm-r-old, --comm-r-new and --comm-d-new (32 bytes hex each)"
    return None


# -- requests -----------------------------------------------------------------------------------
def build_request(args: argparse.Namespace, request_id: str, index: int = 0):
    """A SubmitProofRequest from the command line (synthetic unless -t, --c1 or --circuit say otherwise)."""
    from cuzk_plugin.server.proto import cuzk_pb2 as pb

    problem = check_request_args(args)
    if problem:
        raise SystemExit(f"cuzk-bench: {problem}")
    priority = pb.Priority.Value(args.priority.upper()) if args.priority else pb.PRIORITY_UNSPECIFIED
    kind = proof_type(args)
    sector = getattr(args, "sector", 0)
    miner = getattr(args, "miner", 1000)
    if kind == "porep":
        envelope = _porep_envelope(str(args.c1 or args.vanilla[0]), sector)
        return pb.SubmitProofRequest(request_id=request_id, proof_kind=pb.POREP_SEAL_COMMIT, priority=priority,
                                     vanilla_proof=envelope, sector_number=sector, miner_id=miner)
    if kind in ("snap", "wpost", "winning"):
        registered = args.registered_proof if args.registered_proof is not None else DEFAULT_REGISTERED[kind]
        common: dict[str, Any] = dict(request_id=request_id, priority=priority, registered_proof=registered, sector_number=sector,
                      miner_id=miner, vanilla_proofs=read_vanilla(args.vanilla))
        if kind == "snap":
            return pb.SubmitProofRequest(proof_kind=pb.SNAP_DEALS_UPDATE, comm_r_old=args.comm_r_old,
                                         comm_r_new=args.comm_r_new, comm_d_new=args.comm_d_new, **common)
        if kind == "wpost":
            return pb.SubmitProofRequest(proof_kind=pb.WINDOW_POST_PARTITION, randomness=args.randomness,
                                         partition_index=args.partition_index, **common)
        return pb.SubmitProofRequest(proof_kind=pb.WINNING_POST, randomness=args.randomness, **common)
    if kind == "registered":
        witnesses = [Path(w).read_bytes() for w in args.wtns]
        return pb.SubmitProofRequest(request_id=request_id, proof_kind=pb.REGISTERED_CIRCUIT, priority=priority,
                                     registered=pb.RegisteredCircuitInput(circuit_id=args.circuit, witnesses=witnesses))
    return pb.SubmitProofRequest(
        request_id=request_id, proof_kind=pb.SYNTHETIC, priority=priority,
        synthetic=pb.SyntheticInput(log2_constraints=args.log2, partitions=args.partitions, seed=args.seed + 1000 * index))


@functools.cache
def _porep_envelope(path: str, sector: int) -> bytes:
    """Curio's envelope of the C1 at ``path`` (as is if it is one already), made once: for a
    32 GiB C1 it takes ~2 s, which before every request of a batch delayed the ones already
    sent (the client's event loop builds them)."""
    raw = Path(path).read_bytes()
    if raw.lstrip().startswith(b'{"SectorNum"'):
        return raw
    from cuzk_plugin.adapters.curio.porep.c1 import curio_envelope

    return curio_envelope(raw, sector, _c1_sector_size(raw))


def _c1_sector_size(raw: bytes) -> int:
    """The sector size of a bare C1 JSON (its registered_proof), for the envelope; 32 GiB if unreadable."""
    from cuzk_plugin.filecoin.proofs import seal_proof_by_name

    try:
        return seal_proof_by_name(json.loads(raw)["registered_proof"]).sector_size
    except (ValueError, KeyError, TypeError):
        return 32 << 30


# -- client-side verification ----------------------------------------------------------------------
def request_public_inputs(req) -> list[list[int]]:
    """Each partition's public inputs (ONE excluded) as the client derives them from its own request:
    PoRep from the C1, PoSt from the vanilla proofs and randomness, SnapDeals from the three
    commitments and each partition's k_and_h_select."""
    from cuzk_plugin.server.proto import cuzk_pb2 as pb

    if req.proof_kind == pb.POREP_SEAL_COMMIT:
        from cuzk_plugin.adapters.curio.porep.job import porep_partitions

        job = porep_partitions(req.vanilla_proof)
        return [job.public_inputs(k) for k in range(job.num_partitions)]
    if req.proof_kind in (pb.WINDOW_POST_PARTITION, pb.WINNING_POST):
        from cuzk_plugin.adapters.curio.post.job import PostJob

        post = PostJob.from_fields(req.registered_proof, req.randomness, list(req.vanilla_proofs), req.partition_index)
        return [list(post.public_inputs)]
    if req.proof_kind == pb.SNAP_DEALS_UPDATE:
        from cuzk_plugin.adapters.curio.snap.job import snap_job
        from cuzk_plugin.server.convert import request_from_proto

        snap = snap_job(request_from_proto(req))
        return [snap.public_inputs(k) for k in range(len(snap.partitions))]
    raise BenchInputError("--verify-vk: only porep, wpost, winning and snap proofs are checked on the client")


def verify_records(records, make_request, vk_path: str) -> list[str]:
    """Check every completed proof against the verifying key in ``vk_path`` (bellperson's `.vk`
    layout, e.g. the one the daemon writes beside a test key made on its lanes); the problems."""
    from cuzk_plugin.formats.params import VerifyingKey
    from cuzk_plugin.formats.proof import decode_proofs
    from cuzk_plugin.groth16.verifier import batch_verify

    vk = VerifyingKey.load(vk_path)
    publics_by_request: dict[bytes, list[list[int]]] = {}
    problems = []
    for i, r in enumerate(sorted(records, key=lambda r: r.job_id)):
        if r.status != "COMPLETED":
            continue
        req = make_request("", i)  # the id aside, requests of one batch repeat: derive once
        digest = req.SerializeToString(deterministic=True)
        if digest not in publics_by_request:
            publics_by_request[digest] = request_public_inputs(req)
        publics = publics_by_request[digest]
        try:
            proofs = decode_proofs(r.proof)
        except ValueError as exc:
            problems.append(f"{r.job_id}: {exc}")
            continue
        if len(proofs) != len(publics):
            problems.append(f"{r.job_id}: {len(proofs)} partition proofs, the request has {len(publics)} partitions")
        elif not batch_verify(vk, proofs, publics):
            problems.append(f"{r.job_id}: a partition proof does not verify against {vk_path}")
    return problems


def _report_verification(args: argparse.Namespace, records) -> bool:
    if not getattr(args, "verify_vk", None):
        return True
    problems = verify_records(records, functools.partial(build_request, args), args.verify_vk)
    done = sum(r.status == "COMPLETED" for r in records)
    print(f"client verification against {args.verify_vk}: {done - len(problems)} of {done} proofs verify",
          file=sys.stderr if args.json else sys.stdout)
    for p in problems:
        print(f"  {p}", file=sys.stderr)
    return not problems


# -- commands -----------------------------------------------------------------------------------
def cmd_single(args: argparse.Namespace) -> int:
    records, _wall = asyncio.run(run_batch(args.addr, functools.partial(build_request, args), 1, 1, False))
    r = records[0]
    verified = _report_verification(args, records)
    if args.out and r.proof:
        Path(args.out).write_bytes(r.proof)
    if args.json:
        print(json.dumps({k: v for k, v in asdict(r).items() if k != "proof"}, indent=2))
    else:
        print(format_record(r))
    return 0 if r.status == "COMPLETED" and verified else 1


def cmd_batch(args: argparse.Namespace) -> int:
    show = not args.json and (args.progress or sys.stderr.isatty())
    records, wall = asyncio.run(run_batch(args.addr, functools.partial(build_request, args), args.count, args.concurrency, show))
    summary = summarize(records, wall, args.partitions)
    verified = _report_verification(args, records)
    if args.timeline_out:
        Path(args.timeline_out).write_text(json.dumps([{k: v for k, v in asdict(r).items() if k != "proof"}
                                                       for r in records], indent=1))
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
    return 0 if summary["failed"] == 0 and verified else 1


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
        if g.device_budget_bytes:
            print(f"    device memory the daemon may use: {g.device_budget_bytes / 1e9:.1f} GB")
        if g.link_bytes_per_s:
            print(f"    host -> device link: {g.link_bytes_per_s / 1e9:.1f} GB/s from page-locked memory (measured at start)")
        for r in g.key_residency:
            where = (f"all resident ({r.resident_bytes / 1e9:.1f} GB)" if not r.streamed else
                     f"resident {'+'.join(r.resident) or 'none'} ({r.resident_bytes / 1e9:.1f} GB), streamed "
                     f"{'+'.join(r.streamed)} ({r.streamed_bytes_per_partition / 1e9:.1f} GB a partition)")
            circuit = ("circuit a, b, c on the host" if r.circuit_on_host else
                       f"circuit streamed by rows ({r.circuit_bytes / 1e9:.1f} GB on the device)" if r.circuit_streamed
                       else f"circuit {r.circuit_bytes / 1e9:.1f} GB" if r.circuit_bytes else "no circuit")
            turns = (", MSMs in turn" if r.msm_in_turn else "") + (", H in two buffers" if r.h_lean else "")
            print(f"    key {r.circuit_id}: {where}; {circuit}; {r.partitions_in_flight} partition(s) in flight{turns}")
    for s in st.loaded_srs:
        print(f"  srs {s.circuit_id}: {TIER_NAMES.get(s.tier, s.tier)}, {s.size_bytes / 1e6:.1f} MB, refs {s.ref_count}")
    if st.host_blocks:
        kept = f", kept ready for {st.host_blocks_kept_for}" if st.host_blocks_kept_for else ""
        print(f"  partition blocks: {st.host_blocks} mapped ({st.host_blocks_free} free), "
              f"{st.host_block_bytes / 1e9:.1f} GB of host memory{kept}")
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
          f"{args.circuit_id}: {f'evicted, freed {r.freed_bytes} bytes' if r.was_loaded else 'was not loaded'}")
    return 0


def cmd_metrics(args: argparse.Namespace) -> int:
    from cuzk_plugin.server.proto import cuzk_pb2 as pb

    text = _unary(args, "GetMetrics", pb.GetMetricsRequest()).prometheus_text
    print(json.dumps({"prometheus_text": text}) if args.json else text, end="" if not args.json else "\n")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from cuzk_plugin.demo import run_daemon_demo

    return run_daemon_demo(log2=args.log2, partitions=args.partitions, count=args.count, concurrency=args.concurrency,
                    backend=args.backend, json_out=args.json)


# -- argument parsing ------------------------------------------------------------------------------
def _common(p: argparse.ArgumentParser, *, addr: bool = True) -> None:
    if addr:
        # SUPPRESS: when absent here, the top-level `cuzk-bench -a ADDR` value stands.
        p.add_argument("-a", "--addr", default=argparse.SUPPRESS,
                       help=f"daemon address, host:port, http://host:port or unix:///path (default {DEFAULT_ADDR})")
        p.add_argument("--timeout", type=float, default=30.0, help="seconds, for the status/preload/evict/metrics calls")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _proof_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--type", type=proof_type_name, choices=PROOF_TYPES, metavar="TYPE",
                   help="proof type: porep, snap, wpost, winning (as cuzk-bench, with its aliases "
                        f"{', '.join(PROOF_TYPE_ALIASES)}), synthetic (default) or registered; "
                        "implied by --c1 (porep) or --circuit (registered)")
    p.add_argument("--c1", help="porep: a C1 output JSON or Curio's envelope {SectorNum, Phase1Out, SectorSize}")
    p.add_argument("--vanilla", action="append", metavar="FILE",
                   help="snap/wpost/winning: vanilla proofs as Curio sends them (one raw bincode proof, or a JSON list "
                        "of base64 strings); repeatable. porep: the C1 file (same as --c1)")
    p.add_argument("--registered-proof", type=int, metavar="N",
                   help="registered proof number as Curio sends it (update 0-4, PoSt 0-14); "
                        "default: the 32 GiB one of the kind (snap 3, wpost 13, winning 3)")
    p.add_argument("--sector-num", "--sector", dest="sector", type=int, default=0, help="sector number (default 0)")
    p.add_argument("--miner-id", "--miner", dest="miner", type=int, default=1000, help="miner actor id (default 1000)")
    p.add_argument("--randomness", type=hex32, metavar="HEX",
                   help="wpost/winning: the 32-byte challenge randomness, hex (default: zeros, with a warning, as cuzk-bench)")
    p.add_argument("--partition-index", "--partition", dest="partition_index", type=int, default=0,
                   help="wpost: the partition index (default 0)")
    p.add_argument("--comm-r-old", type=hex32, metavar="HEX", help="snap: sector key commitment (32 bytes, hex)")
    p.add_argument("--comm-r-new", type=hex32, metavar="HEX", help="snap: new replica commitment (32 bytes, hex)")
    p.add_argument("--comm-d-new", type=hex32, metavar="HEX", help="snap: new data commitment (32 bytes, hex)")
    p.add_argument("--circuit", help="registered: a registered circuit id (with --wtns, one file per partition)")
    p.add_argument("--wtns", nargs="+", default=[], metavar="FILE", help="registered: circom witnesses for --circuit")
    p.add_argument("--log2", type=int, default=10, help="synthetic: 2^K constraints per partition (default 10)")
    p.add_argument("--partitions", type=int, default=1, help="synthetic: partitions per proof (default 1)")
    p.add_argument("--seed", type=int, default=1, help="synthetic: witness seed (default 1)")
    p.add_argument("--priority", choices=["low", "normal", "high", "critical"], help="default: the kind's")
    p.add_argument("--verify-vk", metavar="FILE",
                   help="porep/wpost/winning/snap: check every returned proof on the client against this verifying key "
                        "(a .vk file, or the .params it heads), with public inputs derived from the request")


def _circuit_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("circuit_id", nargs="?", help="e.g. porep-32g, wpost-32g, synthetic-k10 or a registered circuit")
    p.add_argument("-c", "--circuit-id", dest="circuit_flag", metavar="CIRCUIT_ID", help="the same, as cuzk-bench takes it")


def add_daemon_commands(subparsers) -> None:
    """Register single, batch, status, preload, evict, metrics and demo on ``cuzk-bench``."""
    p = subparsers.add_parser("single", help="one proof through a running daemon")
    _common(p)
    _proof_args(p)
    p.add_argument("--out", help="write the proof bytes here (its folder must exist)")
    p.set_defaults(handler=cmd_single)

    p = subparsers.add_parser("batch", help="COUNT proofs, CONCURRENCY at a time: throughput and latency")
    _common(p)
    _proof_args(p)
    p.add_argument("-c", "--count", type=int, default=10, help="proofs (default 10)")
    p.add_argument("-j", "--concurrency", type=int, default=2, help="proofs in flight at once (default 2)")
    p.add_argument("--plot", help="write a PNG timeline of the batch (stages per partition and worker)")
    p.add_argument("--timeline-out", metavar="FILE",
                   help="write every record with its stage timeline as JSON (to plot elsewhere)")
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
        _circuit_arg(p)
        p.set_defaults(handler=handler)

    p = subparsers.add_parser("demo", help="start a daemon on the embedded default config, prove a small batch, stop it")
    _common(p, addr=False)
    p.add_argument("--log2", type=int, default=10, help="2^K constraints per partition (default 10)")
    p.add_argument("--partitions", type=int, default=2, help="partitions per proof (default 2)")
    p.add_argument("-c", "--count", type=int, default=4, help="proofs (default 4)")
    p.add_argument("-j", "--concurrency", type=int, default=2, help="proofs in flight at once (default 2)")
    p.add_argument("--backend", default="auto", choices=["auto", "cuda", "opencl", "cpu"],
                   help="the daemon's backend (default auto: cuda, else opencl, else cpu)")
    p.set_defaults(handler=cmd_demo)


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Checks argparse cannot express; ``parser.error`` (exit 2, one line) on the first problem."""
    if hasattr(args, "addr"):
        try:
            args.addr = normalize_address(args.addr)
        except BenchInputError as exc:
            parser.error(str(exc))
    if args.command in ("preload", "evict"):
        if args.circuit_id and args.circuit_flag and args.circuit_id != args.circuit_flag:
            parser.error(f"{args.command}: two circuit ids ({args.circuit_id}, -c {args.circuit_flag})")
        args.circuit_id = args.circuit_id or args.circuit_flag
        if not args.circuit_id:
            parser.error(f"{args.command} needs a circuit id (-c CIRCUIT_ID), e.g. porep-32g")
    if args.command in ("single", "batch"):
        problem = check_request_args(args)
        if problem:
            parser.error(problem)
        if proof_type(args) in ("wpost", "winning") and not args.randomness:
            args.randomness = ZERO_RANDOMNESS
            print("cuzk-bench: warning: no --randomness; using 32 zero bytes (the vanilla proofs must have been made "
                  "with the same randomness, or the proof fails)", file=sys.stderr)
        if args.verify_vk:
            from cuzk_plugin.formats.params import VerifyingKey

            try:
                VerifyingKey.load(args.verify_vk)
            except (OSError, ValueError) as exc:
                parser.error(f"--verify-vk {args.verify_vk}: {exc}")
        out_flag, out = ("--out", args.out) if args.command == "single" else ("--plot", args.plot)
        if out and not Path(out).parent.is_dir():
            parser.error(f"{out_flag} {out}: folder {Path(out).parent} does not exist")
        if args.command == "batch" and (args.count < 1 or args.concurrency < 1):
            parser.error("-c/--count and -j/--concurrency must be at least 1")
