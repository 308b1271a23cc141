"""circom circuits compiled for bls12381, run through the `cuzk` commands exactly as documented,
and checked by an independent verifier: `snarkjs groth16 verify`."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cuzk_plugin.circuit.circom import read_r1cs, read_wtns, split_witness
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.errors import CircuitError

from .conftest import ROOT

CIRCUITS = Path(__file__).parent / "circuits"


def compile_circuit(circom2: Path, name: str, workdir: Path, prime: str = "bls12381") -> Path:
    """circom2 (WebAssembly) only reaches files below its working directory: copy the circuit and
    circomlib there, then compile."""
    circomlib = circom2.parent.parent / "circomlib" / "circuits"
    if not (workdir / "lib").exists():
        shutil.copytree(circomlib, workdir / "lib")
    for src in CIRCUITS.glob("*.circom"):
        shutil.copy(src, workdir / src.name)
    out = workdir / prime
    out.mkdir(exist_ok=True)
    subprocess.run([str(circom2), f"{name}.circom", "--r1cs", "--wasm", "--prime", prime, "-l", "lib", "-o", prime],
                   cwd=workdir, check=True, capture_output=True)
    return out


def witness(snarkjs: Path, build: Path, name: str, inputs: dict, dest: Path) -> Path:
    (build / f"{name}.input.json").write_text(json.dumps(inputs))
    subprocess.run([str(snarkjs), "wtns", "calculate", str(build / f"{name}_js" / f"{name}.wasm"),
                    str(build / f"{name}.input.json"), str(dest)], check=True, capture_output=True)
    return dest


def cuzk(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuzk_plugin.cli.main", *args], cwd=ROOT,
                          capture_output=True, text=True, check=check)


def snarkjs_verify(snarkjs: Path, folder: Path) -> bool:
    res = subprocess.run([str(snarkjs), "groth16", "verify", str(folder / "verification_key.json"),
                          str(folder / "public.json"), str(folder / "proof.json")], capture_output=True, text=True)
    return res.returncode == 0 and "OK" in res.stdout


@pytest.mark.parametrize("name, inputs", [
    ("chain_1k", {"a": "3", "b": "11", "word": "987654321"}),
    ("chain_16k", {"a": "5", "b": "7", "word": "18446744073709551615"}),
])
def test_circom_circuit_through_the_cli_and_snarkjs(tmp_path, circom2, snarkjs, name, inputs):
    build = compile_circuit(circom2, name, tmp_path)
    wtns = witness(snarkjs, build, name, inputs, tmp_path / "w.wtns")
    r1cs, info = read_r1cs(build / f"{name}.r1cs")
    assert r1cs.num_constraints >= (1 << 10 if name == "chain_1k" else 1 << 14)

    keys, out = tmp_path / "keys", tmp_path / "out"
    out.mkdir()
    cuzk("setup", "--r1cs", str(build / f"{name}.r1cs"), "--out", str(keys))
    cuzk("prove", "--params", str(keys / "circuit.params"), "--wtns", str(wtns), "--out", str(out / "proof.bin"), "--backend", "cpu")
    public = out / "public.json"
    assert len(json.loads(public.read_text())) == info.num_public
    assert cuzk("verify", "--vk", str(keys / "circuit.vk"), "--proof", str(out / "proof.bin"), "--public", str(public)).returncode == 0
    sj = tmp_path / "snarkjs"
    cuzk("export-snarkjs", "--vk", str(keys / "circuit.vk"), "--proof", str(out / "proof.bin"), "--public", str(public), "--out", str(sj))
    assert snarkjs_verify(snarkjs, sj), "snarkjs refused our proof"

    # Tampering: a changed public input, and A and C swapped, are refused by snarkjs ...
    good = json.loads((sj / "public.json").read_text())
    (sj / "public.json").write_text(json.dumps([str(int(good[0]) + 1), *good[1:]]))
    assert not snarkjs_verify(snarkjs, sj)
    (sj / "public.json").write_text(json.dumps(good))
    proof = json.loads((sj / "proof.json").read_text())
    proof["pi_a"], proof["pi_c"] = proof["pi_c"], proof["pi_a"]
    (sj / "proof.json").write_text(json.dumps(proof))
    assert not snarkjs_verify(snarkjs, sj)
    # ... and a changed proof byte by `cuzk verify` (exit 1).
    blob = bytearray((out / "proof.bin").read_bytes())
    blob[100] ^= 0x04
    (out / "bad.bin").write_bytes(bytes(blob))
    res = cuzk("verify", "--vk", str(keys / "circuit.vk"), "--proof", str(out / "bad.bin"), "--public", str(public), check=False)
    assert res.returncode == 1 and "invalid" in res.stdout


def test_circom_witness_satisfies_imported_r1cs(tmp_path, circom2, snarkjs):
    build = compile_circuit(circom2, "chain_1k", tmp_path)
    wtns = read_wtns(witness(snarkjs, build, "chain_1k", {"a": "2", "b": "3", "word": "77"}, tmp_path / "w.wtns"))
    r1cs, info = read_r1cs(build / "chain_1k.r1cs")
    assert (info.num_outputs, info.num_public_inputs, info.num_private_inputs) == (2, 1, 2)
    inputs, aux = split_witness(r1cs, wtns)
    part = synthesize(r1cs, inputs, aux)
    assert part.num_constraints == r1cs.num_constraints + r1cs.num_inputs
    bad = aux.copy()
    bad[5, 0] ^= np.uint64(2)
    with pytest.raises(CircuitError, match="does not satisfy constraint"):
        synthesize(r1cs, inputs, bad)
    with pytest.raises(CircuitError, match="witness has"):
        split_witness(r1cs, wtns[:-1])


def test_file_for_another_prime_is_refused_by_name(tmp_path, circom2):
    build = compile_circuit(circom2, "chain_1k", tmp_path, prime="bn128")
    with pytest.raises(CircuitError, match="made for bn128, not bls12381"):
        read_r1cs(build / "chain_1k.r1cs")
    res = cuzk("setup", "--r1cs", str(build / "chain_1k.r1cs"), "--out", str(tmp_path / "k"), check=False)
    assert res.returncode == 2 and "made for bn128" in res.stderr


def test_damaged_circom_files_are_refused(tmp_path):
    for magic, reader in ((b"r1cs", read_r1cs), (b"wtns", read_wtns)):
        f = tmp_path / f"x.{magic.decode()}"
        f.write_bytes(b"nope" + bytes(20))
        with pytest.raises(CircuitError, match="bad magic"):
            reader(f)
        f.write_bytes(magic + (1).to_bytes(4, "little") + (1).to_bytes(4, "little") + (1).to_bytes(4, "little") + (999).to_bytes(8, "little"))
        with pytest.raises(CircuitError, match="claims 999 bytes"):
            reader(f)
