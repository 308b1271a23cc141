"""``cuzk-bench``: benchmark entry point. Each subcommand lives in its own module and
registers itself through an ``add_*_command(subparsers)`` function; ``kernels`` is the first."""

from __future__ import annotations

import argparse
import logging
import sys

from cuzk_plugin.cli.bench_daemon import DEFAULT_ADDR, add_daemon_commands
from cuzk_plugin.cli.bench_kernels import add_kernels_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cuzk-bench", description="cuzk-plugin benchmarks")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("-a", "--addr", default=DEFAULT_ADDR,
                        help=f"daemon address for the daemon commands, host:port or unix:///path (default {DEFAULT_ADDR}); "
                             "also accepted after the subcommand")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_kernels_command(subparsers)
    add_daemon_commands(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
