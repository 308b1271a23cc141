"""What a client's latency holds beyond the daemon's job for a large request: a PoRep body of MB
megabytes (Curio's 32 GiB envelope is ~65 MB) sent to Prove and refused at once by its shape, so
that the round trip is the transfer and the request's handling alone. Three ways, each from a
client process of its own over TCP on this host:

- ``bare``: a bare grpc.aio echo server, the bytes passed through (gRPC's own cost);
- ``daemon``: the daemon (cpu backend), the request serialized before the clock starts;
- ``serialized``: the daemon, the request serialized inside the timed call (``cuzk-bench`` now);
- ``wrapped``: the same, and ``pb.ProveRequest(submit=req)`` built inside it too, which copies
  the body (``cuzk-bench`` before the seventh session of 2026-12-06).

Run from the repository root:

    python bench/daemon/large_request_rtt.py [MB] [RUNS]
"""

import asyncio
import sys
import tempfile
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "daemon"))
from daemon_helpers import daemon_config

from cuzk_plugin.adapters import builtin_providers
from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.engine.circuits import ProviderRegistry
from cuzk_plugin.engine.engine import Engine
from cuzk_plugin.engine.synthesis import SynthesisPool
from cuzk_plugin.server.app import start_server

_CLIENT = r'''
import statistics, sys, time, grpc
from cuzk_plugin.server.proto import cuzk_pb2 as pb
address, way, mb, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
channel = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 300 << 20)])
body = b"[" + b"A" * (mb << 20)  # not a JSON object: refused before decoding
req = pb.SubmitProofRequest(request_id="rtt", proof_kind=pb.POREP_SEAL_COMMIT, sector_size=34359738368,
                            vanilla_proof=body)
if way == "bare":
    call, make = channel.unary_unary("/t.Echo/M"), lambda: body
elif way == "daemon":
    raw = pb.ProveRequest(submit=req).SerializeToString()
    call, make = channel.unary_unary("/cuzk.v1.ProvingEngine/Prove"), lambda: raw
else:
    call = channel.unary_unary("/cuzk.v1.ProvingEngine/Prove", request_serializer=pb.ProveRequest.SerializeToString)
    prove = pb.ProveRequest(submit=req)
    make = (lambda: prove) if way == "serialized" else (lambda: pb.ProveRequest(submit=req))
times = []
for _ in range(runs + 1):  # the first is a warm-up
    t0 = time.perf_counter()
    try:
        call(make())
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, exc
    times.append((time.perf_counter() - t0) * 1e3)
times = times[1:]
print(f"{way:>12}: {mb} MB round trip, median {statistics.median(times):.0f} ms "
      f"({min(times):.0f}-{max(times):.0f}, {runs} runs)")
'''


async def _client(address: str, way: str, mb: int, runs: int) -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", _CLIENT, address, way, str(mb), str(runs))
    assert await proc.wait() == 0


async def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 65
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    echo = grpc.aio.server(options=[("grpc.max_receive_message_length", 300 << 20)])

    async def reply(_request: bytes, _context) -> bytes:
        return b"ok"

    echo.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "t.Echo", {"M": grpc.unary_unary_rpc_method_handler(reply)}),))
    port = echo.add_insecure_port("127.0.0.1:0")
    await echo.start()
    await _client(f"127.0.0.1:{port}", "bare", mb, runs)
    await echo.stop(0)

    with tempfile.TemporaryDirectory(prefix="rtt-params-") as params:
        engine = Engine(daemon_config(Path(params)), backends=[CpuBackend()],
                        providers=ProviderRegistry(builtin_providers(), load_plugins=False),
                        synthesis_pool=SynthesisPool(1, 1))
        await engine.start()
        server = await start_server(engine, ["127.0.0.1:0"], "")
        try:
            for way in ("daemon", "serialized", "wrapped"):
                await _client(server.addresses[0], way, mb, runs)
        finally:
            await server.stop(0.5)
            await engine.stop()


if __name__ == "__main__":
    asyncio.run(main())
