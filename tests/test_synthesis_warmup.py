"""Synthesis workers warmed as they start: the providers' per-process set-up (for WinningPoSt,
whose whole budget is ~0.5 s) runs in every worker before its first partition."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from pathlib import Path

import pytest

from cuzk_plugin.engine.circuits import ProviderRegistry


def _mark_worker(directory: str) -> None:
    Path(directory, str(os.getpid())).touch()


def test_providers_warm_every_synthesis_worker_as_it_starts(tmp_path):
    # WinningPoSt has ~0.5 s: its per-process set-up (native Poseidon, constants, layouts) runs
    # when a worker starts, not in the first proof that worker takes
    from functools import partial

    from cuzk_plugin.adapters.curio.porep.provider import PorepCircuitProvider, warm_porep_worker
    from cuzk_plugin.adapters.curio.post.provider import PostCircuitProvider, warm_post_worker
    from cuzk_plugin.engine.synthesis import SynthesisPool

    registry = ProviderRegistry([PorepCircuitProvider(), PostCircuitProvider()], load_plugins=False)
    assert registry.worker_warmers() == (warm_porep_worker, warm_post_worker)
    warm_post_worker()  # runs here too (and fails loudly if it cannot)
    pool = SynthesisPool(2, 1, (partial(_mark_worker, str(tmp_path)),))
    try:
        pool.warm_up()
        deadline = time.monotonic() + 20
        while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        pool.shutdown()
    assert len(list(tmp_path.iterdir())) == 2


def _layouts_in_this_worker() -> tuple[int, int]:
    from cuzk_plugin.filecoin.porep.witness_layout import porep_layout
    from cuzk_plugin.filecoin.snap.witness import update_layout

    return porep_layout.cache_info().currsize, update_layout.cache_info().currsize


@pytest.mark.parametrize("present", [(), ("porep-2k", "snap-2k")], ids=["none", "porep-and-snap-2k"])
def test_workers_warm_the_layouts_of_the_circuits_in_the_param_cache(tmp_path, present):
    """The PoRep and SnapDeals layouts (their SHA-256 programs: ~5 s of one core at 32 GiB) are
    made as a worker starts for each size whose pre-compiled circuit is in the param cache, not
    in the first proof after a start; a daemon without one (PoSt only, tests) makes none."""
    from cuzk_plugin.adapters.curio.porep.provider import warm_porep_worker
    from cuzk_plugin.adapters.curio.snap.provider import warm_snap_worker
    from cuzk_plugin.engine.synthesis import SynthesisPool
    from cuzk_plugin.formats.pce import pce_path

    for circuit_id in present:
        pce_path(tmp_path, circuit_id).touch()  # only its presence matters here
    pool = SynthesisPool(1, 1, (warm_porep_worker, warm_snap_worker), tmp_path)
    try:
        pool.warm_up()
        got = pool.submit_raw(_layouts_in_this_worker).result(timeout=120)
    finally:
        pool.shutdown()
    assert got == ((1, 1) if present else (0, 0))


def _niceness() -> int:
    return os.nice(0)


def test_synthesis_workers_yield_the_cpu_to_the_daemon():
    """The GPU lanes' host threads (in the daemon) must win a busy CPU over synthesis: every
    synthesis worker runs SYNTHESIS_NICENESS nicer than the daemon, and so do its children."""
    from cuzk_plugin.engine.synthesis import SynthesisPool
    from cuzk_plugin.engine.workers import SYNTHESIS_NICENESS

    pool = SynthesisPool(1, 1)
    try:
        got = pool.submit_raw(_niceness).result(timeout=60)
    finally:
        pool.shutdown()
    assert got == min(19, os.nice(0) + SYNTHESIS_NICENESS) and got > os.nice(0)


def _slow_warmer() -> None:
    time.sleep(4)


def _engine_slow_to_warm(param_cache: Path):
    """An engine of its own pool (one worker) whose provider's warmer takes 4 s."""
    from cuzk_plugin.adapters.synthetic import SyntheticProvider
    from cuzk_plugin.backends.cpu import CpuBackend
    from cuzk_plugin.config import load_config
    from cuzk_plugin.engine.engine import Engine

    class SlowToWarm(SyntheticProvider):
        warm_worker = staticmethod(_slow_warmer)

    config = load_config(None, {"srs": {"param_cache": str(param_cache)}, "synthesis": {"threads": 1},
                                "gpus": {"backend": "cpu"}})
    return Engine(config, backends=[CpuBackend()], providers=ProviderRegistry([SlowToWarm()], load_plugins=False))


async def test_the_engine_serves_while_its_workers_warm(tmp_path):
    """The engine's start does not wait for its workers' warmers (a key preload overlaps them);
    a job submitted meanwhile waits for a worker and completes."""
    from cuzk_plugin.engine.types import JobStatus, ProofKind, ProofRequest, SyntheticInput

    engine = _engine_slow_to_warm(tmp_path)
    t0 = time.monotonic()
    await engine.start()
    started = time.monotonic() - t0
    try:
        result = await engine.prove(ProofRequest("w", ProofKind.SYNTHETIC, synthetic=SyntheticInput(4)))
        done = time.monotonic() - t0
    finally:
        await engine.stop()
    assert started < 2.0, f"start waited {started:.1f} s for the workers' warm-up"
    assert result.status == JobStatus.COMPLETED and done >= 4.0  # the job waited for the warmed worker


async def test_a_stop_while_the_workers_warm_is_bounded(tmp_path, caplog):
    """A daemon stopped right after its start (workers still in their warmers) stops within its
    bounded wait, quietly, and leaves no worker behind."""
    from cuzk_plugin.engine.engine import STOP_WAIT_S

    before = set(multiprocessing.active_children())  # other tests' pools in this process
    engine = _engine_slow_to_warm(tmp_path)
    await engine.start()
    await asyncio.sleep(1.0)  # the worker is in its warmer now
    assert set(multiprocessing.active_children()) - before
    t0 = time.monotonic()
    with caplog.at_level("WARNING"):
        await engine.stop()
    assert time.monotonic() - t0 < STOP_WAIT_S + 3.0
    assert set(multiprocessing.active_children()) <= before
    assert not [r for r in caplog.records if r.levelno >= 30 and r.name.startswith("cuzk_plugin.engine")]


def _record_small_circuit(name: str, path) -> str:
    """A record function for ensure_pce (module level: it runs in a synthesis worker)."""
    from cuzk_plugin.circuit.examples import filecoin_like
    from cuzk_plugin.circuit.pce_record import precompile_r1cs
    from cuzk_plugin.formats.pce import save_pce

    r1cs, _, _ = filecoin_like(16).finish()
    return save_pce(path, precompile_r1cs(r1cs, name))


def test_a_synthesis_workers_log_records_reach_the_daemons_loggers(tmp_path, caplog):
    """Issue 28 item 13g: a worker found a truncated pre-compiled circuit and said so on bare
    stderr (a spawned worker has no logging set up; its INFO lines were lost). Its records now
    reach the daemon's loggers, with their level."""
    import logging

    from cuzk_plugin.engine.synthesis import SynthesisPool
    from cuzk_plugin.formats.pce import ensure_pce, pce_path

    path = pce_path(tmp_path, "tiny")
    _record_small_circuit("tiny", path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # truncated
    with caplog.at_level(logging.INFO):
        pool = SynthesisPool(1)
        try:
            assert pool._executor.submit(ensure_pce, "tiny", str(tmp_path), _record_small_circuit).result(60) == str(path)
        finally:
            pool.shutdown()
    worker = [r for r in caplog.records if r.name == "cuzk_plugin.formats.pce" and r.process != os.getpid()]
    assert any(r.levelname == "WARNING" and "truncated" in r.getMessage() and "recording it again" in r.getMessage()
               for r in worker), [r.getMessage() for r in worker]
    assert any(r.levelname == "INFO" and "recorded in" in r.getMessage() for r in worker)


def test_the_engine_starts_and_stops_the_providers_planning(tmp_path, caplog):
    """Engine.start reaches each provider's optional ``start(param_cache)`` (the PoRep provider
    starts its planning processes there) and Engine.stop its ``close()``; a provider whose start
    fails is logged, and the daemon serves without its processes."""
    from cuzk_plugin.backends.cpu import CpuBackend
    from cuzk_plugin.config import load_config
    from cuzk_plugin.engine.engine import Engine

    class Hooks:
        kinds = ()

        def __init__(self, fail: bool = False):
            self.fail, self.calls = fail, []

        def start(self, param_cache):
            self.calls.append(("start", Path(param_cache)))
            if self.fail:
                raise OSError("no processes today")

        def close(self):
            self.calls.append(("close",))

    good, bad = Hooks(), Hooks(fail=True)
    registry = ProviderRegistry(load_plugins=False)
    registry._by_kind = {1: good, 2: bad}  # kinds of their own: only the hooks matter here

    async def run():
        config = load_config(None, {"srs": {"param_cache": str(tmp_path)}, "daemon": {"status_listen": ""},
                                    "gpus": {"backend": "cpu"}, "synthesis": {"threads": 1}})
        engine = Engine(config, backends=[CpuBackend()], providers=registry)
        await engine.start()
        await engine.stop()

    asyncio.run(run())
    assert good.calls == [("start", tmp_path), ("close",)] and bad.calls == [("start", tmp_path), ("close",)]
    assert "failed to start its planning processes" in caplog.text and "no processes today" in caplog.text
