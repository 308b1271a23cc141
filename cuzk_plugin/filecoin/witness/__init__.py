"""A PoRep partition's full assignment (inputs and aux in the reference synthesis's order),
computed gadget by gadget for all instances at once with numpy: see :mod:`.porep`."""

from cuzk_plugin.filecoin.witness.porep import PorepLayout, WitnessMismatch, partition_assignment, porep_layout

__all__ = ["partition_assignment", "porep_layout", "PorepLayout", "WitnessMismatch"]
