"""One logging set-up for `cuzk`, `cuzk-daemon` and `cuzk-bench`: the same levels, the same line
format, and lines that a client's bytes cannot forge or flood.

Request ids and other client strings reach log messages; :class:`SafeFormatter` escapes control
characters (a newline cannot start a forged line) and caps each record, so a 200 MB id writes a
bounded line.
"""

from __future__ import annotations

import argparse
import logging
import sys

__all__ = ["LOG_LEVELS", "MAX_RECORD_CHARS", "SafeFormatter", "add_log_level_option", "configure_logging"]

LOG_LEVELS = ("debug", "info", "warning", "error")
#: A formatted record longer than this is cut, with the number of characters dropped.
MAX_RECORD_CHARS = 8192
_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
_CONTROL = {c: f"\\x{c:02x}" for c in range(32) if c not in (9,)} | {0x7F: "\\x7f"}
_CONTROL |= {ord("\n"): "\\n", ord("\r"): "\\r"}


class SafeFormatter(logging.Formatter):
    """Formats as usual, then escapes control characters and bounds the record's length
    (tracebacks keep their own newlines: they come from this process, not from a client)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if len(message) > MAX_RECORD_CHARS:
            message = f"{message[:MAX_RECORD_CHARS]}... [{len(message) - MAX_RECORD_CHARS} characters cut]"
        safe = logging.makeLogRecord(record.__dict__ | {"msg": message.translate(_CONTROL), "args": None})
        return super().format(safe)


def add_log_level_option(parser: argparse.ArgumentParser, default: str = "info") -> None:
    parser.add_argument("--log-level", default=default, type=str.lower, choices=LOG_LEVELS,
                        help=f"how much to log: {', '.join(LOG_LEVELS)} (default: {default})")


def configure_logging(level: str) -> None:
    """Root logging to stderr at ``level`` (one of :data:`LOG_LEVELS`) with :class:`SafeFormatter`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SafeFormatter(_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
