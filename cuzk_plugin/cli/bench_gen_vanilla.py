"""``cuzk-bench gen-vanilla {winning-post,window-post,snap-prove}``: test inputs for the daemon, as
cuzk-bench's gen-vanilla makes them, but from this package's test sealers instead of a sealed
sector on disk: a 2 KiB sector sealed here, or (``--sparse``) a test-fixture sector of any size.

The vanilla proofs are written as cuzk-bench's ``--vanilla`` file (a JSON list of base64
strings); the last line printed is the ``cuzk-bench single`` command that proves them. These
are TEST inputs: their sectors exist nowhere else, and only a test key or Filecoin's parameters
of that size prove them."""

from __future__ import annotations

import argparse
import base64
import json
import os
import time
from pathlib import Path

from cuzk_plugin.cli.bench_daemon import ZERO_RANDOMNESS, BenchInputError, hex32

__all__ = ["add_gen_vanilla_command"]


def _write_json_list(path: str, blobs: list[bytes]) -> None:
    out = Path(path)
    if not out.parent.is_dir():
        raise BenchInputError(f"--out {path}: folder {out.parent} does not exist")
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps([base64.b64encode(b).decode() for b in blobs]))
    os.replace(tmp, out)


def _sector_size(text: str) -> int:
    from cuzk_plugin.filecoin.post_seal import parse_sector_size

    try:
        return parse_sector_size(text)
    except ValueError as exc:
        raise BenchInputError(f"--sector-size: {exc}") from None


def cmd_gen_post(args: argparse.Namespace) -> int:
    from cuzk_plugin.filecoin.post_proofs import POST_PROOFS, PostKind
    from cuzk_plugin.filecoin.post_seal import ProvenSector, mask_randomness, post_test_sectors, post_vanilla_proofs
    from cuzk_plugin.filecoin.proofs import SECTOR_SIZE_NAMES
    from cuzk_plugin.filecoin.seal import seal

    kind = PostKind.WINNING if args.what == "winning-post" else PostKind.WINDOW
    size = _sector_size(args.sector_size)
    name = SECTOR_SIZE_NAMES[size]
    if size != 2 << 10 and not args.sparse:
        raise BenchInputError(f"--sector-size {name}: only 2 KiB sectors are sealed here; add --sparse for a test fixture")
    proof = next(p for p in POST_PROOFS if p.kind is kind and p.sector_size == size
                 and (kind is PostKind.WINNING or p.api_version == "1.2.0"))
    sectors = 1 if kind is PostKind.WINNING else args.sectors
    if not 1 <= sectors <= proof.shape.vanilla_sectors:
        raise BenchInputError(f"--sectors {sectors}: a {name} {args.what} proves 1 to {proof.shape.vanilla_sectors}")
    randomness = mask_randomness(args.randomness)
    ids = list(range(args.sector_num, args.sector_num + sectors))
    t0 = time.perf_counter()
    if args.sparse:
        proven = post_test_sectors(size, ids, args.seed)
    else:
        proven = [ProvenSector(n, seal("StackedDrg2KiBV1_1", miner_id=args.miner_id, sector_id=n, data_seed=args.seed + n))
                  for n in ids]
    vanilla = post_vanilla_proofs(proof, proven, randomness)
    _write_json_list(args.out, vanilla)
    flag = "winning" if kind is PostKind.WINNING else "wpost"
    print(f"wrote {args.out}: {proof.go_name}, {len(vanilla)} vanilla proof(s) of TEST sectors "
          f"{'(sparse fixtures) ' if args.sparse else ''}in {time.perf_counter() - t0:.1f} s")
    print(f"cuzk-bench single -t {flag} --vanilla {args.out} --registered-proof {proof.number} "
          f"--sector-num {args.sector_num} --miner-id {args.miner_id} --randomness {randomness.hex()}")
    return 0


def cmd_gen_snap(args: argparse.Namespace) -> int:
    from cuzk_plugin.filecoin.seal import seal
    from cuzk_plugin.filecoin.snap_seal import snap_update, sparse_snap_update, vanilla_proofs

    size = _sector_size(args.sector_size)
    t0 = time.perf_counter()
    if args.sparse:
        from cuzk_plugin.filecoin.sparse_seal import seal_proof_for_size, sparse_seal

        sparse = sparse_seal(seal_proof_for_size(size).name, miner_id=args.miner_id, sector_id=args.sector_num)
        update = sparse_snap_update(sparse, data_seed=args.seed + 1)
    elif size == 2 << 10:
        sector = seal("StackedDrg2KiBV1_1", miner_id=args.miner_id, sector_id=args.sector_num, data_seed=args.seed)
        update = snap_update(sector, data_seed=args.seed + 1)  # type: ignore[assignment]
    else:
        raise BenchInputError(f"--sector-size {args.sector_size}: only 2 KiB sectors are sealed here; add --sparse")
    blobs = vanilla_proofs(update)
    _write_json_list(args.out, blobs)
    print(f"wrote {args.out}: {len(blobs)} SnapDeals partition proof(s) of a TEST sector in {time.perf_counter() - t0:.1f} s")
    print(f"cuzk-bench single -t snap --vanilla {args.out} --registered-proof {update.registered_proof} "
          f"--sector-num {args.sector_num} --miner-id {args.miner_id} --comm-r-old {update.comm_r_old.hex()} "
          f"--comm-r-new {update.comm_r_new.hex()} --comm-d-new {update.comm_d_new.hex()}")
    return 0


def add_gen_vanilla_command(subparsers) -> None:
    """Register ``gen-vanilla {winning-post,window-post,snap-prove}`` on ``cuzk-bench``."""
    p = subparsers.add_parser("gen-vanilla", help="make PoSt / SnapDeals vanilla proofs of TEST sectors (inputs for single)")
    kinds = p.add_subparsers(dest="what", required=True, metavar="KIND")
    for what, helptext, handler in (("winning-post", "WinningPoSt vanilla proof of one test sector", cmd_gen_post),
                                    ("window-post", "WindowPoSt vanilla proofs of --sectors test sectors", cmd_gen_post),
                                    ("snap-prove", "SnapDeals partition proofs of an updated test sector", cmd_gen_snap)):
        k = kinds.add_parser(what, help=helptext)
        k.add_argument("--out", required=True, help="the JSON list of base64 vanilla proofs to write (cuzk-bench's --vanilla)")
        k.add_argument("--sector-size", default="2KiB", help="2KiB (default, sealed here); larger sizes with --sparse")
        k.add_argument("--sparse", action="store_true", help="a test-fixture sector of any size instead of sealing 2 KiB")
        k.add_argument("--sector-num", "--sector", dest="sector_num", type=int, default=1, help="(first) sector number (default 1)")
        k.add_argument("--miner-id", type=int, default=1000, help="miner actor id (default 1000)")
        k.add_argument("--seed", type=int, default=0, help="sector data seed (default 0)")
        if what != "snap-prove":
            k.add_argument("--randomness", type=hex32, default=ZERO_RANDOMNESS, metavar="HEX",
                           help="32-byte challenge randomness, hex (default zeros, cuzk-bench's default)")
        if what == "window-post":
            k.add_argument("--sectors", type=int, default=1, help="sectors in the partition (default 1; 2 at 2 KiB)")
        k.set_defaults(handler=handler)
