"""cuzk-plugin: a Groth16 proving engine for Filecoin, CPU reference plus GPU backends.

Layers, top to bottom (data flows one way): ``adapters`` -> ``server`` -> ``engine`` ->
``groth16`` -> ``circuit`` -> ``bls12_381``; ``backends`` implement the heavy math behind one
protocol (:mod:`cuzk_plugin.backends.protocol`).
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
