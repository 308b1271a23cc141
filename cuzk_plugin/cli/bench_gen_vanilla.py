"""``cuzk-bench gen-vanilla {winning-post,window-post,snap-prove}``: test inputs for the daemon, as
cuzk-bench's gen-vanilla makes them, but from this package's test sealers instead of a sealed
sector on disk. The sealers are test fixtures, which no module of the package imports: the
command runs ``python -m cuzk_plugin.filecoin.fixtures.gen_vanilla`` with the same arguments
(its --help lists them); the last line printed is the ``cuzk-bench single`` command that proves
what it wrote."""

from __future__ import annotations

import argparse
import subprocess
import sys

__all__ = ["add_gen_vanilla_command"]

FIXTURE = "cuzk_plugin.filecoin.fixtures.gen_vanilla"


def cmd_gen_vanilla(args: argparse.Namespace) -> int:
    return subprocess.run([sys.executable, "-m", FIXTURE, args.what, *args.rest], check=False).returncode


def add_gen_vanilla_command(subparsers) -> None:
    """Register ``gen-vanilla KIND [ARGS]`` on ``cuzk-bench``."""
    p = subparsers.add_parser("gen-vanilla", help="make PoSt / SnapDeals vanilla proofs of TEST sectors (inputs for single)",
                              description=f"Runs python -m {FIXTURE} KIND ARGS (see its --help).")
    p.add_argument("what", choices=("winning-post", "window-post", "snap-prove"), metavar="KIND",
                   help="winning-post | window-post | snap-prove")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="--out FILE [--sector-size 2KiB] [--sparse] ...")
    p.set_defaults(handler=cmd_gen_vanilla)
