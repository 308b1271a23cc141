"""Proving backends behind one protocol (:mod:`.protocol`), found through a registry (:mod:`.registry`)."""
