#!/usr/bin/env python3
"""A minimal cuzk.v1 client: what Curio does, in Python.

    python examples/daemon_client.py -a unix:///run/curio/cuzk.sock            # a synthetic proof
    python examples/daemon_client.py -a 127.0.0.1:9820 --log2 12 --partitions 4

1. GetStatus, as Curio does for back-pressure (pending + in_progress vs its MaxPending).
2. Prove: submit and wait in one call, with a deadline (Curio's ProveTimeout).
3. Check the answer: COMPLETED with partitions x 192 bytes, else the daemon's error message.
"""

from __future__ import annotations

import argparse
import sys

import grpc

from cuzk_plugin.server.client import sync_channel
from cuzk_plugin.server.proto import cuzk_pb2 as pb
from cuzk_plugin.server.proto import cuzk_pb2_grpc


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-a", "--addr", default="unix:///run/curio/cuzk.sock", help="host:port or unix:///path")
    p.add_argument("--log2", type=int, default=10, help="2^K constraints per partition")
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--deadline", type=float, default=1800.0, help="seconds (Curio's ProveTimeout is 30 min)")
    args = p.parse_args()

    with sync_channel(args.addr) as channel:
        stub = cuzk_pb2_grpc.ProvingEngineStub(channel)
        status = stub.GetStatus(pb.GetStatusRequest(), timeout=5)
        busy = sum(q.pending + q.in_progress for q in status.queues)
        print(f"daemon up {status.uptime_seconds} s, {len(status.gpus)} device(s), {busy} job(s) pending or running")

        request = pb.SubmitProofRequest(
            request_id=f"example-{args.log2}-{args.partitions}",  # a repeated id attaches to a running job
            proof_kind=pb.SYNTHETIC,
            synthetic=pb.SyntheticInput(log2_constraints=args.log2, partitions=args.partitions, seed=1),
        )
        try:
            result = stub.Prove(pb.ProveRequest(submit=request), timeout=args.deadline).result
        except grpc.RpcError as exc:  # INVALID_ARGUMENT for a malformed request, DEADLINE_EXCEEDED, ...
            print(f"rpc error: {exc.code().name}: {exc.details()}")
            return 2
    if result.status != pb.AwaitProofResponse.COMPLETED:
        name = pb.AwaitProofResponse.Status.Name(result.status)
        print(f"cuzk proof failed ({name}): {result.error_message}")
        return 1
    print(f"{result.job_id}: {len(result.proof)} bytes ({result.partitions} x 192), verified by the daemon before return")
    print(f"  queue {result.queue_wait_ms} ms, srs {result.srs_load_ms} ms, synthesis {result.synthesis_ms} ms, "
          f"gpu {result.gpu_compute_ms} ms, total {result.total_ms} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
