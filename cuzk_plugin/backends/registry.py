"""Backend registry: backends are found through the ``cuzk_plugin.backends`` entry-point group.

A backend class may define ``probe() -> str | None`` (a classmethod): None when it can run
here, else the reason it cannot. ``select_backend("auto")`` prefers cuda, then opencl, then
cpu, and logs which it chose and why.
"""

from __future__ import annotations

import logging
from importlib.metadata import entry_points

from cuzk_plugin.backends.protocol import Backend
from cuzk_plugin.errors import BackendUnavailable

log = logging.getLogger(__name__)
GROUP = "cuzk_plugin.backends"
AUTO_ORDER = ("cuda", "opencl", "cpu")
_BUILTIN = {
    "cpu": "cuzk_plugin.backends.cpu:CpuBackend",
    "opencl": "cuzk_plugin.backends.opencl:OpenclBackend",
    "cuda": "cuzk_plugin.backends.cuda:CudaBackend",
}


def backend_names() -> list[str]:
    """Every registered backend name (installed entry points plus the built-in ones)."""
    names = {ep.name for ep in entry_points(group=GROUP)} | set(_BUILTIN)
    return sorted(names, key=lambda n: (AUTO_ORDER.index(n) if n in AUTO_ORDER else len(AUTO_ORDER), n))


def _load_class(name: str) -> type:
    for ep in entry_points(group=GROUP):
        if ep.name == name:
            return ep.load()
    if name in _BUILTIN:
        module, _, attr = _BUILTIN[name].partition(":")
        mod = __import__(module, fromlist=[attr])
        return getattr(mod, attr)
    raise BackendUnavailable(f"unknown backend '{name}' (known: {', '.join(backend_names())})")


def probe(name: str) -> str | None:
    """None if backend ``name`` can run here, else why not."""
    try:
        cls = _load_class(name)
    except BackendUnavailable as exc:
        return str(exc)
    except Exception as exc:  # a backend whose module cannot import (missing optional dep)
        return f"cannot import: {exc}"
    check = getattr(cls, "probe", None)
    return check() if check else None


def auto_choice() -> tuple[str, list[str]]:
    """What ``auto`` picks (the first of cuda, opencl, cpu that can run here) and why each one
    before it cannot."""
    reasons: list[str] = []
    for candidate in AUTO_ORDER:
        why = probe(candidate)
        if why is None:
            return candidate, reasons
        reasons.append(f"{candidate} unavailable: {why}")
    raise BackendUnavailable("no backend can run here: " + "; ".join(reasons))


def get_backend(name: str = "auto", **options) -> Backend:
    """Instantiate backend ``name`` ("auto" picks the first available of cuda, opencl, cpu).
    An ``auto`` that could not take CUDA says so in a WARNING with the reasons."""
    if name == "auto":
        chosen, reasons = auto_choice()
        if reasons:
            log.warning("backend auto: NOT CUDA, proving on '%s' (%s)", chosen, "; ".join(reasons))
        else:
            log.info("backend auto: chose '%s'", chosen)
        return _load_class(chosen)(**options)
    why = probe(name)
    if why is not None:
        raise BackendUnavailable(f"backend '{name}' cannot run here: {why}")
    return _load_class(name)(**options)


def available_backends() -> list[str]:
    return [n for n in backend_names() if probe(n) is None]
