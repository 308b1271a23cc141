"""Partitions started back to back on the CUDA backend: the next one uploads (pinned staging,
its own stream) while the current one computes, and the sums stay exactly the cpu backend's."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_plugin.backends.cuda.backend import PROVE_TIMINGS
from cuzk_plugin.bls12_381.fields import random_fr
from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.groth16.setup import setup

pytestmark = pytest.mark.gpu

FIELDS = ("h", "l", "a", "b_g1", "b_g2")


def test_back_to_back_partitions_match_cpu(cuda, cpu, rng):
    # 1029 constraints: a, b, c are zero padded to 2^11 on the device.
    shape, _, _ = filecoin_like(1 << 10, seed=0).finish()
    key = setup(shape)
    parts = [synthesize(*filecoin_like(1 << 10, seed=seed).finish()) for seed in (3, 4, 5)]
    cpu_srs = cpu.load_srs(key)
    want = [cpu.prove_finish(cpu.prove_start(cpu_srs, p)) for p in parts]
    srs = cuda.load_srs(key)
    try:
        pending = [cuda.prove_start(srs, p) for p in parts]  # all three before any finish
        # Another entry point while they run: it waits for the device in turn.
        x = random_fr(rng, 1 << 8)
        np.testing.assert_array_equal(cuda.ntt(x), cpu.ntt(x))
        got = [cuda.prove_finish(p) for p in pending]
    finally:
        srs.release()
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        for field in FIELDS:
            np.testing.assert_array_equal(getattr(g, field), getattr(w, field), err_msg=f"partition {i}: {field}")
    for p in pending:
        assert tuple(p.timings_ms) == PROVE_TIMINGS
        assert p.timings_ms["upload"] > 0 and p.timings_ms["queue"] >= 0 and p.timings_ms["total"] > 0


@pytest.mark.parametrize("overlap", [True, False])
def test_bench_pipeline_runs(cuda_bench, overlap):
    total, per_part = cuda_bench.bench_pipeline(12, 3, overlap=overlap)
    assert total > 0 and len(per_part) == 3
    for stages in per_part:
        assert stages["upload"] > 0 and stages["total"] > 0 and stages["queue"] >= 0
