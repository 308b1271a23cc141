"""Large JSON decoded in pieces (adapters/curio/json_pieces.py) reads exactly as json.loads reads
it: random documents (strings full of quotes, backslashes and brackets), random corruptions of
them (both refuse, or both read the same), a sealed C1; and the counted GC pause it runs under."""

from __future__ import annotations

import gc
import json
import random
import subprocess
import sys
import threading

import numpy as np
import pytest

from cuzk_plugin.adapters.curio import json_pieces
from cuzk_plugin.circuit.fast_cs import gc_paused

_CHARS = 'ab"\\[]{}:, \u00e9\U0001F600\n'


def _value(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 4 or r < 0.3:
        return rng.choice([rng.randrange(-10**30, 10**30), rng.random(), True, False, None,
                           "".join(rng.choice(_CHARS) for _ in range(rng.randrange(8)))])
    if r < 0.65:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(6))]
    return {"".join(rng.choice('k"\\[{:,') for _ in range(rng.randrange(4))): _value(rng, depth + 1)
            for _ in range(rng.randrange(6))}


def _dump(rng: random.Random, value) -> bytes:
    return json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 0, 1]),
                      separators=rng.choice([None, (",", ":"), (" , ", " : ")])).encode()


def _corrupt(rng: random.Random, raw: bytes) -> bytes:
    b = bytearray(raw)
    for _ in range(rng.randrange(1, 3)):
        at, c = rng.randrange(len(b) + 1), rng.choice(b'[]{},:"\\ 0a')
        op = rng.randrange(3)
        if op == 1 or not b:
            b.insert(at, c)
        elif op == 0:
            b[min(at, len(b) - 1)] = c
        else:
            del b[min(at, len(b) - 1)]
    return bytes(b)


def _outcome(parse, raw: bytes):
    try:
        return "read", json.dumps(parse(raw))  # dumps: NaN equals NaN, key order counts
    except (json.JSONDecodeError, UnicodeDecodeError):
        return "refused", None


def test_random_and_corrupted_documents_read_as_json_loads_reads_them():
    rng = random.Random(20261203)
    read = refused = 0
    for _ in range(4000):
        raw = _dump(rng, _value(rng))
        if rng.random() < 0.6:
            raw = _corrupt(rng, raw)
        piece = rng.choice([1, 2, 5, 20])
        want = _outcome(json.loads, raw)
        assert _outcome(lambda r, p=piece: json_pieces.loads(r, max_piece=p), raw) == want, (raw[:200], piece)
        read += want[0] == "read"
        refused += want[0] == "refused"
    assert read > 1000 and refused > 1000  # both sides exercised


def test_marked_bytes_are_found_as_the_kind_table_names_them_in_pieces(monkeypatch):
    """Every byte value against the table; then random documents scanned in pieces of a few
    bytes, read as json.loads reads them."""
    every = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(json_pieces._marks(every), json_pieces._KIND[every] != 0)
    rng = random.Random(20261206)
    for _ in range(600):
        raw = _dump(rng, _value(rng))
        if rng.random() < 0.5:
            raw = _corrupt(rng, raw)
        monkeypatch.setattr(json_pieces, "SCAN_PIECE", rng.randrange(1, 40))
        view = np.frombuffer(raw, dtype=np.uint8)
        np.testing.assert_array_equal(json_pieces.positions(view, json_pieces._marks),
                                      np.flatnonzero(json_pieces._KIND[view] != 0))
        assert _outcome(lambda r: json_pieces.loads(r, max_piece=5), raw) == _outcome(json.loads, raw), raw[:200]


def _inside(raw: bytes, rng: random.Random) -> memoryview:
    """``raw`` as a memoryview into a larger buffer (so that every offset is the view's own)."""
    pad = rng.randrange(4)
    return memoryview(b"x" * pad + raw + b"[{" * rng.randrange(3))[pad:pad + len(raw)]


def test_a_memoryview_reads_as_its_bytes_in_pieces(monkeypatch):
    """The request body as the server splits it (a memoryview into the message): random and
    corrupted documents, scanned in pieces of a few bytes, read as json.loads reads the bytes;
    find and the document's span agree with bytes' own methods at every piece boundary."""
    rng = random.Random(20261207)
    for _ in range(600):
        raw = _dump(rng, _value(rng))
        if rng.random() < 0.5:
            raw = _corrupt(rng, raw)
        if rng.random() < 0.3:
            raw = b" \n" * rng.randrange(8) + raw + b"\t " * rng.randrange(8)
        monkeypatch.setattr(json_pieces, "SCAN_PIECE", rng.randrange(1, 40))
        view = _inside(raw, rng)
        piece = rng.choice([1, 5, 20])
        assert _outcome(lambda r, p=piece: json_pieces.loads(r, max_piece=p), view) == _outcome(json.loads, raw), raw[:200]
        assert json_pieces._span(view) == json_pieces._span(raw)
        for needle in (b'"', b'"k', b"[1", b"\\"):
            start = rng.randrange(len(raw) + 1)
            assert json_pieces.find(view, needle, start) == raw.find(needle, start), (raw, needle, start)
    doc = b'{"a": [[1, 2], {"b": 3}], "c": [[], [], [], [], [], []]}'  # more containers than a whole read takes
    kept = json_pieces.loads(_inside(doc, rng), max_piece=2, keep_raw=lambda p: p == ("a", 0))
    assert kept == {"a": [b"[1, 2]", {"b": 3}], "c": [[]] * 6} and isinstance(kept["a"][0], json_pieces.RawJSON)
    for blank in (b"", b" \n ", memoryview(b"[ \t ]")[1:-1]):  # nothing but whitespace: JSON's refusal
        with pytest.raises(json.JSONDecodeError):
            json_pieces.loads(blank, max_piece=1)


@pytest.mark.parametrize("raw", [
    rb'["a\"]", [1, 2], {"k\\": [3]}]',      # an escaped quote, then an escaped backslash before a real one
    rb'{"a": [1], "a": [2, [3]]}',             # a repeated key: the last wins
    rb'[[], {}, [[]], "x", 1]',
    b' \n [ [ 1 ] , { "b" : [ 2 ] } ] \n ',
])
def test_edge_documents(raw):
    assert json_pieces.loads(raw, max_piece=1) == json.loads(raw)


@pytest.mark.parametrize("raw", [b"[[1],]", b"[,[1]]", b"[[1] [2]]", b'{"a" [1]}', b'{"a": [1],}', b"[[1]}",
                                 b'{[1]: 2}', b"[[1]] x"])
def test_malformed_documents_are_refused_naming_a_position(raw):
    with pytest.raises(json.JSONDecodeError) as err:
        json_pieces.loads(raw, max_piece=1)
    assert 0 <= err.value.pos <= len(raw)


def test_a_sealed_c1_reads_the_same_in_small_pieces(c1_bytes):
    assert json_pieces.loads(c1_bytes, max_piece=256) == json.loads(c1_bytes)


def test_overlapping_gc_pauses_end_with_the_last():
    assert gc.isenabled()
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    with gc_paused():
        t.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other thread still parses
    leave.set()
    t.join(10)
    assert gc.isenabled()


def _go_std_decode(text: str) -> bytes | None:
    """An independent reference for Curio's base64: Python's strict-alphabet decoder, padding
    refused where it does not exactly fill the last quad (Go's base64.StdEncoding refuses it;
    Python takes surplus ``=``)."""
    import base64
    import binascii

    if len(text) % 4 or len(text) - len(text.rstrip("=")) > 2:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def test_phase1out_base64_is_decoded_as_go_std_encoding_decodes_it():
    import base64

    from cuzk_plugin.adapters.curio.porep import c1 as c1_module
    from cuzk_plugin.adapters.curio.porep.c1 import C1Envelope, C1Error

    rng = random.Random(7)
    outcomes = set()
    for _ in range(3000):
        text = base64.b64encode(rng.randbytes(rng.randrange(40))).decode()
        if rng.random() < 0.6:
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(["=", "==", "===", "====", "A", "A=", "AB=", "*", " ", "\n", "é", "-", "_"]) \
                + text[at + rng.randrange(3):]
        want = _go_std_decode(text)
        env = C1Envelope(SectorNum=1, Phase1Out=text, SectorSize=2048)
        if want is None:
            with pytest.raises(C1Error, match=r"not standard base64"):
                env.c1_bytes()
        else:
            assert env.c1_bytes() == want, text
        # the same string read in place inside a larger body (a plain envelope's way)
        body = b'{"Phase1Out": "' + text.encode() + b'"}'
        try:
            inside: bytes | None = c1_module.b64decode_standard(memoryview(body)[15:15 + len(text.encode())])
        except ValueError:
            inside = None
        assert inside == want, text
        outcomes.add(want is None)
    assert outcomes == {True, False}
    # surplus padding, which Python's own decoder takes
    assert base64.b64decode("QUJD=", validate=True) == b"ABC"
    with pytest.raises(C1Error, match=r"not standard base64"):
        C1Envelope(SectorNum=1, Phase1Out="QUJD=", SectorSize=2048).c1_bytes()


def test_nesting_is_bounded_before_decoding():
    limit = json_pieces.MAX_DEPTH
    ok = b"[" * limit + b"]" * limit
    assert json_pieces.loads(ok) == json.loads(ok)
    for raw in (b"[" * (limit + 1) + b"]" * (limit + 1),           # balanced
                b'{"a": ' * (limit + 1) + b"1" + b"}" * (limit + 1),
                b"[" * 1_000_000,                                 # never closed
                b"[" * 70 + b"]" * 200):                          # closed too often
        with pytest.raises(json_pieces.NestingError, match="more than 64"):
            json_pieces.loads(raw)
    inside = b'["' + b"[" * 10_000 + b'", {"k": "' + b"{" * 500 + b'"}]'  # brackets in strings: text
    assert json_pieces.loads(inside, max_piece=8) == json.loads(inside)
    assert json_pieces.loads(inside.decode()) == json.loads(inside)  # text reads as its UTF-8 bytes


def test_few_containers_decode_whole_and_stay_bounded():
    """A document with a handful of '[' / '{' (Curio's envelope) skips the bracket scan: its
    nesting cannot exceed the openers it has, and it still refuses what nests too deep."""
    envelope = json.dumps({"SectorNum": 7, "Phase1Out": "eyJh" * 400_000, "SectorSize": 1 << 35}).encode()
    assert json_pieces.loads(envelope, max_piece=1024) == json.loads(envelope)
    for depth in range(1, 6):
        raw = b'{"k": ' * depth + b'"[[{"' + b"}" * depth  # brackets in the string count as openers
        if depth <= 4:  # depth 1: decoded whole (4 openers); 2-4: scanned, within the bound
            assert json_pieces.loads(raw, max_piece=4, max_depth=4) == json.loads(raw)
        else:
            with pytest.raises(json_pieces.NestingError, match="5 levels deep, more than 4"):
                json_pieces.loads(raw, max_piece=4, max_depth=4)
    with pytest.raises(json.JSONDecodeError):
        json_pieces.loads(b'{"a": [1, 2}', max_piece=4)


def test_a_deep_document_is_refused_where_the_recursion_limit_is_raised():
    """Libraries raise the recursion limit; json's C scanner then recursed into a segfault
    (the suite died with it once). Refused by depth instead, in a process of its own."""
    code = (
        "import sys; sys.setrecursionlimit(10**7)\n"
        "from cuzk_plugin.adapters.curio.porep.c1 import C1Error, parse_c1\n"
        "from cuzk_plugin.adapters.curio.porep.job import porep_partitions\n"
        "for n in (5_000, 300_000, 3_000_000):\n"
        "    for parse in (porep_partitions, parse_c1):\n"
        "        try:\n"
        "            parse(b'{\"k\":' + b'[' * (n - 1) + b']' * (n - 1) + b'}')  # a C1 is an object\n"
        "        except C1Error as exc:\n"
        "            assert 'nests' in str(exc) and f'{n:,} levels' in str(exc), exc\n"
        "        else:\n"
        "            raise SystemExit('accepted')\n"
        "print('refused')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "refused", (done.returncode, done.stderr[-2000:])


def test_a_deeply_nested_c1_is_refused_by_name():
    from cuzk_plugin.adapters.curio.porep.c1 import C1Error
    from cuzk_plugin.adapters.curio.porep.job import porep_partitions

    for n in (5000, 1 << 20):  # under and over the piece size
        with pytest.raises(C1Error, match=f"nests {n:,} levels deep"):
            porep_partitions(b'{"k":' + b"[" * (n - 1) + b"]" * (n - 1) + b"}")  # a C1 is an object


def test_a_long_flat_run_is_refused_before_it_is_decoded():
    """Issue 28 item 11: a container larger than a piece whose members between two nested
    containers outnumber max_members is refused by count, before json.loads builds them."""
    flat = b"[" + b"1," * 5000 + b"1]"
    with pytest.raises(json_pieces.ShapeError, match="run of up to 5,001 members"):
        json_pieces.loads(flat, max_piece=64, max_members=1000)
    nested = b'{"a": [[1], ' + b"2, " * 3000 + b'[3]], "b": "x"}'
    with pytest.raises(json_pieces.ShapeError, match="run of up to 3,002 members"):
        json_pieces.loads(nested, max_piece=64, max_members=1000)
    few = b'{"SectorNum": [' + b"1," * 3000 + b"1]}"  # one opener: the whole-document path counts too
    with pytest.raises(json_pieces.ShapeError):
        json_pieces.loads(few, max_piece=64, max_members=1000)
    # Runs within the bound, and long strings (no separators), read as json.loads reads them.
    ok = b'{"a": [' + b"7, " * 400 + b'[1], "' + b"s" * 100_000 + b'"], "b": [' + b"1," * 900 + b"1]}"
    assert json_pieces.loads(ok, max_piece=64, max_members=1000) == json.loads(ok)


def test_an_envelope_in_a_memoryview_reads_as_its_bytes(c1_bytes):
    """Curio's envelope as the server hands it on (a memoryview into the request): read in
    place, to the same header, C1 bytes and job as the bytes; a hostile object-shaped body in a
    memoryview is refused by shape, as its bytes are."""
    from cuzk_plugin.adapters.curio.porep.c1 import C1Error, curio_envelope, plain_envelope
    from cuzk_plugin.adapters.curio.porep.job import porep_partitions

    envelope = curio_envelope(c1_bytes, 7, 2048)
    view = memoryview(b"{}" + envelope + b"}")[2:-1]
    assert plain_envelope(view) == plain_envelope(envelope) is not None
    a, b = porep_partitions(view), porep_partitions(envelope)
    assert (a.sector_id, a.circuit_id, a.num_partitions) == (b.sector_id, b.circuit_id, b.num_partitions) == (7, b.circuit_id, 1)
    assert a.public_inputs(0) == b.public_inputs(0)
    escaped = envelope.replace(b'"SectorNum"', b'"Sector\\u004eum"')  # a backslash: read as JSON instead
    assert plain_envelope(memoryview(escaped)) is None and porep_partitions(memoryview(escaped)).sector_id == 7
    flat = b'{"SectorNum": [' + b"1," * (1 << 20) + b"1]}"  # over a piece: scanned, not decoded
    with pytest.raises(C1Error, match=r"run of up to 1,048,577 members .* refused before decoding"):
        porep_partitions(memoryview(flat))


def test_a_body_that_is_not_an_object_is_refused_as_a_c1_at_once():
    """Issue 28 item 11: a 100 MB flat array sent as a C1 was decoded (2 s holding the GIL, 50
    million objects) before being refused; now its first byte refuses it."""
    import time

    from cuzk_plugin.adapters.curio.porep.c1 import C1Error
    from cuzk_plugin.adapters.curio.porep.job import porep_partitions

    body = memoryview(b"  \n[" + b"1," * (50 << 20) + b"1]")
    t0 = time.perf_counter()
    with pytest.raises(C1Error, match=r"not a JSON C1 envelope or C1 output .* start with '\['; refused before decoding"):
        porep_partitions(body)
    assert time.perf_counter() - t0 < 0.05
    with pytest.raises(C1Error, match=r"run of up to 52,428,801 members .* refused before decoding"):
        porep_partitions(b'{"SectorNum": [' + b"1," * (50 << 20) + b"1]}")
