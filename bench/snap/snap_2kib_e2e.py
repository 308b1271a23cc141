"""A 2 KiB SnapDeals update proved through an in-process daemon (gRPC Prove) with
our test key; prints each run's stage times. Run from the repository root:

    python bench/snap/snap_2kib_e2e.py KEY.params [RUNS [BACKEND]]

BACKEND: cpu (default) or opencl (PoCL on a machine without a GPU).

KEY.params: a snap-2k test key (SnapKeyGenerator(2048, path)(), or the one the slow daemon test
keeps in $CUZK_TEST_KEY_CACHE).
"""

import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, "tests/daemon")
from daemon_helpers import daemon_config

from cuzk_plugin.adapters.curio.snap.provider import SnapCircuitProvider
from cuzk_plugin.backends.registry import get_backend
from cuzk_plugin.engine.circuits import ProviderRegistry
from cuzk_plugin.engine.engine import Engine
from cuzk_plugin.engine.synthesis import SynthesisPool
from cuzk_plugin.filecoin.fixtures.seal import seal
from cuzk_plugin.filecoin.fixtures.snap_seal import snap_update, vanilla_proofs
from cuzk_plugin.server.app import start_server
from cuzk_plugin.server.client import aio_channel
from cuzk_plugin.server.proto import cuzk_pb2 as pb
from cuzk_plugin.server.proto import cuzk_pb2_grpc


async def main(key: Path, runs: int, backend: str) -> None:
    cache = Path(tempfile.mkdtemp(prefix="snap-bench-"))
    shutil.copyfile(key, cache / "snap-2k-test-key.params")
    pool = SynthesisPool(2)
    pool.warm_up()
    cfg = daemon_config(cache, srs={"allow_test_keys": True, "max_generated_log2": 21})
    providers = ProviderRegistry([SnapCircuitProvider(allow_test_keys=True)], load_plugins=False)
    engine = Engine(cfg, backends=[get_backend(backend)], providers=providers, synthesis_pool=pool)
    await engine.start()
    server = await start_server(engine, ["127.0.0.1:0"], "")
    stub = cuzk_pb2_grpc.ProvingEngineStub(aio_channel(server.addresses[0]))
    for i in range(runs):
        u = snap_update(seal("StackedDrg2KiBV1_1", miner_id=1000, sector_id=10 + i, data_seed=i), data_seed=100 + i)
        req = pb.SubmitProofRequest(request_id=f"snap-1000-{10 + i}", proof_kind=pb.SNAP_DEALS_UPDATE,
                                    registered_proof=0, vanilla_proofs=vanilla_proofs(u), sector_number=10 + i,
                                    miner_id=1000, comm_r_old=u.comm_r_old, comm_r_new=u.comm_r_new,
                                    comm_d_new=u.comm_d_new)
        t = time.perf_counter()
        res = (await stub.Prove(pb.ProveRequest(submit=req), timeout=3600)).result
        stages = ", ".join(f"{f.name} {getattr(res, f.name)}" for f in res.DESCRIPTOR.fields if f.name.endswith("_ms"))
        print(f"run {i}: {pb.AwaitProofResponse.Status.Name(res.status)} {len(res.proof)} B, "
              f"wall {time.perf_counter() - t:.1f} s; {stages}", flush=True)
    pool.shutdown()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 3,
                     sys.argv[3] if len(sys.argv) > 3 else "cpu"))
