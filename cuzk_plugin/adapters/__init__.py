"""Adapters from external request formats (Curio) to proof jobs."""
