"""Time a TEST key made on the GPU (CudaBackend.generate_srs) for a pre-compiled circuit file or
a synthetic Filecoin-shaped one, with the stage times and the device memory peak:

    python -m cuzk_plugin.backends.cuda.keygen_timing --circuit-file pce-porep-32g.pce
    python -m cuzk_plugin.backends.cuda.keygen_timing --synthetic-log2 27

The synthetic circuit has the 32 GiB PoRep partition's shape where it matters to key generation
(rows, 328 inputs, about one aux variable a row, 1-2 terms a row in A and B, one in C, ONE in half
of B's rows as in the boolean constraints b (1 - b) = 0, the column sums' hottest spot); its
constraints are not satisfiable and no proof is made with it.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from cuzk_plugin.bls12_381.fields import R, ints_to_limbs
from cuzk_plugin.formats.params import SetupSecrets
from cuzk_plugin.formats.pce import CsrMatrix, PrecompiledCircuit, load_pce

__all__ = ["synthetic_pce", "time_keygen"]


def _csr(first: np.ndarray, second: np.ndarray | None, coeff: np.ndarray, num_inputs: int,
         input_terms: bool) -> CsrMatrix:
    """A matrix whose constraint row i holds ``first[i]`` (when >= 0) and ``second[i]`` (when
    >= 0), ascending, followed by ``num_inputs`` input rows: row j holding input j with
    coefficient 1 (A, ``input_terms``), or empty."""
    n_c = first.shape[0]
    has1 = first >= 0
    has2 = second >= 0 if second is not None else np.zeros(n_c, dtype=bool)
    lens = np.concatenate([has1.astype(np.int64) + has2, np.full(num_inputs, int(input_terms), dtype=np.int64)])
    rows = lens.shape[0]
    row_ptr = np.zeros(rows + 1, dtype=np.uint64)
    np.cumsum(lens, out=row_ptr[1:])
    nnz = int(row_ptr[-1])
    cols = np.empty(nnz, dtype=np.uint32)
    start = row_ptr[:n_c].astype(np.int64)
    if second is None:
        cols[start[has1]] = first[has1]
    else:
        lo, hi = np.minimum(first, second), np.maximum(first, second)
        both = has1 & has2
        cols[start[both]], cols[start[both] + 1] = lo[both], hi[both]
        one = has1 ^ has2
        cols[start[one]] = np.where(has1, first, second)[one]
    if input_terms:
        cols[int(row_ptr[n_c]):] = np.arange(num_inputs, dtype=np.uint32)
    coeff_idx = np.zeros(nnz, dtype=np.uint32)
    coeff_idx[: int(row_ptr[n_c])] = coeff[: int(row_ptr[n_c])]
    return CsrMatrix(row_ptr, cols, coeff_idx)


def synthetic_pce(log_rows: int, num_inputs: int = 328, seed: int = 0) -> PrecompiledCircuit:
    """A circuit of 2^log_rows - 1 rows (the last ``num_inputs`` the input rows) over
    ``num_inputs`` inputs and one aux variable a constraint row: A row i holds aux i and, half
    the time, a random variable; B a random variable and, half the time, ONE; C a random variable
    (90 % of rows); coefficients mostly 1, some -1, 2^k or arbitrary, like Filecoin's."""
    rng = np.random.default_rng(seed)
    rows = (1 << log_rows) - 1
    n_c = rows - num_inputs
    if n_c < 1:
        raise ValueError(f"2^{log_rows} - 1 rows leave no room for {num_inputs} input rows")
    num_aux = n_c
    num_vars = num_inputs + num_aux
    coeffs = ints_to_limbs([1, R - 1, 2, 1 << 17, R - (1 << 31)] + [int(x) for x in rng.integers(1, 1 << 62, size=11)])

    def column(p_present: float) -> np.ndarray:
        c = rng.integers(0, num_vars, size=n_c, dtype=np.int64)
        c[rng.random(n_c) >= p_present] = -1
        return c

    def coefficients(nnz: int) -> np.ndarray:
        kind = rng.random(nnz)
        idx = np.where(kind < 0.7, 0, np.where(kind < 0.8, 1, rng.integers(2, coeffs.shape[0], size=nnz)))
        return idx.astype(np.uint32)

    a = _csr(num_inputs + np.arange(n_c, dtype=np.int64), column(0.5), coefficients(2 * n_c), num_inputs, True)
    ones = np.where(rng.random(n_c) < 0.5, 0, -1)
    b = _csr(ones, column(1.0), coefficients(2 * n_c), num_inputs, False)
    c = _csr(column(0.9), None, coefficients(n_c), num_inputs, False)
    dens = []
    for mat in (a, b):
        flags = np.zeros(num_vars, dtype=bool)
        flags[mat.cols] = True
        dens.append(flags)
    return PrecompiledCircuit(
        name=f"synthetic-2^{log_rows}", num_inputs=num_inputs, num_aux=num_aux, num_constraints=rows,
        coeffs=coeffs, a=a, b=b, c=c, a_aux_density=dens[0][num_inputs:], b_input_density=dens[1][:num_inputs],
        b_aux_density=dens[1][num_inputs:], digest="synthetic",
    )


def time_keygen(pce: PrecompiledCircuit, device: int = 0) -> dict[str, float]:
    """Load ``pce`` on the GPU, make a key for fresh secrets, release both; the timings in ms
    (circuit upload, each generation stage, total) and the memory figures in bytes."""
    from cuzk_plugin.backends.cuda.backend import CudaBackend

    backend = CudaBackend(device)
    try:
        t0 = time.perf_counter()
        circuit = backend.load_circuit(pce)
        load_ms = (time.perf_counter() - t0) * 1e3
        try:
            srs, _ = backend.generate_srs(circuit, SetupSecrets.draw())
            try:
                out = {"circuit_upload": load_ms, **srs.keygen_ms}
                before, peak = srs.keygen_memory
                out |= {"circuit_bytes": float(circuit.nbytes), "key_bytes": float(srs.nbytes),
                        "device_used_before": float(before), "device_used_peak": float(peak)}
            finally:
                srs.release()
        finally:
            circuit.release()
    finally:
        backend.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--circuit-file", help="a pre-compiled circuit (.pce)")
    src.add_argument("--synthetic-log2", type=int, help="a synthetic circuit of 2^N - 1 rows (27: 32 GiB PoRep size)")
    parser.add_argument("--inputs", type=int, default=328, help="public inputs of the synthetic circuit")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1, help="keys to make (each with fresh secrets)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    pce = load_pce(args.circuit_file) if args.circuit_file else synthetic_pce(args.synthetic_log2, args.inputs)
    print(f"circuit {pce.name}: {pce.num_constraints} rows, {pce.num_inputs} inputs, {pce.num_aux} aux, "
          f"nnz A/B/C {pce.a.nnz}/{pce.b.nnz}/{pce.c.nnz} ({time.perf_counter() - t0:.1f}s to open or make)")
    runs = [time_keygen(pce, args.device) for _ in range(max(1, args.repeat))]
    for name in runs[0]:
        values = [run[name] for run in runs]
        if name.endswith("bytes") or name.startswith("device_used"):
            print(f"{name:>20}: " + "  ".join(f"{v / 1e9:9.2f}" for v in values) + " GB")
        else:
            print(f"{name:>20}: " + "  ".join(f"{v:9.1f}" for v in values) + " ms"
                  + (f"   (median {float(np.median(values)):.1f})" if len(values) > 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
