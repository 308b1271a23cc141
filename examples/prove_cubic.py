"""Write a circuit with the constraint-system API, set it up, prove and verify it.

    .venv/bin/python examples/prove_cubic.py [--backend cpu|opencl|cuda|auto]

The circuit proves knowledge of x with x^3 + x + 5 = y for a public y (the classic example).
"""

from __future__ import annotations

import argparse
import secrets

from cuzk_plugin.backends.registry import get_backend
from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.constraint_system import ConstraintSystem
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.groth16.prover import prove
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import verify


def cubic(x: int | None) -> ConstraintSystem:
    """x^3 + x + 5 = y; x private, y public. Values None build the shape only (for setup)."""
    cs = ConstraintSystem()
    y_val = None if x is None else (x**3 + x + 5) % R
    y = cs.alloc_input(y_val)
    vx = cs.alloc(x)
    x2 = cs.alloc(None if x is None else x * x % R)
    x3 = cs.alloc(None if x is None else x**3 % R)
    cs.enforce(vx, vx, x2)
    cs.enforce(x2, vx, x3)
    cs.enforce(x3 + vx + 5, 1, y)
    return cs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="auto")
    args = parser.parse_args()
    shape, _, _ = cubic(None).finish()
    key = setup(shape)
    x = secrets.randbelow(R)
    r1cs, inputs, aux = cubic(x).finish()
    proof = prove(key, synthesize(r1cs, inputs, aux), get_backend(args.backend))
    y = (x**3 + x + 5) % R
    print("proof:", proof.to_bytes().hex())
    print("valid for y:", verify(key.vk, proof, [y]))
    print("valid for y+1:", verify(key.vk, proof, [(y + 1) % R]))


if __name__ == "__main__":
    main()
