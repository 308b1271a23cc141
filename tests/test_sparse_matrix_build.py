"""SparseMatrix.from_terms against a plain-Python oracle: a dict of (row, col) -> sum mod r."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.r1cs import SparseMatrix
from cuzk_plugin.errors import CircuitError


def _oracle(rows, cols, coeffs) -> tuple[list[int], list[int], list[int]]:
    """Sum duplicates mod r, drop zeros, sort by (row, col): the specification, term by term."""
    acc: dict[tuple[int, int], int] = {}
    for r, c, k in zip(rows, cols, coeffs, strict=True):
        acc[(int(r), int(c))] = (acc.get((int(r), int(c)), 0) + int(k)) % R
    items = sorted((rc, v) for rc, v in acc.items() if v)
    return [rc[0] for rc, _ in items], [rc[1] for rc, _ in items], [v for _, v in items]


def _assert_matches(m: SparseMatrix, rows, cols, coeffs) -> None:
    want_rows, want_cols, want_vals = _oracle(rows, cols, coeffs)
    assert m.rows.dtype == np.int64 and m.cols.dtype == np.int64 and m.coeffs.dtype == object
    assert m.rows.tolist() == want_rows
    assert m.cols.tolist() == want_cols
    assert m.coeffs.tolist() == want_vals
    assert all(type(v) is int and 0 < v < R for v in m.coeffs.tolist())


_SPECIAL = [0, 1, -1, 2, -2, 1 << 40, 1 << 62, (1 << 62) - 1, -(1 << 62), 1 << 63, -(1 << 63), 1 << 64,
            R - 1, R, R + 1, -R, 2 * R + 5, 1 << 255, 1 << 300, -(1 << 300), (1 << 300) * R]


def _random_terms(rng: np.random.Generator, n: int, n_rows: int, n_cols: int, *, sort_rows: bool):
    rows = rng.integers(0, n_rows, n)
    if sort_rows:
        rows.sort()
    cols = rng.integers(0, n_cols, n)
    pick = rng.integers(0, 4, n)
    coeffs = [
        int(rng.integers(-5, 6)) if p == 0 else _SPECIAL[int(rng.integers(len(_SPECIAL)))] if p == 1
        else int(rng.integers(-(1 << 62), 1 << 62)) if p == 2 else int.from_bytes(rng.bytes(40), "little") - (1 << 319)
        for p in pick
    ]
    return rows.tolist(), cols, coeffs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sort_rows", [True, False])
def test_random_terms_match_oracle(seed: int, sort_rows: bool) -> None:
    rng = np.random.default_rng(seed)
    # few rows and columns: many repeated (row, col) keys
    rows, cols, coeffs = _random_terms(rng, 3000, 40, 30 if seed % 2 else 3000, sort_rows=sort_rows)
    _assert_matches(SparseMatrix.from_terms(rows, cols, coeffs), rows, cols, coeffs)


def test_sorted_distinct_keys_keep_order_and_reduce() -> None:
    rows, cols = [0, 0, 1, 2, 2], [0, 3, 1, 0, 5]
    coeffs = [-1, R + 3, 1 << 300, 7, R]  # R reduces to zero and is dropped
    m = SparseMatrix.from_terms(rows, cols, coeffs)
    _assert_matches(m, rows, cols, coeffs)
    assert m.rows.tolist() == [0, 0, 1, 2]


def test_duplicates_cancel_to_zero_and_are_dropped() -> None:
    rows, cols = [3, 1, 3, 1, 1, 0], [2, 2, 2, 2, 2, 9]
    coeffs = [5, 1 << 300, -5, -(1 << 300), R, 4]  # (3,2): 5-5; (1,2): 2^300-2^300+R
    m = SparseMatrix.from_terms(rows, cols, coeffs)
    assert (m.rows.tolist(), m.cols.tolist(), m.coeffs.tolist()) == ([0], [9], [4])


def test_unsorted_input_is_sorted_by_row_then_col() -> None:
    rows, cols, coeffs = [2, 0, 1, 0, 2], [1, 5, 0, 2, 0], [1, 2, 3, 4, 5]
    m = SparseMatrix.from_terms(rows, cols, coeffs)
    assert list(zip(m.rows.tolist(), m.cols.tolist(), strict=True)) == [(0, 2), (0, 5), (1, 0), (2, 0), (2, 1)]
    assert m.coeffs.tolist() == [4, 2, 3, 5, 1]


def test_empty_and_all_zero() -> None:
    m = SparseMatrix.from_terms([], [], [])
    assert m.rows.size == m.cols.size == m.coeffs.size == 0 and m.coeffs.dtype == object
    z = SparseMatrix.from_terms([0, 1, 1], [0, 0, 0], [0, R, -R])
    assert z.rows.size == z.cols.size == z.coeffs.size == 0


def test_numpy_coefficient_inputs() -> None:
    rng = np.random.default_rng(7)
    rows, cols = rng.integers(0, 20, 500), rng.integers(0, 20, 500)
    small = rng.integers(-(1 << 63), (1 << 63) - 1, 500, dtype=np.int64, endpoint=True)
    _assert_matches(SparseMatrix.from_terms(rows, cols, small), rows, cols, small.tolist())
    unsigned = rng.integers(0, 1 << 64, 500, dtype=np.uint64, endpoint=False)
    _assert_matches(SparseMatrix.from_terms(rows, cols, unsigned), rows, cols, unsigned.tolist())
    _, _, big = _random_terms(rng, 500, 20, 20, sort_rows=False)
    obj = np.array(big, dtype=object)
    _assert_matches(SparseMatrix.from_terms(rows, cols, obj), rows, cols, big)
    scalars = list(small)  # numpy int64 scalars in a list
    _assert_matches(SparseMatrix.from_terms(rows, cols, scalars), rows, cols, small.tolist())


def test_bad_terms_are_refused() -> None:
    with pytest.raises(CircuitError, match="shapes"):
        SparseMatrix.from_terms([0, 1], [0, 1], [1])
    with pytest.raises(CircuitError, match="negative"):
        SparseMatrix.from_terms([0, 1], [0, -1], [1, 1])
    with pytest.raises(CircuitError, match="integers"):
        SparseMatrix.from_terms([0], [0], np.array([1.5]))
