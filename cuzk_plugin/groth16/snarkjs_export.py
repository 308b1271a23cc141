"""Export a verifying key, proof and public inputs to snarkjs's JSON forms (groth16, bls12381),
so that `snarkjs groth16 verify` can check proofs made here: an independent verifier."""

from __future__ import annotations

from collections.abc import Sequence

from py_arkworks_bls12381 import G1Point, G2Point

from cuzk_plugin.formats.params import VerifyingKey
from cuzk_plugin.formats.proof import Proof


def g1_json(p: G1Point) -> list[str]:
    raw = bytes(p.to_xy_bytes_be())
    return [str(int.from_bytes(raw[:48], "big")), str(int.from_bytes(raw[48:], "big")), "1"]


def g2_json(p: G2Point) -> list[list[str]]:
    raw = bytes(p.to_xy_bytes_be())  # x.c0 || x.c1 || y.c0 || y.c1
    c = [str(int.from_bytes(raw[k : k + 48], "big")) for k in range(0, 192, 48)]
    return [[c[0], c[1]], [c[2], c[3]], ["1", "0"]]


def verification_key_json(vk: VerifyingKey) -> dict:
    return {
        "protocol": "groth16",
        "curve": "bls12381",
        "nPublic": vk.num_inputs - 1,
        "vk_alpha_1": g1_json(vk.alpha_g1),
        "vk_beta_2": g2_json(vk.beta_g2),
        "vk_gamma_2": g2_json(vk.gamma_g2),
        "vk_delta_2": g2_json(vk.delta_g2),
        "IC": [g1_json(p) for p in vk.ic],
    }


def proof_json(proof: Proof) -> dict:
    return {
        "pi_a": g1_json(proof.a),
        "pi_b": g2_json(proof.b),
        "pi_c": g1_json(proof.c),
        "protocol": "groth16",
        "curve": "bls12381",
    }


def public_json(public_inputs: Sequence[int]) -> list[str]:
    return [str(int(x)) for x in public_inputs]
