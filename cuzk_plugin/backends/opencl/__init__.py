"""The OpenCL backend: Fr/Fq arithmetic, NTT and Pippenger MSM kernels driven by pyopencl.

Runs on any OpenCL 1.2 device with 64-bit integers: GPUs through their vendors' drivers,
or the host CPU through PoCL (how CI runs it).

Modules:
    backend    `OpenclBackend`: the Backend protocol, SRS resident in device buffers.
    device     device choice (options, ``CUZK_OPENCL_DEVICE``), program builds, error mapping.
    constants  field constants for the kernels, derived from the moduli in ``bls12_381``.
    ntt        NTT and quotient-H driver (``kernels/ntt.cl``).
    msm        Pippenger MSM driver for G1 and G2 (``kernels/msm.cl``, ``kernels/scan.cl``).
    launch     pyopencl helpers: launches, uploads, small Fr tables.
    bench      ``python -m cuzk_plugin.backends.opencl.bench``: kernel timings and ratios.

Kernels (``kernels/``, concatenated per program by ``device.program_source``):
    limb32.cl / limb64.cl  one-limb primitives (the limb width is chosen per device);
    limbs.cl               modular add, sub and Montgomery multiplication over those limbs;
    fr.cl, fq.cl, fq2.cl   the fields; group_g1.cl / group_g2.cl bind a field to the curve code;
    curve_xyzz.cl          affine and XYZZ point arithmetic, generic over the bound field;
    ntt.cl, scan.cl, msm.cl  the transforms, prefix sums and the MSM stages.
"""

from cuzk_plugin.backends.opencl.backend import OpenclBackend, OpenclSrs

__all__ = ["OpenclBackend", "OpenclSrs"]
