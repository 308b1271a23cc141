"""``cuzk params write-test-key``: a Filecoin circuit's TEST key made once on a GPU and written in
Filecoin's ``.params`` layout (and its ``.vk``), so that a daemon loads it from a file exactly as
it loads Filecoin's own: read once into one page-locked host copy, the vectors a lane cannot
hold streamed from it. The key is made with each vector moved to page-locked host memory as it
is done, so the device holds the circuit, the working set and one vector (the 32 GiB PoRep key:
about 47 GB, an 80 GB card; ~100 GB when a lane makes it in device memory). A card too small to
make it can then prove with it. Filecoin's verifiers reject its proofs: it comes from secrets
drawn here and forgotten, named ``<circuit>-test-key`` everywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from cuzk_plugin.bls12_381.points import g1_limbs_to_raw, g2_limbs_to_raw
from cuzk_plugin.formats.params import VECTOR_FIELDS, VerifyingKey

log = logging.getLogger(__name__)

#: Points read back from the device and written at a time (384 MB of G1, 768 MB of G2).
CHUNK_POINTS = 1 << 22


def write_params(path: Path, vk: VerifyingKey, srs: Any, *, chunk_points: int = CHUNK_POINTS,
                 progress: Callable[[str], None] = log.info) -> int:
    """Write a key whose vectors ``srs`` holds (``counts()``, and ``read(name, start, stop)``
    giving affine canonical limbs, as CudaSrs does) to ``path`` in the ``.params`` layout, a chunk
    at a time, with a progress line about every 10 %. Atomic: a partial file never has the final
    name, and none is left on an error. The bytes written."""
    counts = srs.counts()
    total = sum(counts[name] for name, _ in VECTOR_FIELDS)
    # Each vector's chunks; an empty vector one empty chunk (its count is still written).
    chunks = [(name, group, start, min(counts[name], start + chunk_points))
              for name, group in VECTOR_FIELDS for start in range(0, max(counts[name], 1), chunk_points)]

    def encoded(chunk: tuple[str, int, int, int]) -> np.ndarray:
        name, group, start, stop = chunk
        if stop == start:
            return np.zeros(0, dtype=np.uint8)
        limbs = srs.read(name, start, stop)
        return g2_limbs_to_raw(limbs) if group == 2 else g1_limbs_to_raw(limbs)

    tmp = path.with_name(f".{path.name}.partial")
    done, next_report, t0 = 0, 0.1, time.perf_counter()
    try:
        # The next chunk is read back and encoded on a thread while this one is written (the
        # device copy, numpy and the file write all release the GIL).
        with open(tmp, "wb") as fh, ThreadPoolExecutor(1, thread_name_prefix="write-test-key") as pool:
            fh.write(vk.to_bytes())
            ahead = pool.submit(encoded, chunks[0]) if chunks else None
            for i, (name, _, start, stop) in enumerate(chunks):
                assert ahead is not None
                raw = ahead.result()
                ahead = pool.submit(encoded, chunks[i + 1]) if i + 1 < len(chunks) else None
                if start == 0:
                    fh.write(struct.pack(">I", counts[name]))
                fh.write(raw.data)  # the array's own bytes, no copy (raw is contiguous)
                done += stop - start
                if total and done / total >= next_report:
                    progress(f"{path.name}: {done / total:.0%} of {total:,} points written "
                             f"({time.perf_counter() - t0:.0f} s)")
                    next_report += 0.1
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return path.stat().st_size


def write_test_key(circuit: str, param_cache: Path, out_dir: Path) -> Path:
    """Make ``circuit``'s TEST key on the first CUDA GPU from its pre-compiled circuit (recorded
    into ``param_cache`` first where missing) and write ``<out_dir>/<circuit>-test-key.params`` and
    ``.vk``; the ``.params`` path."""
    from cuzk_plugin.adapters import builtin_providers
    from cuzk_plugin.backends.cuda import CudaBackend
    from cuzk_plugin.config import SrsConfig
    from cuzk_plugin.engine.circuits import ProviderRegistry
    from cuzk_plugin.engine.device_key import DeviceKey
    from cuzk_plugin.filecoin.param_files import test_key_id, test_key_path
    from cuzk_plugin.formats.pce import MappedCircuit

    test_id = test_key_id(circuit)
    registry = ProviderRegistry(builtin_providers(SrsConfig(allow_test_keys=True)), load_plugins=False)
    source = registry.key_source(test_id, param_cache)
    make_pce = source.device_key
    if not callable(make_pce):
        raise SystemExit(f"cuzk params write-test-key: {circuit}'s test key is made as a file by the daemon itself "
                         f"({source.path}); nothing to write")
    why = CudaBackend.probe()
    if why is not None:
        raise SystemExit(f"cuzk params write-test-key: a CUDA GPU makes the key, and none is usable here: {why}")
    t0 = time.perf_counter()
    mapped = MappedCircuit.open(make_pce())
    path = test_key_path(out_dir, circuit)
    key = DeviceKey.draw(test_id, mapped, path.with_suffix(".vk"))
    backend = CudaBackend()
    handle = backend.load_circuit(mapped.circuit)
    try:
        # Each vector to page-locked host memory as it is made: the device holds one at a time
        # beside the circuit (the 32 GiB PoRep key on an 80 GB card).
        srs, input_sums = backend.generate_srs(handle, key.secrets, to_host=True)
    finally:
        handle.release()
    try:
        key.accept(input_sums, "write-test-key")  # the verifying key, written beside
        log.info("%s: made on the GPU in %.1f s (%.1f GB of points, device peak %.1f GB); writing %s", test_id,
                 time.perf_counter() - t0, key.vectors_nbytes / 1e9, srs.keygen_memory[1] / 1e9, path)
        size = write_params(path, key.vk, srs)
    finally:
        srs.release()
    log.warning("%s: %s written (%.1f GB) in %.1f s: a TEST KEY, Filecoin's verifiers reject its proofs", test_id, path,
                size / 1e9, time.perf_counter() - t0)
    return path


def cmd_write_test_key(args: argparse.Namespace) -> int:
    param_cache = Path(os.path.expanduser(args.param_cache))
    out = Path(os.path.expanduser(args.out)) if args.out else param_cache
    out.mkdir(parents=True, exist_ok=True)
    print(write_test_key(args.circuit, param_cache, out))
    return 0
