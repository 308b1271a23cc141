"""The two demos: the embedded default job through the daemon, and the same kind of job in-process.

:func:`run_daemon_demo` (``./dev demo``, ``cuzk-bench demo``, ``python -m cuzk_plugin.demo``):
start `cuzk-daemon` on the embedded default config (a temporary Unix socket, keys cached under
~/.cache/cuzk-plugin/params), prove a small synthetic batch through the gRPC API, verify every
proof on the client side, print the timings, stop the daemon.

    python -m cuzk_plugin.demo [--log2 10] [--partitions 2] [-c 4] [-j 2]
    cuzk-bench demo                     (the same)

:func:`run_in_process` (``cuzk demo``): set up, prove and verify a Filecoin-shaped example circuit
(several partitions, batch-verified) on a backend of this process, printing per-stage timings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The embedded default config: everything at its default except where it listens and caches.
DEMO_CONFIG = """\
[daemon]
listen = "unix://{socket}"
status_listen = ""

[srs]
param_cache = "{param_cache}"

[gpus]
backend = "{backend}"
"""


def demo_param_cache() -> Path:
    return Path(os.environ.get("CUZK_DEMO_PARAM_CACHE", Path.home() / ".cache" / "cuzk-plugin" / "params"))


async def wait_serving(address: str, proc: subprocess.Popen, log_path: Path, timeout: float = 120.0) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from cuzk_plugin.server.client import aio_channel

    deadline = time.monotonic() + timeout
    async with aio_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the daemon exited with {proc.returncode}:\n{log_path.read_text()}")
            try:
                r = await health.Check(health_pb2.HealthCheckRequest(service="cuzk.v1.ProvingEngine"), timeout=1)
                if r.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"the daemon did not start in {timeout:.0f}s; log: {log_path}")
            await asyncio.sleep(0.2)


def verify_records(records, param_cache: Path, log2: int, partitions: int) -> tuple[int, float]:
    """Client-side check of every proof against the cached key: (valid proofs, seconds)."""
    from cuzk_plugin.bls12_381.fields import limbs_to_ints
    from cuzk_plugin.circuit.examples import filecoin_like
    from cuzk_plugin.formats.params import VerifyingKey
    from cuzk_plugin.formats.proof import decode_proofs
    from cuzk_plugin.groth16.verifier import batch_verify

    t0 = time.perf_counter()
    vk = VerifyingKey.load(param_cache / f"synthetic-k{log2}.params")
    valid = 0
    for r in records:
        if r.status != "COMPLETED":
            continue
        proofs = decode_proofs(r.proof)
        inputs = [limbs_to_ints(filecoin_like(1 << log2, seed=r.seed + p).finish_witness()[1])[1:] for p in range(partitions)]
        valid += bool(len(proofs) == partitions and batch_verify(vk, proofs, inputs))
    return valid, time.perf_counter() - t0


def run_daemon_demo(log2: int = 10, partitions: int = 2, count: int = 4, concurrency: int = 2, backend: str = "auto",
             json_out: bool = False) -> int:
    from cuzk_plugin.server.batch import format_record, print_summary, run_batch, summarize
    from cuzk_plugin.server.client import sync_channel
    from cuzk_plugin.server.proto import cuzk_pb2 as pb
    from cuzk_plugin.server.proto import cuzk_pb2_grpc

    work = Path(tempfile.mkdtemp(prefix="cuzk-demo-"))
    cache = demo_param_cache()
    cache.mkdir(parents=True, exist_ok=True)
    sock = work / "cuzk.sock"
    config = work / "cuzk.toml"
    config.write_text(DEMO_CONFIG.format(socket=sock, param_cache=cache, backend=backend))
    log_path = work / "daemon.log"
    address = f"unix://{sock}"
    say = (lambda *a: None) if json_out else print
    say(f"cuzk daemon demo: {count} proofs x {partitions} partitions of 2^{log2} constraints, {concurrency} at a time")
    say(f"  daemon: cuzk-daemon -c {config}  (log {log_path}, keys in {cache})")
    t_start = time.perf_counter()
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen([sys.executable, "-m", "cuzk_plugin.cli.daemon", "-c", str(config), "--log-level", "info"],
                                stdout=log_file, stderr=subprocess.STDOUT)
    try:
        asyncio.run(wait_serving(address, proc, log_path))
        t_up = time.perf_counter() - t_start
        with sync_channel(address) as channel:
            stub = cuzk_pb2_grpc.ProvingEngineStub(channel)
            status = stub.GetStatus(pb.GetStatusRequest(), timeout=10)
            say(f"  started in {t_up:.2f} s on {address}; {status.backend}")
            t0 = time.perf_counter()
            pre = stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id=f"synthetic-k{log2}"), timeout=600)
            say(f"  key synthetic-k{log2}: {'already loaded' if pre.already_loaded else 'ready'} in "
                f"{time.perf_counter() - t0:.2f} s (generated once, then cached)")
        def synthetic_request(request_id: str, index: int):
            return pb.SubmitProofRequest(request_id=request_id, proof_kind=pb.SYNTHETIC, synthetic=pb.SyntheticInput(
                log2_constraints=log2, partitions=partitions, seed=1 + 1000 * index))

        records, wall = asyncio.run(run_batch(address, synthetic_request, count, concurrency, show_progress=False))
        valid, t_verify = verify_records(records, cache, log2, partitions)
        summary = summarize(records, wall, partitions)
        summary |= {"client_verified": valid, "client_verify_s": round(t_verify, 3), "startup_s": round(t_up, 3)}
        if json_out:
            print(json.dumps(summary, indent=2))
        else:
            for r in sorted(records, key=lambda r: r.job_id):
                say("  " + format_record(r))
            print_summary(summary)
            say(f"client-side verification: {valid}/{len(records)} proofs valid ({t_verify:.2f} s)")
        ok = valid == count
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        say(f"  daemon stopped (exit {proc.returncode})")
    if ok and proc.returncode == 0:
        shutil.rmtree(work, ignore_errors=True)
        return 0
    say(f"demo FAILED; daemon log kept in {log_path}")
    return 1


def run_in_process(log2: int = 12, backend_name: str = "auto", partitions: int = 2) -> int:
    """``cuzk demo``: set up, prove and verify a Filecoin-shaped example circuit in this process
    (several partitions, batch-verified), printing per-stage timings."""
    from cuzk_plugin.backends.registry import get_backend
    from cuzk_plugin.bls12_381.fields import limbs_to_ints
    from cuzk_plugin.circuit.examples import filecoin_like
    from cuzk_plugin.circuit.r1cs import synthesize
    from cuzk_plugin.formats.proof import decode_proofs, encode_proofs
    from cuzk_plugin.groth16.prover import ProveTimings, prove
    from cuzk_plugin.groth16.setup import setup
    from cuzk_plugin.groth16.verifier import batch_verify

    backend = get_backend(backend_name)
    print(f"cuzk demo: {partitions} partitions of 2^{log2} constraints on backend '{backend.name}'")
    t = time.perf_counter()
    shape, _, _ = filecoin_like(1 << log2, seed=0).finish()
    key = setup(shape)
    print(f"  setup          {time.perf_counter() - t:8.3f} s  (domain {key.domain_size:,}, key {key.vectors_nbytes / 1e6:.1f} MB)")
    t = time.perf_counter()
    srs = backend.load_srs(key)
    print(f"  srs load       {time.perf_counter() - t:8.3f} s")
    proofs, publics = [], []
    try:
        for k in range(partitions):
            t = time.perf_counter()
            r1cs, inputs, aux = filecoin_like(1 << log2, seed=k + 1).finish_witness()
            part = synthesize(r1cs, inputs, aux)
            t_syn = time.perf_counter() - t
            timings = ProveTimings()
            proofs.append(prove(key, part, backend, srs=srs, timings=timings))
            publics.append(limbs_to_ints(inputs)[1:])
            print(f"  partition {k}    synthesis {t_syn:.3f} s, h+msm {timings.msm:.3f} s, assemble {timings.assemble:.3f} s")
    finally:
        srs.release()
    blob = encode_proofs(proofs)
    t = time.perf_counter()
    ok = batch_verify(key.vk, decode_proofs(blob), publics)
    print(f"  batch verify   {time.perf_counter() - t:8.3f} s  -> {'VALID' if ok else 'INVALID'} ({len(blob)} proof bytes)")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m cuzk_plugin.demo", description=__doc__.splitlines()[0])
    p.add_argument("--log2", type=int, default=10)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("-c", "--count", type=int, default=4)
    p.add_argument("-j", "--concurrency", type=int, default=2)
    p.add_argument("--backend", default="auto")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    return run_daemon_demo(a.log2, a.partitions, a.count, a.concurrency, a.backend, a.json)


if __name__ == "__main__":
    sys.exit(main())
