"""One logging set-up for `cuzk`, `cuzk-daemon` and `cuzk-bench`: the same levels, the same line
format, and lines that a client's bytes cannot forge or flood.

Request ids and other client strings reach log messages; :class:`SafeFormatter` escapes control
characters (a newline cannot start a forged line) and caps each record, so a 200 MB id writes a
bounded line.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

__all__ = ["LOG_LEVELS", "MAX_RECORD_CHARS", "SafeFormatter", "JsonFormatter", "add_log_level_option",
           "configure_logging"]

#: cuzk's level names ("trace" and "warn" as it spells them) and Python's.
LOG_LEVELS = ("trace", "debug", "info", "warn", "warning", "error")
_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
           "warning": logging.WARNING, "error": logging.ERROR}
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


class JsonFormatter(logging.Formatter):
    """One JSON object a line (``[logging] format = "json"``); JSON escaping keeps it one line."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()[:MAX_RECORD_CHARS]
        out = {"ts": self.formatTime(record), "level": record.levelname, "logger": record.name, "msg": message}
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out)


def add_log_level_option(parser: argparse.ArgumentParser, default: str | None = "info", help: str | None = None) -> None:
    parser.add_argument("--log-level", default=default, type=str.lower, choices=LOG_LEVELS,
                        help=help or f"how much to log: {', '.join(LOG_LEVELS)} (default: {default})")


def configure_logging(level: str, fmt: str = "text") -> None:
    """Root logging to stderr at ``level`` (one of :data:`LOG_LEVELS`), one line a record
    (:class:`SafeFormatter`, or :class:`JsonFormatter` for ``fmt="json"``); Python warnings
    (deprecated config keys) go through it too."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else SafeFormatter(_FORMAT))
    logging.basicConfig(level=_LEVELS[level.lower()], handlers=[handler], force=True)
    logging.captureWarnings(True)
