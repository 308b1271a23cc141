"""The shared logging set-up: a client string cannot forge a log line or flood the log."""

from __future__ import annotations

import logging

from cuzk_plugin.cli.logs import MAX_RECORD_CHARS, SafeFormatter


def _format(msg: str, *args) -> str:
    record = logging.LogRecord("cuzk", logging.INFO, __file__, 1, msg, args, None)
    return SafeFormatter("%(levelname)s %(message)s").format(record)


def test_newlines_in_a_client_string_stay_on_one_line() -> None:
    line = _format("job %s queued", "x\n2026-12-03 ERROR forged\r\x1b[31m")
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert line == "INFO job x\\n2026-12-03 ERROR forged\\r\\x1b[31m queued"


def test_a_huge_string_is_cut() -> None:
    line = _format("id %s", "a" * (200 << 20))
    assert len(line) < MAX_RECORD_CHARS + 100 and line.endswith(f"[{(200 << 20) + 3 - MAX_RECORD_CHARS} characters cut]")


def test_tracebacks_keep_their_lines() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("cuzk", logging.ERROR, __file__, 1, "failed", None, __import__("sys").exc_info())
    text = SafeFormatter("%(message)s").format(record)
    assert text.startswith("failed\nTraceback") and "ValueError: boom" in text
