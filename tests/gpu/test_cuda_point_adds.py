"""The addition-throughput benchmark of issue 27 (kernels/bench/point_adds.cu) adds right on the
device: the mixed XYZZ loop and the batch-affine one in every batch size sum 2^23 additions
over 2^16 random points to (additions / points) (sum of their discrete logarithms) G."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("batch", [0, 8, 16, 32, 64])
def test_point_adds_sum_right(cuda_bench, batch):
    times, ok = cuda_bench.point_adds(batch, 16, 23, 2)
    assert ok, f"batch {batch}: wrong sum"
    assert len(times) == 2 and all(t > 0 for t in times)


def test_point_adds_refuses_a_batch_it_has_no_kernel_for(cuda_bench):
    with pytest.raises(ValueError, match="batch must be"):
        cuda_bench.point_adds(12, 16, 23, 1)
