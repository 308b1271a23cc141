"""The cpu reference backend: numpy for the field, py-arkworks-bls12381 for the curve."""

from cuzk_plugin.backends.cpu.backend import CpuBackend

__all__ = ["CpuBackend"]
