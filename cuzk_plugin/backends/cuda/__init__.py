"""CUDA backend: kernels in ``kernels/`` built by :mod:`.build` into ``libcuzk_cuda.so``,
bound with ctypes in :mod:`.library`, exposed as :class:`CudaBackend`.

Importing this package never touches the GPU; :meth:`CudaBackend.probe` says whether the
library is built and a device is usable.
"""

from cuzk_plugin.backends.cuda.backend import CudaBackend, CudaPending, CudaSrs

__all__ = ["CudaBackend", "CudaPending", "CudaSrs"]
