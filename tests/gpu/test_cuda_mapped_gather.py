"""The mapped-gather probe (kernels/bench/mapped_gather.cu) reads the kept records intact through
the mapped address of page-locked host memory, at every share the benchmark measures."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("permille", [1000, 490, 30, 1])
def test_mapped_gather_reads_the_kept_records(cuda_bench, permille):
    copy, gather, kept, ok = cuda_bench.mapped_gather(14, permille, 2)
    assert ok, f"{permille} permille: a gathered record differs from the host's"
    n = 1 << 14
    assert abs(kept - n * permille / 1000) <= 5 * (n * permille / 1000) ** 0.5 + 1  # binomial share
    assert len(copy) == len(gather) == 2 and all(t > 0 for t in copy)


def test_mapped_gather_refuses_a_share_out_of_range(cuda_bench):
    with pytest.raises(ValueError, match="permille must be"):
        cuda_bench.mapped_gather(14, 0, 1)


def test_msm_over_mapped_points_sums_right(cuda_bench):
    """The MSM reading its points through the mapped address of page-locked memory and the
    streamed and resident ways beside it give (sum k_i d_i) G on a PoRep-like scalar mix."""
    ways, ok = cuda_bench.msm_mapped(16, 0.987, 1)
    assert ok, "one of the three ways summed wrong"
    assert set(ways) == {"resident", "streamed", "mapped"}
    assert all(len(t) == 1 and t[0] > 0 for t in ways.values())
