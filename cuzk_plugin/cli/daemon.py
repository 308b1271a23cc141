"""`cuzk-daemon`: the proving daemon Curio talks to (cuzk.v1 over gRPC).

    cuzk-daemon [-c cuzk.toml] [-l unix:///run/curio/cuzk.sock | -l 0.0.0.0:9820] [--log-level info]
    cuzk --config cuzk.toml       (the same daemon, as Curio's docs start cuzk)

Without -c it reads /data/zk/cuzk.toml when that file exists (cuzk's default), else runs on
the built-in defaults; the log says which.

Start-up in order: read the config (file, CUZK_* variables, these flags), set up logging,
start the engine (backend lanes, synthesis workers, key manager), then the gRPC server and
the status page. SIGTERM / SIGINT stop it: the server first, then the engine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from cuzk_plugin.cli.logs import LOG_LEVELS, add_log_level_option, configure_logging
from cuzk_plugin.config import Config, ConfigError, load_config
from cuzk_plugin.errors import CuzkError

log = logging.getLogger("cuzk.daemon")
#: cuzk's default config path, read when -c is not given and the file exists.
DEFAULT_CONFIG = Path("/data/zk/cuzk.toml")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cuzk-daemon", description="Groth16 proving daemon speaking cuzk.v1 (Curio's [Cuzk] API).")
    from cuzk_plugin import __version__

    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("-c", "--config", help=f"TOML config file (--print-example-config shows every key); default: "
                                          f"{DEFAULT_CONFIG} when it exists, else built-in defaults")
    p.add_argument("--print-example-config", action="store_true",
                   help="print the example configuration (every key, explained) and exit")
    p.add_argument("--print-systemd-unit", action="store_true", help="print an example systemd unit and exit")
    p.add_argument("-l", "--listen", help="gRPC address, unix:///path or host:port (overrides [daemon] listen)")
    add_log_level_option(p, default=None, help=f"overrides [logging] level: {', '.join(LOG_LEVELS)} "
                                               "(default: the config's, info)")
    return p


async def run_daemon(config: Config, *, on_ready: Callable[[str, int], None] | None = None,
                     stop: asyncio.Event | None = None) -> None:
    """Run until ``stop`` is set (or SIGTERM/SIGINT). ``on_ready(address, status_port)`` once serving."""
    from cuzk_plugin.adapters import builtin_providers
    from cuzk_plugin.engine.circuits import ProviderRegistry
    from cuzk_plugin.engine.engine import Engine
    from cuzk_plugin.server.app import Security, start_server

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
            loop.add_signal_handler(sig, stop.set)
    engine = Engine(config, providers=ProviderRegistry(builtin_providers(config.srs)))
    await engine.start()
    try:
        security = Security(config.daemon.tls_cert, config.daemon.tls_key, config.daemon.auth_token)
        server = await start_server(engine, config.daemon.listen, config.daemon.status_listen, security)
    except BaseException:
        await engine.stop()
        raise
    if on_ready:
        on_ready(server.address, server.status_port)
    try:
        await stop.wait()
        log.info("stopping: no new requests; cancelling unfinished jobs")
    finally:
        # Jobs first: their Prove callers get CANCELLED at once instead of waiting out the grace.
        engine.cancel_all("daemon stopping")
        await server.stop(grace=2.0)
        await engine.stop()
        log.info("stopped")


def deploy_file(name: str) -> str:
    """An example shipped inside the package (``cuzk_plugin/deploy/``), so an installed daemon can show it."""
    from importlib.resources import files

    return files("cuzk_plugin").joinpath("deploy", name).read_text()


def config_path(explicit: str | None, default: Path = DEFAULT_CONFIG) -> tuple[Path | None, str]:
    """The config file to read (``-c``, else ``default`` when it exists, else none) and a line saying which."""
    if explicit:
        return Path(explicit), f"config: {explicit} (-c)"
    if default.is_file():
        return default, f"config: {default} (the default path; -c FILE reads another)"
    return None, f"config: built-in defaults ({default} does not exist; -c FILE reads one)"


def main(argv: list[str] | None = None, *, default_config: Path = DEFAULT_CONFIG) -> int:
    args = build_parser().parse_args(argv)
    if args.print_example_config or args.print_systemd_unit:
        name = "cuzk.example.toml" if args.print_example_config else "cuzk-daemon.service"
        sys.stdout.write(deploy_file(name))
        return 0
    configure_logging(args.log_level or "info")  # config warnings show while the config loads
    overrides = {"daemon": {"listen": args.listen}} if args.listen else None
    path, which = config_path(args.config, default_config)
    try:
        config = load_config(path, overrides)
    except ConfigError as exc:
        print(f"cuzk-daemon: {exc}", file=sys.stderr)
        return 2
    configure_logging(args.log_level or config.logging.level, config.logging.format)
    log.info("%s", which)
    from cuzk_plugin.filecoin.param_files import remember_checks_in

    log.info("parameter file checks are remembered in %s", remember_checks_in(config.srs.state_path()))
    try:
        asyncio.run(run_daemon(config))
    except (CuzkError, OSError) as exc:
        log.error("cannot start: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
