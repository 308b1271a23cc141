"""Curio's large JSON documents decoded in pieces, so that no single call holds the GIL for long.

``json.loads`` is one C call: a 49 MB 32 GiB C1 holds the GIL for ~1.5-2 s on the 2-core
machine, and for that long the daemon's event loop (every other client's RPC, the GPU lanes'
hand-over) waits. :func:`loads` finds the document's containers with numpy (the brackets outside
strings and their depth), decodes every container of at most ``max_piece`` bytes with
``json.loads`` on its own, and a large one from its children: the text between two children
(separators, keys, scalar members) is decoded with the child replaced by ``null``, so every
byte of the document passes through json.loads exactly once, in its place. Valid JSON reads as
``json.loads`` reads it; malformed JSON raises :class:`json.JSONDecodeError`.

The nesting is bounded before anything is decoded (:class:`NestingError`): json's C scanner
recurses once a level, and where a process has raised its recursion limit (libraries do) a
hostile ``[[[[...`` would overflow the C stack and kill the daemon instead of raising. So is a
flat run of members: more than ``max_members`` scalars between two nested containers (a 100 MB
``[1,1,1,...]``: one json.loads of 2 s and 50 million objects) is refused before it is decoded
(:class:`ShapeError`), counted with numpy (which leaves the GIL to other threads).

A document may be a memoryview (a request body as the server split it): it is scanned where it
lies and only its pieces are copied, for json.loads; a copy of the whole held the GIL for tens of
milliseconds a 100 MB body, and only to be refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

#: Containers up to this size go to json.loads whole (~30 ms of GIL here).
MAX_PIECE = 1 << 20
#: The deepest nesting decoded (Curio's documents nest about 10 levels).
MAX_DEPTH = 64
#: The most scalar members decoded in one run (Curio's longest arrays hold a few hundred).
MAX_MEMBERS = 1 << 16
_COMMA = ord(",")
#: A document with at most this many '[' and '{' bytes (in strings or not) is decoded whole.
_FEW_CONTAINERS = 8
_WS = b" \t\r\n"
_PLACEHOLDER = b"null"
_QUOTE, _SLASH, _OPEN, _CLOSE = 1, 2, 3, 4
_KIND = np.zeros(256, dtype=np.int8)
_KIND[ord('"')], _KIND[ord("\\")] = _QUOTE, _SLASH
_KIND[[ord("["), ord("{")]] = _OPEN
_KIND[[ord("]"), ord("}")]] = _CLOSE
#: Bytes a scan of :func:`positions` compares at a time, in the calling thread: a piece stays in
#: the cache (the brackets' four comparisons 4x faster than a gather from a 256-entry table over
#: the whole document: a 32 GiB C1's 49 MB, 21 against 81 ms), and no temporary is the size of a
#: hostile 100 MB body (bench/synthesis/plan-side-by-side-2026-12-06.md, eighth session).
SCAN_PIECE = 1 << 20


def positions(view: np.ndarray, test: Callable[[np.ndarray], np.ndarray], most: int | None = None) -> np.ndarray:
    """The positions in ``view`` (uint8) where ``test`` (bools of a piece of it) holds, in order,
    found a piece of SCAN_PIECE bytes at a time; numpy leaves the GIL to other threads while it
    compares. With ``most``, the scan stops at the piece that takes the count past it (the
    result then holds more than ``most``): a hostile body full of matches is given up early."""
    found: list[np.ndarray] = []
    count = 0
    for lo in range(0, view.size, SCAN_PIECE):
        found.append(lo + np.flatnonzero(test(view[lo:lo + SCAN_PIECE])))
        count += found[-1].size
        if most is not None and count > most:
            break
    return np.concatenate(found) if found else np.zeros(0, dtype=np.intp)


def _marks(view: np.ndarray) -> np.ndarray:
    """Whether each byte is one of _KIND's: ``"``, ``\\``, or a bracket (``[`` and ``{`` are
    0x5B and 0x7B, ``]`` and ``}`` 0x5D and 0x7D: one bit apart)."""
    folded = view | 0x20
    marked = folded == ord("{")
    marked |= folded == ord("}")
    marked |= view == ord('"')
    marked |= view == ord("\\")
    return marked


#: A document's bytes: a bytes object or a memoryview of bytes (never copied whole unless decoded whole).
Buffer = bytes | memoryview


def text_of(raw: Buffer, start: int, end: int) -> bytes:
    """``raw[start:end]`` as bytes (a memoryview's piece copied)."""
    return raw[start:end] if isinstance(raw, bytes) else bytes(raw[start:end])


def find(raw: Buffer, needle: bytes, start: int = 0) -> int:
    """``raw.find(needle, start)`` for either kind of buffer: a memoryview searched a copied piece
    of SCAN_PIECE bytes at a time (overlapping by the needle's length), never a copy of the whole."""
    if isinstance(raw, bytes):
        return raw.find(needle, start)
    step = max(SCAN_PIECE, len(needle))
    for lo in range(start, len(raw), step):
        at = bytes(raw[lo:lo + step + len(needle) - 1]).find(needle)
        if at >= 0:
            return lo + at
    return -1


def _span(raw: Buffer) -> tuple[int, int]:
    """Where the document lies inside its leading and trailing whitespace (start == end: none)."""
    if isinstance(raw, bytes):
        start = len(raw) - len(raw.lstrip(_WS))
        return start, max(start, len(raw.rstrip(_WS)))
    start = end = len(raw)
    for lo in range(0, len(raw), SCAN_PIECE):
        piece = bytes(raw[lo:lo + SCAN_PIECE])
        if body := piece.lstrip(_WS):
            start = lo + len(piece) - len(body)
            break
    for hi in range(len(raw), start, -SCAN_PIECE):
        piece = bytes(raw[max(start, hi - SCAN_PIECE):hi])
        if body := piece.rstrip(_WS):
            end = hi - len(piece) + len(body)
            break
    return start, end


#: Where a container sits in the document: the keys and indices from the top.
JsonPath = tuple[str | int, ...]


class RawJSON(bytes):
    """A container's JSON text left undecoded (``loads``' ``keep_raw``), for its reader to decode
    elsewhere (a PoRep C1's partitions, each in a process of its own)."""


class NestingError(ValueError):
    """The document nests deeper than the caller allows; nothing of it was decoded."""

    def __init__(self, depth: int, max_depth: int):
        super().__init__(f"nests {depth:,} levels deep, more than {max_depth}")
        self.depth, self.max_depth = depth, max_depth


class ShapeError(ValueError):
    """A run of more scalar members than the caller allows; nothing of it was decoded."""

    def __init__(self, members: int, at: int, nbytes: int, max_members: int):
        super().__init__(f"holds a run of up to {members:,} members ({nbytes:,} bytes) at byte {at:,}, more than "
                         f"{max_members:,} in one container")
        self.members, self.at, self.max_members = members, at, max_members


def _commas(raw: Buffer, start: int = 0, end: int | None = None) -> int:
    """The ',' bytes of ``raw[start:end]`` (inside strings too: an upper bound on the members),
    counted by numpy without holding the GIL or copying."""
    end = len(raw) if end is None else end
    return int(np.count_nonzero(np.frombuffer(raw, dtype=np.uint8, count=end - start, offset=start) == _COMMA))


def _check_run(raw: Buffer, start: int, end: int, max_members: int) -> None:
    """Refuse ``raw[start:end]`` (text decoded by one json.loads) if it holds more members than
    ``max_members``; only a text that could hold that many is counted."""
    if end - start > 2 * max_members:
        commas = _commas(raw, start, end)
        if commas >= max_members:
            raise ShapeError(commas + 1, start, end - start, max_members)


class _Brackets:
    """The positions of the brackets outside strings, and the depth of each."""

    def __init__(self, raw: Buffer):
        # one pass over the document: the bytes that matter, by kind
        view = np.frombuffer(raw, dtype=np.uint8)
        at = positions(view, _marks)
        kind = _KIND[view[at]]
        quotes = at[kind == _QUOTE]
        slashes = at[kind == _SLASH]
        if slashes.size:  # drop the escaped quotes: an odd run of backslashes ends right before
            starts = np.flatnonzero(np.diff(slashes) != 1) + 1
            first = slashes[np.concatenate(([0], starts))]
            final = slashes[np.concatenate((starts, [slashes.size])) - 1]
            k = np.minimum(np.searchsorted(final, quotes - 1), final.size - 1)
            escaped = (final[k] == quotes - 1) & ((final[k] - first[k]) % 2 == 0)
            quotes = quotes[~escaped]
        bracket = kind >= _OPEN
        pos, step = at[bracket], np.where(kind[bracket] == _OPEN, 1, -1)
        outside = np.searchsorted(quotes, pos, side="right") % 2 == 0
        pos, step = pos[outside], step[outside]
        after = np.cumsum(step)
        self.pos = pos
        # a container's brackets sit at its level, its children's one deeper
        self.depth = np.where(step > 0, after - 1, after)
        self.balanced = bool(after.size and after[-1] == 0 and after.min() >= 0)
        self.max_depth = int(after.max()) if after.size else 0

    def children(self, start: int, end: int) -> list[tuple[int, int]] | None:
        """(open, close + 1) of each container directly inside the one at ``raw[start:end]``."""
        lo, hi = np.searchsorted(self.pos, [start + 1, end - 1])
        pos, depth = self.pos[lo:hi], self.depth[lo:hi]
        inner = pos[depth == self.depth[lo - 1] + 1].tolist()
        if len(inner) % 2:  # not one container (malformed): the caller's json.loads refuses it
            return None
        return [(a, b + 1) for a, b in zip(inner[0::2], inner[1::2], strict=True)]


def loads(raw: Buffer | str, max_piece: int = MAX_PIECE, max_depth: int = MAX_DEPTH,
          max_members: int = MAX_MEMBERS, keep_raw: Callable[[JsonPath], bool] | None = None) -> Any:
    """``json.loads(raw)`` for a UTF-8 document (bytes, a memoryview of bytes, or text), in
    pieces of about ``max_piece`` bytes; :class:`NestingError` if its brackets (outside strings)
    nest deeper than ``max_depth``, :class:`ShapeError` if more than ``max_members`` scalar
    members of a container larger than ``max_piece`` lie between two of its nested
    containers. Text is read as its UTF-8 bytes (a
    lone surrogate in it raises UnicodeDecodeError). ``keep_raw``: a container inside one larger
    than ``max_piece`` whose path it accepts stays text (:class:`RawJSON`, its inside neither
    decoded nor checked: decode it with ``loads``); containers read whole are decoded."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    elif isinstance(raw, memoryview):
        raw = raw.cast("B")  # one byte an item, whatever the view's format
    start, end = _span(raw)
    if start == end or raw[start] not in b"[{":
        _check_run(raw, start, end, max_members)
        return json.loads(text_of(raw, 0, len(raw)))  # not a container (or another encoding): nothing nests
    view = np.frombuffer(raw, dtype=np.uint8)
    openers = int(np.count_nonzero(view == ord("["))) + int(np.count_nonzero(view == ord("{")))
    if openers <= min(max_depth, _FEW_CONTAINERS) and (end - start <= max_piece or _commas(raw) < max_members):
        # Nothing to split, no deeper nesting than openers, no long run: Curio's envelope (three
        # members, one a 65 MB base64 string) would cost 0.35 s of bracket scan for one json.loads.
        return json.loads(text_of(raw, 0, len(raw)))
    brackets = _Brackets(raw)
    if brackets.max_depth > max_depth:  # balanced or not: json.loads would recurse that deep
        raise NestingError(brackets.max_depth, max_depth)
    if end - start <= max_piece:
        return json.loads(text_of(raw, 0, len(raw)))  # small: one call
    if not brackets.balanced or brackets.pos[-1] != end - 1:
        _check_run(raw, start, end, max_members)
        return json.loads(text_of(raw, 0, len(raw)))  # refused by json.loads, with its own message
    return _container(raw, brackets, start, end, max_piece, max_members, (), keep_raw)


def _whole(raw: Buffer, start: int, end: int) -> Any:
    """json.loads(raw[start:end]), a refusal's position counted from the document's start."""
    try:
        return json.loads(text_of(raw, start, end))
    except json.JSONDecodeError as exc:
        raise json.JSONDecodeError(exc.msg, exc.doc, exc.pos + start) from None


def _members(text: bytes, at: int) -> list[Any]:
    """The members of the array or object ``text`` (an object's as (key, value) pairs in order);
    ``at``: where the text's second byte sits in the document."""
    try:
        return json.loads(text, object_pairs_hook=list)
    except json.JSONDecodeError as exc:
        raise json.JSONDecodeError(exc.msg, exc.doc, exc.pos + at - 1) from None


def _container(raw: Buffer, brackets: _Brackets, start: int, end: int, max_piece: int, max_members: int,
               path: JsonPath, keep_raw: Callable[[JsonPath], bool] | None) -> Any:
    """The array or object ``raw[start:end]`` at ``path``, from its children where it is large.
    Anything out of place sends the whole container to json.loads, which raises."""
    if end - start <= max_piece:
        return _whole(raw, start, end)
    array = raw[start] == ord("[")
    opener, closer = (b"[", b"]") if array else (b"{", b"}")
    if raw[end - 1] != closer[0]:
        _check_run(raw, start, end, max_members)
        return _whole(raw, start, end)  # [} or {]
    children = brackets.children(start, end)
    if children is None:
        _check_run(raw, start, end, max_members)
        return _whole(raw, start, end)
    cuts = [start + 1, *(x for c in children for x in c), end - 1]
    for i in range(len(children) + 1):  # every run between two children, before any is decoded
        _check_run(raw, cuts[2 * i], cuts[2 * i + 1], max_members)
    out_list: list[Any] = []
    out_dict: dict[str, Any] = {}
    for i in range(len(children) + 1):
        a, b = cuts[2 * i], cuts[2 * i + 1]
        gap, last = text_of(raw, a, b), i == len(children)
        if i > 0:  # the text after a child: a comma first, unless the container ends
            body = gap.lstrip(_WS)
            if last and not body:
                break
            if not body.startswith(b","):
                return _whole(raw, start, end)
            gap, a = body[1:], b - len(body) + 1
            if last and not gap.strip(_WS):
                return _whole(raw, start, end)  # a trailing comma
        # the members before child i (or after the last), child i standing in as null
        members = _members(opener + gap + (b"" if last else _PLACEHOLDER) + closer, a)
        before = members if last else members[:-1]
        if array:
            out_list += before
        else:
            out_dict.update(before)  # in order: a repeated key's last value wins, as in json.loads
        if not last:
            where = (*path, len(out_list) if array else members[-1][0])
            if keep_raw is not None and keep_raw(where):
                child: Any = RawJSON(text_of(raw, *children[i]))
            else:
                child = _container(raw, brackets, *children[i], max_piece, max_members, where, keep_raw)
            if array:
                out_list.append(child)
            else:
                out_dict[members[-1][0]] = child
    return out_list if array else out_dict
