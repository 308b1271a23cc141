"""Partitions uploaded straight from pinned host memory (the engine's recycled shared-memory
blocks, registered with pin_host): the sums stay exactly the cpu backend's; registering twice
or unregistering what is not registered is an error that says so."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.engine.synthesis import SharedPartition, run_task
from cuzk_plugin.errors import BackendError
from cuzk_plugin.formats.partition import SynthesizedPartition
from cuzk_plugin.groth16.setup import setup

pytestmark = pytest.mark.gpu

FIELDS = ("h", "l", "a", "b_g1", "b_g2")


@dataclass(frozen=True)
class Given:
    part: SynthesizedPartition

    def synthesize(self) -> tuple[SynthesizedPartition, list[int]]:
        return self.part, []


def _address(shared: SharedPartition) -> tuple[int, int]:
    (shm,) = shared._blocks
    return np.ndarray((shm.size,), np.uint8, buffer=shm.buf).__array_interface__["data"][0], shm.size


def test_partitions_from_pinned_blocks_match_cpu(cuda, cpu):
    shape, _, _ = filecoin_like(1 << 10, seed=0).finish()
    key = setup(shape)
    parts = [synthesize(*filecoin_like(1 << 10, seed=seed).finish()) for seed in (6, 7)]
    want = [cpu.prove_finish(cpu.prove_start(cpu.load_srs(key), p)) for p in parts]
    shared = [SharedPartition(run_task(Given(p))) for p in parts]  # one block each, as a worker makes it
    pinned = [_address(s) for s in shared]
    for address, size in pinned:
        cuda.pin_host(address, size)
    srs = cuda.load_srs(key)
    try:
        with pytest.raises(BackendError, match=r"already registered|cudaHostRegister"):
            cuda.pin_host(*pinned[0])
        pending = [cuda.prove_start(srs, s.partition) for s in shared]
        got = [cuda.prove_finish(p) for p in pending]
    finally:
        srs.release()
        for address, _ in pinned:
            cuda.unpin_host(address)
        for s in shared:
            s.release()
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        for field in FIELDS:
            np.testing.assert_array_equal(getattr(g, field), getattr(w, field), err_msg=f"partition {i}: {field}")
    with pytest.raises(BackendError, match=r"not registered|cudaHostUnregister"):
        cuda.unpin_host(pinned[0][0])
    # the failed call leaves nothing behind: the next launch check of another call passes
    srs = cuda.load_srs(key)
    srs.release()


def test_the_link_is_measured_from_page_locked_memory(cuda):
    """What a lane states its streamed key's floor at: a host -> device rate a PCIe link can
    have (PCIe 3.0 x4 ~3.5 GB/s up to PCIe 5.0 x16 ~55 GB/s, NVLink-C2C more), the same again."""
    first, second = cuda.link_bytes_per_s(), cuda.link_bytes_per_s()
    print(f"\nhost -> device link: {first / 1e9:.1f}, {second / 1e9:.1f} GB/s")
    assert 2e9 < first < 1000e9 and 2e9 < second < 1000e9
    assert abs(first - second) < 0.25 * max(first, second)
