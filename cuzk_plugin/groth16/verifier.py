"""Groth16 verification: e(A,B) = e(alpha,beta) e(sum x_i IC_i, gamma) e(C, delta).

A wrong proof returns False; a malformed call (wrong input count, input >= r) raises.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from py_arkworks_bls12381 import GT, G1Point, Scalar

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.formats.params import VerifyingKey
from cuzk_plugin.formats.proof import Proof


def prepare_inputs(vk: VerifyingKey, public_inputs: Sequence[int]) -> G1Point:
    """IC_0 + sum x_i IC_i over the public inputs (ONE excluded from ``public_inputs``)."""
    if len(public_inputs) + 1 != vk.num_inputs:
        raise ValueError(f"verifying key expects {vk.num_inputs - 1} public inputs, got {len(public_inputs)}")
    for i, x in enumerate(public_inputs):
        if not 0 <= int(x) < R:
            raise ValueError(f"public input {i} is not a canonical field element (must be in [0, r))")
    if not public_inputs:
        return vk.ic[0]
    return vk.ic[0] + G1Point.multiexp_unchecked(vk.ic[1:], [Scalar(int(x)) for x in public_inputs])


def verify(vk: VerifyingKey, proof: Proof, public_inputs: Sequence[int]) -> bool:
    acc = prepare_inputs(vk, public_inputs)
    return GT.pairing_check([proof.a, -vk.alpha_g1, -acc, -proof.c], [proof.b, vk.beta_g2, vk.gamma_g2, vk.delta_g2])


def batch_verify(vk: VerifyingKey, proofs: Sequence[Proof], inputs: Sequence[Sequence[int]],
                 prepared: Sequence[G1Point] | None = None) -> bool:
    """All proofs at once: random 128-bit weights z_j and one multi-pairing of k + 3 pairs:
    prod e(z_j A_j, B_j) = e(sum z_j alpha, beta) e(sum z_j acc_j, gamma) e(sum z_j C_j, delta).
    ``prepared``: each proof's acc_j (:func:`prepare_inputs` of its inputs), made ahead; that
    multi-exponentiation over the inputs is most of the time (~10 ms for a PoRep partition's 328,
    the pairing ~5 ms for ten proofs)."""
    if len(proofs) != len(inputs) or (prepared is not None and len(prepared) != len(proofs)):
        raise ValueError(f"{len(proofs)} proofs but {len(inputs)} input vectors"
                         + (f" and {len(prepared)} prepared" if prepared is not None else ""))
    if not proofs:
        return True
    weights = [Scalar(secrets.randbits(128) | 1) for _ in proofs]
    accs = list(prepared) if prepared is not None else [prepare_inputs(vk, x) for x in inputs]
    g1s = [p.a * z for p, z in zip(proofs, weights, strict=True)]
    g2s = [p.b for p in proofs]
    z_sum = Scalar(sum(int.from_bytes(z.to_le_bytes(), "little") for z in weights) % R)
    g1s += [
        -(vk.alpha_g1 * z_sum),
        -G1Point.multiexp_unchecked(accs, weights),
        -G1Point.multiexp_unchecked([p.c for p in proofs], weights),
    ]
    g2s += [vk.beta_g2, vk.gamma_g2, vk.delta_g2]
    return GT.pairing_check(g1s, g2s)
