"""Small pyopencl helpers shared by the NTT and MSM drivers: launches, uploads, Fr constants."""

from __future__ import annotations

import numpy as np

from cuzk_plugin.backends.opencl.constants import montgomery
from cuzk_plugin.backends.opencl.device import import_pyopencl
from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs

#: Work-group size of the one-item-per-element kernels; global sizes are rounded up to it
#: (kernels bound-check), so the driver never falls back to tiny groups for odd sizes.
WORK_GROUP = 64


def u32(value: int) -> np.uint32:
    if not 0 <= value < 2**32:
        raise ValueError(f"kernel argument {value} does not fit in 32 bits")
    return np.uint32(value)


def launch(queue, kernel, n: int, *args, local: int = WORK_GROUP, offset: int = 0, wait_for=None):
    """Run ``kernel`` over ``n`` work-items (n >= 1), rounded up to whole work-groups; their
    global ids start at ``offset`` (a slice of a larger launch). It starts after the events
    ``wait_for`` (work on another queue); returns its event."""
    global_size = -(-max(n, 1) // local) * local
    kernel.set_args(*args)
    return import_pyopencl().enqueue_nd_range_kernel(queue, kernel, (global_size,), (local,),
                                                     global_work_offset=(offset,) if offset else None,
                                                     wait_for=wait_for)


def upload(context, queue, array: np.ndarray):
    """A device buffer holding a copy of ``array`` (an empty array gets a one-byte buffer)."""
    cl = import_pyopencl()
    array = np.ascontiguousarray(array)
    buf = cl.Buffer(context, cl.mem_flags.READ_WRITE, max(array.nbytes, 1))
    if array.nbytes:
        cl.enqueue_copy(queue, buf, array)
    return buf


def empty(context, nbytes: int):
    cl = import_pyopencl()
    return cl.Buffer(context, cl.mem_flags.READ_WRITE, max(int(nbytes), 1))


def download(queue, buf, shape: tuple, dtype=np.uint64) -> np.ndarray:
    out = np.empty(shape, dtype=dtype)
    if out.nbytes:
        import_pyopencl().enqueue_copy(queue, out, buf)
    return out


def fr_mont_limbs(values: list[int]) -> np.ndarray:
    """Python ints -> ``(n, 4)`` Montgomery-form Fr limbs (for small host-made tables)."""
    return ints_to_limbs([montgomery(v % R, R, FR_LIMBS) for v in values], FR_LIMBS)
