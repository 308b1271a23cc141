"""The anchors: sppark's times on an H200 (../shared/anchors.md, measured 2026-12-02), the one
table every kernel benchmark reports its ratio against. Keys are (operation, log2 size);
operations as ``cuzk-bench kernels --op`` names them. sppark's NTT ends in bit-reversed order."""

from __future__ import annotations

#: Milliseconds, by (op, log2 size).
SPPARK_H200_MS: dict[tuple[str, int], float] = {
    ("msm-g1", 20): 21.8,
    ("msm-g1", 22): 54.2,
    ("msm-g1", 24): 160.0,
    ("msm-g1", 26): 559.0,
    ("msm-g1", 27): 1099.0,
    ("ntt", 24): 4.43,
    ("ntt", 26): 21.0,
    ("ntt", 27): 42.4,
    ("ntt-inverse", 24): 4.67,
    ("ntt-inverse", 26): 23.6,
    ("ntt-inverse", 27): 44.3,
    ("ntt-coset", 24): 5.01,
    ("ntt-coset", 26): 24.9,
    ("ntt-coset", 27): 46.5,
}


def anchor_ms(op: str, log2: int) -> float | None:
    """sppark's H200 time for ``op`` at 2^log2, or None where the anchors list none."""
    return SPPARK_H200_MS.get((op, log2))
