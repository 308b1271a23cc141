"""The OpenCL backend: Fr/Fq arithmetic, NTT and Pippenger MSM kernels driven by pyopencl.

Runs on any OpenCL 1.2 device with 64-bit integers: GPUs through their vendors' drivers,
or the host CPU through PoCL (how CI runs it).
"""

from cuzk_plugin.backends.opencl.backend import OpenclBackend, OpenclSrs

__all__ = ["OpenclBackend", "OpenclSrs"]
