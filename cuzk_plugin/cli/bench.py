"""``cuzk-bench``: benchmark entry point. Each subcommand lives in its own module and
registers itself through an ``add_*_command(subparsers)`` function: ``kernels`` (backend
kernels), the daemon commands (single, batch, status, metrics, preload, evict, demo), and
``gen-vanilla`` (PoSt and SnapDeals test inputs from the test sealers).

Every failure ends in one line on stderr: exit 2 for a bad flag or input file, 1 when the
daemon cannot be reached or answers with an error (or a proof fails)."""

from __future__ import annotations

import argparse
import sys

from cuzk_plugin.cli.bench_daemon import DEFAULT_ADDR, BenchInputError, add_daemon_commands, check_args
from cuzk_plugin.cli.bench_gen_vanilla import add_gen_vanilla_command
from cuzk_plugin.cli.bench_kernels import add_kernels_command
from cuzk_plugin.cli.logs import LOG_LEVELS, add_log_level_option, configure_logging

EXIT_UNREACHABLE = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    from cuzk_plugin import __version__

    parser = argparse.ArgumentParser(prog="cuzk-bench", description="cuzk-plugin benchmarks")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging (same as --log-level debug)")
    add_log_level_option(parser, default=None, help=f"how much to log: {', '.join(LOG_LEVELS)} (default: warning)")
    parser.add_argument("-a", "--addr", default=DEFAULT_ADDR,
                        help=f"daemon address for the daemon commands, host:port, http://host:port or unix:///path "
                             f"(default {DEFAULT_ADDR}, from $CUZK_ADDR); also accepted after the subcommand")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_kernels_command(subparsers)
    add_daemon_commands(subparsers)
    add_gen_vanilla_command(subparsers)
    return parser


def _rpc_error(args: argparse.Namespace, exc) -> str:
    import grpc

    code = exc.code() if callable(getattr(exc, "code", None)) else None
    details = (exc.details() if callable(getattr(exc, "details", None)) else None) or str(exc)
    details = details.splitlines()[0] if details else ""
    if code == grpc.StatusCode.UNAVAILABLE:
        return (f"cannot reach the daemon at {args.addr} ({details}); is cuzk-daemon running? "
                "(-a ADDR or $CUZK_ADDR)")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"the daemon at {args.addr} did not answer within --timeout {getattr(args, 'timeout', '?')} s"
    return f"{args.command}: the daemon answered {code.name if code else 'an error'}: {details}"


def main(argv: list[str] | None = None) -> int:
    import grpc

    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    configure_logging("debug" if args.verbose else args.log_level or "warning")
    try:
        return int(args.handler(args) or 0)
    except grpc.RpcError as exc:
        print(f"cuzk-bench: {_rpc_error(args, exc)}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except (BenchInputError, OSError, ValueError) as exc:
        print(f"cuzk-bench: {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("cuzk-bench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
