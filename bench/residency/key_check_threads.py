"""The first-open check of a key's points (flags, coordinates below p) on 1 and 2..N threads, as
ProvingKey.check_vectors runs it, over 4M valid G1 points (403 MB) tiled from 64:

    .venv/bin/python bench/residency/key_check_threads.py [THREADS ...]

Prints each run's seconds and GB/s (two rounds, the first warms the pages)."""

import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from py_arkworks_bls12381 import G1Point, Scalar

from cuzk_plugin.bls12_381.points import check_uncompressed_vector, encode_g1
from cuzk_plugin.formats.params import CHECK_PIECE


def main() -> None:
    threads = [int(t) for t in sys.argv[1:]] or [1, 2]
    pts = np.frombuffer(b"".join(encode_g1(G1Point() * Scalar(k), compressed=False) for k in range(1, 65)),
                        np.uint8).reshape(64, 96)
    big = np.tile(pts, (1 << 16, 1))
    starts = range(0, big.shape[0], CHECK_PIECE)

    def piece(s: int) -> None:
        check_uncompressed_vector(big[s:s + CHECK_PIECE], what="h", offset=s)

    for rnd in range(2):
        for n in threads:
            t = time.perf_counter()
            with ThreadPoolExecutor(n) as ex:
                list(ex.map(piece, starts))
            dt = time.perf_counter() - t
            print(f"round {rnd}: {n} thread(s): {dt:.3f} s, {big.nbytes / dt / 1e9:.2f} GB/s")


if __name__ == "__main__":
    main()
