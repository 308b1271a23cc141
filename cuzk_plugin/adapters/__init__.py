"""Adapters: requests (Curio's Filecoin kinds, synthetic benchmarks, registered circom circuits)
to proof jobs, as circuit providers for the engine.

The daemon registers :func:`builtin_providers`; third-party providers plug in through the
entry-point group ``cuzk_plugin.circuit_providers`` (see :mod:`cuzk_plugin.engine.circuits`).
"""

from __future__ import annotations

from cuzk_plugin.engine.circuits import CircuitProvider

__all__ = ["builtin_providers"]


def builtin_providers() -> list[CircuitProvider]:
    """Every provider this package ships: PoRep, the Filecoin kinds still pending, synthetic, registered."""
    from cuzk_plugin.adapters.curio.pending import FilecoinCircuitPending
    from cuzk_plugin.adapters.curio.provider import PorepCircuitProvider
    from cuzk_plugin.adapters.curio.snap import SnapCircuitProvider
    from cuzk_plugin.adapters.registered import RegisteredCircuitProvider
    from cuzk_plugin.adapters.synthetic import SyntheticProvider

    return [FilecoinCircuitPending(), PorepCircuitProvider(), SnapCircuitProvider(), SyntheticProvider(),
            RegisteredCircuitProvider()]
