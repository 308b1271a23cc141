"""WindowPoSt and WinningPoSt until their circuits are plugged in: the request is
checked as Curio sends it, then answered with :class:`CircuitUnavailable` (never a fake proof)."""

from __future__ import annotations

from pathlib import Path

from cuzk_plugin.engine.circuits import PROVIDER_GROUP, JobPlan, KeySource
from cuzk_plugin.engine.errors import CircuitUnavailable, InvalidRequest
from cuzk_plugin.engine.types import ProofKind, ProofRequest

__all__ = ["FilecoinCircuitPending"]

_POST_SIZES = ("2k", "8m", "512m", "32g", "64g")


class FilecoinCircuitPending:
    """WindowPoSt and WinningPoSt until their circuits are plugged in.

    Checks the request as Curio sends it (so bad input is refused the same way it will be
    later), names the circuit it would need, then answers :class:`CircuitUnavailable`: the job
    FAILS with that message, never with a fake proof.
    """

    kinds = (ProofKind.WINDOW_POST_PARTITION, ProofKind.WINNING_POST)

    def plan(self, request: ProofRequest, param_cache: Path) -> JobPlan:
        circuit_id, what = self.circuit_for(request)
        raise CircuitUnavailable(
            f"circuit {circuit_id} ({what}) is not available in this build: no circuit provider for "
            f"{request.kind.name} is registered (entry-point group '{PROVIDER_GROUP}')"
        )

    def key_source(self, circuit_id: str, param_cache: Path) -> KeySource | None:
        return None

    @staticmethod
    def circuit_for(request: ProofRequest) -> tuple[str, str]:
        """(circuit id, description) from a validated Filecoin request; raises InvalidRequest."""
        if not request.vanilla_proofs or any(len(v) == 0 for v in request.vanilla_proofs):
            raise InvalidRequest("vanilla_proofs: empty (PoSt needs the per-sector vanilla proofs)")
        if len(request.randomness) != 32:
            raise InvalidRequest(f"randomness: expected 32 bytes, got {len(request.randomness)}")
        if request.kind == ProofKind.WINNING_POST:
            return f"winning-{_size_label(request.registered_proof, range(0, 5), 'WinningPoSt')}", "WinningPoSt"
        return f"wpost-{_size_label(request.registered_proof, range(5, 15), 'WindowPoSt')}", "WindowPoSt partition"


def _size_label(registered_proof: int, allowed: range, what: str) -> str:
    if registered_proof not in allowed:
        raise InvalidRequest(f"registered_proof: {registered_proof} is not a {what} proof type ({allowed.start}-{allowed.stop - 1})")
    return _POST_SIZES[registered_proof % 5]
