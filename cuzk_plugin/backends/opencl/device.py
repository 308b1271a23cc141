"""Choosing an OpenCL device and building our kernel programs on it.

Selection, in order: the constructor's ``platform`` / ``device`` options, else the
``CUZK_OPENCL_DEVICE`` environment variable (``"P:D"`` indices or a name substring), else
the first GPU of any platform, else the first device of any kind. Build failures raise
:class:`BackendError` carrying the compiler log, because that log is the only useful clue.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING

from cuzk_plugin.backends.opencl.constants import constants_header
from cuzk_plugin.errors import BackendError, BackendUnavailable, DeviceOutOfMemory

if TYPE_CHECKING:
    from pyopencl import Context, Device  # imported lazily at run time: pyopencl is optional

log = logging.getLogger(__name__)
ENV_DEVICE = "CUZK_OPENCL_DEVICE"

#: Kernel sources of each program, in order after the limb primitives and the constants.
PROGRAM_SOURCES = {
    "ntt": ("limbs.cl", "fr.cl", "ntt.cl"),
    "r1cs": ("limbs.cl", "fr.cl", "r1cs.cl"),
    "g1": ("limbs.cl", "fq.cl", "group_g1.cl", "curve_xyzz.cl", "fixed_base.cl", "scan.cl", "msm.cl"),
    "g2": ("limbs.cl", "fq.cl", "fq2.cl", "group_g2.cl", "curve_xyzz.cl", "fixed_base.cl", "scan.cl", "msm.cl"),
}
#: The field each program computes in (limbs.cl is built for exactly one).
PROGRAM_FIELD = {"ntt": "FR", "r1cs": "FR", "g1": "FQ", "g2": "FQ"}


def default_limb_bits(device) -> int:
    """64-bit limbs on CPUs (PoCL: mul_hi is a native 128-bit product; measured ~30% faster
    there), 32-bit limbs elsewhere (GPUs multiply 32x32->64 in one instruction)."""
    cl = import_pyopencl()
    return 64 if device.type & cl.device_type.CPU else 32


def import_pyopencl():
    """pyopencl, or BackendUnavailable saying how to install it."""
    try:
        import pyopencl
    except ImportError as exc:  # optional dependency
        raise BackendUnavailable("pyopencl is not installed (pip install 'cuzk-plugin[opencl]')") from exc
    return pyopencl


def all_devices() -> list[tuple[int, int, Device]]:
    """(platform index, device index, device) for every device of every platform."""
    cl = import_pyopencl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:  # no ICD registered: clGetPlatformIDs fails
        raise BackendUnavailable(f"no OpenCL platform: {exc}") from exc
    found = []
    for p_index, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        found += [(p_index, d_index, dev) for d_index, dev in enumerate(devices)]
    return found


def probe_devices() -> str | None:
    """None when pyopencl imports and some OpenCL device exists, else the reason."""
    try:
        if not all_devices():
            return "no OpenCL device found"
    except BackendUnavailable as exc:
        return str(exc)
    return None


def describe(entries: list[tuple[int, int, Device]]) -> str:
    return ", ".join(f"{p}:{d} '{dev.name.strip()}' ({dev.platform.name.strip()})" for p, d, dev in entries) or "none"


def _matches(entry: tuple[int, int, Device], platform: int | str | None, device: int | str | None) -> bool:
    p_index, d_index, dev = entry
    if isinstance(platform, int) and platform != p_index:
        return False
    if isinstance(platform, str) and platform.lower() not in dev.platform.name.lower():
        return False
    if isinstance(device, int) and device != d_index:
        return False
    return not isinstance(device, str) or device.lower() in dev.name.lower()


def parse_env_selection(value: str) -> tuple[int | str | None, int | str | None]:
    """``"1:0"`` -> (1, 0); ``"0"`` -> (None, 0) on the first matching platform; text -> name."""
    value = value.strip()
    if ":" in value:
        p, _, d = value.partition(":")
        if p.strip().isdigit() and d.strip().isdigit():
            return int(p), int(d)
    if value.isdigit():
        return None, int(value)
    return None, value


def select_device(platform: int | str | None = None, device: int | str | None = None):
    """The device the options (or the environment) name; see the module doc for the order."""
    cl = import_pyopencl()
    entries = all_devices()
    if not entries:
        raise BackendUnavailable("no OpenCL device found")
    source = "options"
    if platform is None and device is None and os.environ.get(ENV_DEVICE):
        platform, device = parse_env_selection(os.environ[ENV_DEVICE])
        source = f"{ENV_DEVICE}={os.environ[ENV_DEVICE]!r}"
    if platform is None and device is None:
        gpus = [e for e in entries if e[2].type & cl.device_type.GPU]
        chosen = (gpus or entries)[0]
        source = "first GPU" if gpus else "first device (no GPU)"
    else:
        matching = [e for e in entries if _matches(e, platform, device)]
        if not matching:
            raise BackendUnavailable(
                f"no OpenCL device matches platform={platform!r} device={device!r} ({source}); "
                f"devices: {describe(entries)}"
            )
        chosen = matching[0]
    log.info("opencl: using device %s, chosen by %s", describe([chosen]), source)
    return chosen[2]


@dataclass
class BuiltPrograms:
    """The compiled programs of one context, built lazily: G2 costs the most to compile."""

    context: Context
    limb_bits: int
    _cache: dict = field(default_factory=dict)

    def get(self, name: str):
        if name not in self._cache:
            self._cache[name] = build_program(self.context, program_source(name, self.limb_bits), name)
        return self._cache[name]


def program_source(name: str, limb_bits: int) -> str:
    """The full OpenCL C text of program ``name`` for limbs of ``limb_bits`` bits."""
    folder = resources.files("cuzk_plugin.backends.opencl") / "kernels"
    limb_file = f"limb{limb_bits}.cl"
    parts = [f"/* ---- {limb_file} ---- */\n" + (folder / limb_file).read_text(), constants_header(limb_bits),
             f"#define NLIMBS {PROGRAM_FIELD[name]}_NLIMBS\n"]
    for file in PROGRAM_SOURCES[name]:
        parts.append(f"/* ---- {file} ---- */\n" + (folder / file).read_text())
    return "\n".join(parts)


def build_program(context, source: str, name: str):
    """Compile ``source``; a failure raises BackendError naming ``name``, with the compiler log."""
    cl = import_pyopencl()
    program = cl.Program(context, source)
    try:
        return program.build(options=["-cl-std=CL1.2"])
    except cl.Error as exc:
        logs = []
        for dev in context.devices:
            with suppress(cl.Error):
                logs.append(program.get_build_info(dev, cl.program_build_info.LOG))
        text = "\n".join(x for x in logs if x and x.strip()) or str(exc)
        raise BackendError(f"OpenCL build of the '{name}' kernels failed:\n{text}") from exc


#: OpenCL status codes that mean the device (or the host, for its side) ran out of memory.
_OUT_OF_MEMORY_CODES = {-4, -5, -6, -61}  # MEM_OBJECT_ALLOCATION_FAILURE, OUT_OF_RESOURCES, OUT_OF_HOST_MEMORY, INVALID_BUFFER_SIZE


@contextmanager
def device_errors(what: str):
    """Turn pyopencl's errors into the project's: DeviceOutOfMemory for allocation failures
    (the engine may retry elsewhere or evict an SRS), BackendError for the rest; the message
    names the operation."""
    cl = import_pyopencl()
    try:
        yield
    except cl.Error as exc:
        code = getattr(exc, "code", None)
        if code in _OUT_OF_MEMORY_CODES:
            raise DeviceOutOfMemory(f"opencl {what}: out of device memory ({exc})") from exc
        raise BackendError(f"opencl {what} failed: {exc}") from exc
