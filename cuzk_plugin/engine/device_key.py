"""A TEST proving key made on each lane from a pre-compiled circuit, never written to disk.

Filecoin's large parameter files (a 32 GiB PoRep key is ~47 GB of points) cannot be had on a
test machine, and a single-party setup on the host would take hours. With ``[srs]
allow_test_keys`` such a circuit gets a :class:`DeviceKey` instead: the secrets (tau, alpha,
beta, gamma, delta) are drawn once here, and every lane that proves with the key makes its copy
on its own device from the lane's resident circuit (``backend.generate_srs``: seconds on a
GPU). The same secrets give every lane the same key; the verifying key comes from the first
lane's input columns and every later lane's must equal it. The verifying key alone is written
(``<param_cache>/<id>.vk``, bellperson's layout) so that a client can check the proofs. Like every
test key its proofs never pass Filecoin's verifier, and its id says so (``porep-32g-test-key``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from cuzk_plugin.errors import ParamsError
from cuzk_plugin.formats.pce import MappedCircuit

if TYPE_CHECKING:
    from cuzk_plugin.formats.params import SetupSecrets, VerifyingKey

__all__ = ["DeviceKey"]

G1_AFFINE_BYTES = 96  # x, y: 48 bytes each (the device's affine points)
G2_AFFINE_BYTES = 192


@dataclass
class DeviceKey:
    """What the SRS manager holds for a key made on the lanes: the circuit, the secrets, and the
    verifying key once a lane has made its copy. Stands in for a ProvingKey (``vk``,
    ``counts``, ``vectors_nbytes``) where the engine uses one."""

    circuit_id: str
    mapped: MappedCircuit
    secrets: SetupSecrets
    #: Where the verifying key is written once made (None: not written).
    vk_path: Path | None = None
    _vk: VerifyingKey | None = None
    _input_sums: np.ndarray | None = None
    _counts: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def draw(cls, circuit_id: str, mapped: MappedCircuit, vk_path: Path | None = None) -> DeviceKey:
        """A key of ``mapped``'s circuit with fresh secrets."""
        from cuzk_plugin.formats.params import SetupSecrets
        from cuzk_plugin.groth16.prover import circuit_point_counts

        counts = circuit_point_counts(mapped.circuit)
        return cls(circuit_id, mapped, SetupSecrets.draw(), vk_path, _counts=counts)

    def counts(self) -> dict[str, int]:
        """Points per vector, as ProvingKey.counts gives them."""
        return dict(self._counts)

    @property
    def vectors_nbytes(self) -> int:
        """Device bytes of one lane's copy: the point vectors (affine) and the resident circuit,
        which the key cannot be made or used without."""
        c = self._counts
        points = G1_AFFINE_BYTES * (c["h"] + c["l"] + c["a"] + c["b_g1"]) + G2_AFFINE_BYTES * c["b_g2"]
        return points + self.mapped.circuit.nbytes

    @property
    def vk(self) -> VerifyingKey:
        if self._vk is None:
            raise ParamsError(f"key of '{self.circuit_id}': no lane has made it yet, so it has no verifying key")
        return self._vk

    def accept(self, input_sums: np.ndarray, lane: str) -> None:
        """Record a lane's input columns (u, v, w at tau, ``(num_inputs, 3, 4)`` uint64): the
        first makes the verifying key; a later lane whose copy differs is refused."""
        from cuzk_plugin.groth16.setup import verifying_key_from

        sums = np.ascontiguousarray(input_sums, dtype=np.uint64)
        expect = (self._counts["ic"], 3, 4)
        if sums.shape != expect:
            raise ParamsError(f"key of '{self.circuit_id}' made on {lane}: input columns {sums.shape}, expected {expect}")
        with self._lock:
            if self._input_sums is None:
                vk = verifying_key_from(self.secrets, sums)
                if self.vk_path is not None:
                    vk.save(self.vk_path)  # tmp file + rename
                self._vk, self._input_sums = vk, sums
            elif not np.array_equal(self._input_sums, sums):
                raise ParamsError(f"key of '{self.circuit_id}' made on {lane} differs from the other lanes' copies "
                                  "(same secrets, different input columns): refusing it")
