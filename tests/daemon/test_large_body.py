"""Issue 15, section 2 (memory): a 200 MB request body never stalls the daemon. Curio's
GetStatus gives up after 5 s; while another client's 200 MB SubmitProof arrives and is parsed,
GetStatus answers in well under a second.

The large body is sent by another process (its serialization must not load this process's
event loop, which also runs the daemon)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest
from daemon_helpers import synthetic_request

from cuzk_plugin.server.proto import cuzk_pb2 as pb

pytestmark = pytest.mark.slow

BODY_MB = 200
#: Worst GetStatus latency allowed while the body is received and parsed. The daemon runs in
#: the test's own process, so a pause of that process unrelated to the body (a collection of a
#: large heap left by earlier tests on a busy 2-core machine: 1.2-1.4 s seen once in the full
#: suite) can exceed it once; each measurement gets a second attempt. A parse that blocks the
#: event loop exceeds it every time.
BOUND_S = 1.0
ATTEMPTS = 2

_SENDER = """
import sys, grpc
from cuzk_plugin.server.proto import cuzk_pb2 as pb
req = pb.SubmitProofRequest.FromString(bytes.fromhex(sys.argv[2]))
req.vanilla_proof = b"\\x5a" * (int(sys.argv[3]) << 20)
body = req.SerializeToString()
opts = [("grpc.max_send_message_length", 300 << 20), ("grpc.max_receive_message_length", 300 << 20)]
with grpc.insecure_channel(sys.argv[1], options=opts) as ch:
    submit = ch.unary_unary("/cuzk.v1.ProvingEngine/SubmitProof", request_serializer=None, response_deserializer=None)
    print("ready", flush=True)
    sys.stdin.readline()
    submit(body, timeout=120)
print("sent", flush=True)
"""


async def test_get_status_answers_while_a_200_mb_body_is_parsed(make_daemon):
    d = await make_daemon()
    for attempt in range(ATTEMPTS):
        job_id = f"huge-200-{attempt}"
        worst, calls = await _get_status_during_huge_body(d, job_id)
        if worst < BOUND_S:
            break
    assert calls > 5, "the body arrived too fast to measure anything"
    assert worst < BOUND_S, f"GetStatus took {worst:.2f}s while a {BODY_MB} MB body was received and parsed"
    res = await d.stub().AwaitProof(pb.AwaitProofRequest(job_id=job_id, timeout_ms=60_000))
    assert res.status == pb.AwaitProofResponse.COMPLETED
    print(f"\n{BODY_MB} MB body: worst GetStatus {worst * 1e3:.0f} ms over {calls} calls (attempt {attempt + 1})")


async def _get_status_during_huge_body(d, job_id: str) -> tuple[float, int]:
    """Worst GetStatus latency while another process sends a SubmitProof of BODY_MB MB."""
    stub = d.stub()
    await stub.GetStatus(pb.GetStatusRequest(), timeout=5)  # the channel is up
    head = synthetic_request(job_id, log2=4, seed=6).SerializeToString().hex()
    sender = subprocess.Popen([sys.executable, "-c", _SENDER, d.tcp, head, str(BODY_MB)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    loop = asyncio.get_running_loop()
    try:
        assert (await loop.run_in_executor(None, sender.stdout.readline)).strip() == "ready"
        sender.stdin.write("go\n")
        sender.stdin.flush()
        done = loop.run_in_executor(None, sender.wait, 120)
        worst, calls = 0.0, 0
        while not done.done() or job_id not in d.engine.jobs:
            t0 = time.monotonic()
            await stub.GetStatus(pb.GetStatusRequest(), timeout=5)
            worst = max(worst, time.monotonic() - t0)
            calls += 1
            await asyncio.sleep(0.01)
        assert await done == 0
    finally:
        if sender.poll() is None:
            sender.kill()
            sender.wait()
    return worst, calls


async def test_an_oversized_small_message_is_refused_unparsed(make_daemon):
    import grpc

    d = await make_daemon()
    ch = d.channel()
    status = ch.unary_unary("/cuzk.v1.ProvingEngine/GetStatus", request_serializer=None, response_deserializer=None)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await status(b"\x0a" + b"\xff" * (1 << 20), timeout=10)  # 1 MB: not even a valid message
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "GetStatusRequest: 1048577 bytes" in err.value.details()
    await d.stub().GetStatus(pb.GetStatusRequest(), timeout=5)  # and the daemon serves on


_FLAT_SENDER = """
import sys, threading, time, grpc
from cuzk_plugin.server.proto import cuzk_pb2 as pb
address, n, mb, shape = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
flat = b"[" + b"1," * ((mb << 20) // 2 - 1) + b"1]"
payload = flat if shape == "array" else b'{"SectorNum": ' + flat + b'}'
bodies = [pb.SubmitProofRequest(request_id=f"flat-{i}", proof_kind=pb.POREP_SEAL_COMMIT, sector_size=2048,
                                vanilla_proof=payload).SerializeToString() for i in range(n)]
del payload, flat
opts = [("grpc.max_send_message_length", 300 << 20), ("grpc.max_receive_message_length", 300 << 20)]
results = [None] * n
with grpc.insecure_channel(address, options=opts) as ch:
    submit = ch.unary_unary("/cuzk.v1.ProvingEngine/SubmitProof", request_serializer=None, response_deserializer=None)
    def send(i):
        t0 = time.monotonic()
        try:
            submit(bodies[i], timeout=120)
            results[i] = ("accepted", "", time.monotonic() - t0)
        except grpc.RpcError as exc:
            results[i] = (exc.code().name, exc.details(), time.monotonic() - t0)
    print("ready", flush=True)
    sys.stdin.readline()
    threads = [threading.Thread(target=send, args=(i,)) for i in range(n)]
    for t in threads: t.start()
    for t in threads: t.join()
for code, details, seconds in results:
    print(f"{code}\\t{seconds:.3f}\\t{details}", flush=True)
"""


async def _get_status_during_bodies(d, n: int, mb: int, shape: str) -> tuple[float, int, list[str]]:
    """Worst GetStatus latency while ``n`` bodies of ``mb`` MB arrive at once from another
    process; (worst seconds, calls, each body's answer line)."""
    stub = d.stub()
    await stub.GetStatus(pb.GetStatusRequest(), timeout=5)
    sender = subprocess.Popen([sys.executable, "-c", _FLAT_SENDER, d.tcp, str(n), str(mb), shape],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    loop = asyncio.get_running_loop()
    try:
        assert (await loop.run_in_executor(None, sender.stdout.readline)).strip() == "ready"
        sender.stdin.write("go\n")
        sender.stdin.flush()
        done = loop.run_in_executor(None, sender.communicate)
        worst, calls = 0.0, 0
        while not done.done():
            t0 = time.monotonic()
            await stub.GetStatus(pb.GetStatusRequest(), timeout=10)
            worst = max(worst, time.monotonic() - t0)
            calls += 1
            await asyncio.sleep(0.01)
        out, _ = await done
    finally:
        if sender.poll() is None:
            sender.kill()
            sender.wait()
    assert sender.returncode == 0
    return worst, calls, out.strip().splitlines()


@pytest.mark.parametrize("shape", ["array", "object"])
async def test_several_flat_100_mb_c1s_are_refused_by_shape_and_get_status_answers(make_daemon, shape):
    """Issue 28 item 11: 100 MB flat JSON arrays sent as C1s (bare, or as a member of an object)
    were decoded whole, holding the GIL ~2 s each (GetStatus: 2.1 s for one, 6.9 s for eight);
    each is now refused by its shape, naming it, and GetStatus answers meanwhile."""
    d = await make_daemon()
    n = 4
    for _ in range(ATTEMPTS):
        worst, calls, lines = await _get_status_during_bodies(d, n, 100, shape)
        if worst < BOUND_S:
            break
    assert len(lines) == n
    for line in lines:
        code, _seconds, details = line.split("\t", 2)
        assert code == "INVALID_ARGUMENT", line
        assert ("not a JSON C1" if shape == "array" else "members") in details and "refused before decoding" in details
    assert calls > 3, "the bodies arrived too fast to measure anything"
    assert worst < BOUND_S, f"GetStatus took {worst:.2f}s while {n} flat 100 MB C1s were refused"
    print(f"\n{n} x 100 MB flat ({shape}): worst GetStatus {worst * 1e3:.0f} ms over {calls} calls; "
          f"answers in {', '.join(line.split(chr(9))[1] for line in lines)} s")


async def test_a_refused_body_is_freed_without_waiting_for_the_garbage_collector(make_daemon):
    """Issue 28 item 11: a refusal went through gRPC's abort, whose stored exception tied the
    handler's frames (and the body they hold) into a cycle: eight refused 100 MB bodies kept
    5.6 GB until a full collection. No frame of the service is left in a cycle now."""
    import gc
    import types

    import grpc

    d = await make_daemon()
    stub = d.stub()
    reqs = [pb.SubmitProofRequest(request_id=f"flat-gc-{i}", proof_kind=pb.POREP_SEAL_COMMIT, sector_size=2048,
                                  vanilla_proof=b"[" + b"1," * (8 << 20) + b"1]") for i in range(4)]
    gc.collect()
    gc.disable()
    try:
        answers = await asyncio.gather(*(stub.SubmitProof(r, timeout=30) for r in reqs), return_exceptions=True)
        for err in answers:
            assert isinstance(err, grpc.aio.AioRpcError) and err.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "not a JSON C1" in err.details()
        await asyncio.sleep(0.3)  # the handler's task is done
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        cyclic = sorted({f"{o.f_code.co_filename.rsplit('/', 1)[-1]}:{o.f_code.co_name}" for o in gc.garbage
                         if isinstance(o, types.FrameType) and "cuzk_plugin" in o.f_code.co_filename})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert cyclic == [], f"frames (holding the body) left in reference cycles: {cyclic}"
    await stub.GetStatus(pb.GetStatusRequest(), timeout=5)
