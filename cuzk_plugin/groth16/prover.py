"""Groth16 prover, Filecoin/bellperson flavour: the backend computes the five MSMs, this
module adds the randomness (r, s) and assembles A, B, C the same way for every backend."""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass, field

import numpy as np
from py_arkworks_bls12381 import Scalar

from cuzk_plugin.backends.protocol import Backend, ProofSums, SrsHandle
from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.bls12_381.points import g1_from_limbs, g2_from_limbs
from cuzk_plugin.formats.params import ProvingKey, VerifyingKey
from cuzk_plugin.formats.partition import SynthesizedPartition, WitnessPartition
from cuzk_plugin.formats.pce import PrecompiledCircuit
from cuzk_plugin.formats.proof import Proof

log = logging.getLogger(__name__)


@dataclass
class ProveTimings:
    """Seconds spent per stage of one proof."""

    srs_load: float = 0.0
    msm: float = 0.0
    assemble: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)


def random_fr() -> int:
    """Uniform non-zero-probability Fr element from the OS CSPRNG (fresh r, s per proof)."""
    return secrets.randbelow(R)


def _point_counts(num_inputs: int, domain_size: int, num_aux: int, a_aux_density, b_input_density,
                  b_aux_density) -> dict[str, int]:
    """The key's point counts (as ProvingKey.counts) that a circuit of this shape needs."""
    n_b = int(np.count_nonzero(b_input_density)) + int(np.count_nonzero(b_aux_density))
    return {"ic": num_inputs, "h": domain_size - 1, "l": num_aux,
            "a": num_inputs + int(np.count_nonzero(a_aux_density)), "b_g1": n_b, "b_g2": n_b}


#: circuit_point_counts by the circuit's digest: its densities are summed once (130 M values at
#: 32 GiB), not for every partition.
_PCE_COUNTS: dict[str, dict[str, int]] = {}


def circuit_point_counts(pce: PrecompiledCircuit) -> dict[str, int]:
    """The key's point counts that ``pce``'s partitions need (a copy; computed once a circuit)."""
    if pce.digest not in _PCE_COUNTS:
        _PCE_COUNTS[pce.digest] = _point_counts(pce.num_inputs, pce.domain_size, pce.num_aux, pce.a_aux_density,
                                                pce.b_input_density, pce.b_aux_density)
    return dict(_PCE_COUNTS[pce.digest])


def check_shapes(key: ProvingKey, part: SynthesizedPartition | WitnessPartition) -> None:
    """Refuse a partition that does not belong to this key (before any heavy work)."""
    counts = key.counts()
    if isinstance(part, WitnessPartition):
        expect = circuit_point_counts(part.pce)
    else:
        expect = _point_counts(part.num_inputs, part.domain_size, part.num_aux, part.a_aux_density,
                               part.b_input_density, part.b_aux_density)
    wrong = [f"{k}: key has {counts[k]}, partition needs {v}" for k, v in expect.items() if counts[k] != v]
    if wrong:
        raise ValueError("partition does not match the proving key (" + "; ".join(wrong) + ")")


def assemble(vk: VerifyingKey, sums: ProofSums, r: int, s: int) -> Proof:
    """A = alpha + A_msm + r*delta; B = beta_g2 + B_g2 + s*delta_g2;
    C = s*A + r*(beta_g1 + B_g1 + s*delta_g1) - r*s*delta_g1 + H + L  (bellperson's final step)."""
    rs, ss = Scalar(r % R), Scalar(s % R)
    rs_prod = Scalar(r * s % R)
    (h,), (l,), (a_msm,), (b_g1_msm,) = (g1_from_limbs(x) for x in (sums.h, sums.l, sums.a, sums.b_g1))
    (b_g2_msm,) = g2_from_limbs(sums.b_g2)
    a = vk.alpha_g1 + a_msm + vk.delta_g1 * rs
    b = vk.beta_g2 + b_g2_msm + vk.delta_g2 * ss
    b_g1 = vk.beta_g1 + b_g1_msm + vk.delta_g1 * ss
    c = a * ss + b_g1 * rs - vk.delta_g1 * rs_prod + h + l
    return Proof(a=a, b=b, c=c)


def prove(
    key: ProvingKey,
    part: SynthesizedPartition,
    backend: Backend,
    *,
    srs: SrsHandle | None = None,
    r: int | None = None,
    s: int | None = None,
    timings: ProveTimings | None = None,
) -> Proof:
    """Prove one partition. Pass ``srs`` to reuse a key already resident on the backend;
    ``r`` and ``s`` default to fresh randomness (fix them only to compare backends)."""
    check_shapes(key, part)
    timings = timings if timings is not None else ProveTimings()
    t0 = time.perf_counter()
    handle = backend.load_srs(key) if srs is None else srs
    t1 = time.perf_counter()
    try:
        sums = backend.prove_finish(backend.prove_start(handle, part))
    finally:
        if srs is None:  # ours to release
            handle.release()
    t2 = time.perf_counter()
    proof = assemble(key.vk, sums, random_fr() if r is None else r, random_fr() if s is None else s)
    t3 = time.perf_counter()
    timings.srs_load += t1 - t0
    timings.msm += t2 - t1
    timings.assemble += t3 - t2
    log.debug("proved on %s: srs %.3fs, h+msm %.3fs, assemble %.3fs", backend.name, t1 - t0, t2 - t1, t3 - t2)
    return proof
