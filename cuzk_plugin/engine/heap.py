"""Handing freed heap memory back to the system after a large request.

A large request body (tens to hundreds of MB) and the objects a plan builds from it are freed
when the request ends, but glibc keeps much of what was freed in its arenas: eight refused
100 MB bodies left the daemon 0.5 GB larger for good. ``malloc_trim(0)`` (through ctypes, which
releases the GIL) returns every arena's free pages.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import time
from functools import cache

log = logging.getLogger(__name__)


@cache
def _malloc_trim():
    """glibc's malloc_trim, or None where the C library has none (musl, macOS)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        log.debug("no malloc_trim in the C library (%s): freed heap memory stays with the allocator", name)
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def return_free_memory() -> bool:
    """Give the C heap's free pages back to the system; True where the allocator could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    t0 = time.perf_counter()
    released = bool(trim(0))
    log.debug("malloc_trim: %s in %.1f ms", "memory returned" if released else "nothing to return",
              (time.perf_counter() - t0) * 1e3)
    return released
