"""Adapters: requests (Curio's Filecoin kinds, synthetic benchmarks, registered circom circuits)
to proof jobs, as circuit providers for the engine.

The daemon registers :func:`builtin_providers`; third-party providers plug in through the
entry-point group ``cuzk_plugin.circuit_providers`` (see :mod:`cuzk_plugin.engine.circuits`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuzk_plugin.engine.circuits import CircuitProvider

if TYPE_CHECKING:
    from cuzk_plugin.config import SrsConfig

__all__ = ["builtin_providers"]


def builtin_providers(srs: SrsConfig | None = None) -> list[CircuitProvider]:
    """Every provider this package ships: PoRep, PoSt, SnapDeals, synthetic, registered. ``srs``
    ([srs] of the config) says whether Filecoin circuits may use test keys (default: never)."""
    from cuzk_plugin.adapters.curio.porep.provider import PorepCircuitProvider
    from cuzk_plugin.adapters.curio.post.provider import PostCircuitProvider
    from cuzk_plugin.adapters.curio.snap.provider import SnapCircuitProvider
    from cuzk_plugin.adapters.registered import RegisteredCircuitProvider
    from cuzk_plugin.adapters.synthetic import SyntheticProvider

    allow_test_keys = bool(getattr(srs, "allow_test_keys", False))
    return [PorepCircuitProvider(allow_test_keys=allow_test_keys), PostCircuitProvider(allow_test_keys=allow_test_keys),
            SnapCircuitProvider(allow_test_keys=allow_test_keys), SyntheticProvider(), RegisteredCircuitProvider()]
