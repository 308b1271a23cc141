"""One page-locked host copy of each key per host, shared by every lane that streams it.

A lane whose residency plan streams some of a key's vectors attaches its device copy to the
key's host copy (the backend's ``host_key``: on CUDA the points in the device's own layout, so
a streamed chunk is a plain copy). The first lane to need it makes it; the others reuse it;
it is freed when the last lane's copy of the key goes. Two GPUs never hold two host copies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class _Shared:
    key: Any  # held so that its id() stays this entry's while the copy lives
    copy: Any
    users: int


class HostKeyCopies:
    """Host copies by key object, counted by the lanes using them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._copies: dict[int, _Shared] = {}
        #: One copy made at a time (a large key takes seconds to read and pin); lookups of
        #: copies already made do not wait for it.
        self._making = threading.Lock()

    def acquire(self, key: Any, make: Callable[[], Any]) -> Any:
        """The host copy of ``key`` (``make()`` makes it when no lane holds one); pair with
        :meth:`release`."""
        with self._making:
            with self._lock:
                shared = self._copies.get(id(key))
                if shared is not None:
                    shared.users += 1
                    return shared.copy
            copy = make()
            with self._lock:
                self._copies[id(key)] = _Shared(key, copy, 1)
            return copy

    def release(self, key: Any) -> None:
        """One lane is done with ``key``'s copy; the last one frees it."""
        with self._lock:
            shared = self._copies.get(id(key))
            if shared is None:
                return
            shared.users -= 1
            if shared.users > 0:
                return
            del self._copies[id(key)]
        shared.copy.release()

    def existing(self, key: Any) -> Any | None:
        """``key``'s host copy if some lane holds one (not acquired: for a look)."""
        with self._lock:
            shared = self._copies.get(id(key))
            return shared.copy if shared is not None else None

    @property
    def nbytes(self) -> int:
        """Host bytes of every copy held."""
        with self._lock:
            return sum(int(getattr(s.copy, "nbytes", 0)) for s in self._copies.values())
