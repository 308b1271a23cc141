"""Curio's requests: registered proofs, the C1 envelope and output, PoRep jobs.

The daemon-facing entry point is :func:`cuzk_plugin.adapters.curio.porep.porep_partitions`.
"""

from cuzk_plugin.adapters.curio.c1 import C1Envelope, C1Error, C1Output, parse_c1, parse_envelope
from cuzk_plugin.adapters.curio.porep import PorepJob, WitnessError, porep_circuit_id, porep_partitions
from cuzk_plugin.filecoin.proofs import (
    SEAL_PROOFS,
    RegisteredSealProof,
    prover_id_from_miner,
    replica_id,
    seal_proof_by_name,
    seal_proof_by_number,
)

__all__ = [
    "C1Envelope", "C1Error", "C1Output", "parse_c1", "parse_envelope",
    "PorepJob", "WitnessError", "porep_circuit_id", "porep_partitions",
    "SEAL_PROOFS", "RegisteredSealProof", "prover_id_from_miner", "replica_id",
    "seal_proof_by_name", "seal_proof_by_number",
]
