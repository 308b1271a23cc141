"""CPU prove time, ours (`cuzk prove --backend cpu`) against `snarkjs groth16 prove`, on the
same circom circuit and machine. Prints medians and spreads over --runs runs after a warm-up.

    .venv/bin/python bench/cpu_vs_snarkjs.py --ptau PTAU --n 65000 --runs 3 --work /tmp/b16

PTAU: a prepared powers-of-tau file for bls12381 of at least 2^16 (snarkjs powersoftau new
bls12381 16 ... then prepare phase2: about 46 minutes on a 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "tools/oracles/node_modules"


def run(cmd: list[str], cwd: Path | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t


def stats(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.2f} s (min {min(xs):.2f}, max {max(xs):.2f}, n={len(xs)})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptau", required=True)
    ap.add_argument("--n", type=int, default=65000, help="chain length (constraints = n + 66)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default="/tmp/cuzk-bench16")
    ap.add_argument("--backends", default="cpu", help="comma-separated cuzk backends to time (cpu, opencl)")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "lib").exists():
        shutil.copytree(NODE / "circomlib/circuits", work / "lib")
    shutil.copy(ROOT / "tests/circuits/chain.circom", work)
    (work / "bench.circom").write_text(f'pragma circom 2.0.0;\ninclude "chain.circom";\ncomponent main {{public [a, b]}} = Chain({args.n});\n')
    run([str(NODE / ".bin/circom2"), "bench.circom", "--r1cs", "--wasm", "--prime", "bls12381", "-l", "lib", "-o", "."], cwd=work)
    (work / "input.json").write_text(json.dumps({"a": "3", "b": "5", "word": "1234567"}))
    snarkjs = str(NODE / ".bin/snarkjs")
    run([snarkjs, "wtns", "calculate", "bench_js/bench.wasm", "input.json", "w.wtns"], cwd=work)
    cuzk = [sys.executable, "-m", "cuzk_plugin.cli.main"]
    if not (work / "keys/circuit.params").exists():
        print(f"our setup: {run(cuzk + ['setup', '--r1cs', str(work / 'bench.r1cs'), '--out', str(work / 'keys')]):.1f} s")
    if not (work / "c.zkey").exists():
        print(f"snarkjs setup: {run([snarkjs, 'groth16', 'setup', 'bench.r1cs', args.ptau, 'c.zkey'], cwd=work):.1f} s")
        run([snarkjs, "zkey", "export", "verificationkey", "c.zkey", "vk.json"], cwd=work)
    (work / "ours").mkdir(exist_ok=True)
    prove_cmds = {
        name: cuzk + ["prove", "--params", str(work / "keys/circuit.params"), "--wtns", str(work / "w.wtns"),
                      "--out", str(work / "ours/proof.bin"), "--backend", name]
        for name in args.backends.split(",")
    }
    theirs_cmd = [snarkjs, "groth16", "prove", "c.zkey", "w.wtns", "proof.json", "public.json"]
    for cmd in [*prove_cmds.values()]:
        run(cmd)  # warm-up (page cache, kernel build cache)
    run(theirs_cmd, cwd=work)
    ours: dict[str, list[float]] = {name: [] for name in prove_cmds}
    theirs = []
    for _ in range(args.runs):
        for name, cmd in prove_cmds.items():
            ours[name].append(run(cmd))
        theirs.append(run(theirs_cmd, cwd=work))
    run(cuzk + ["verify", "--vk", str(work / "keys/circuit.vk"), "--proof", str(work / "ours/proof.bin"), "--public", str(work / "ours/public.json")])
    run([snarkjs, "groth16", "verify", "vk.json", "public.json", "proof.json"], cwd=work)
    r1cs_json = json.loads((work / "keys/circuit.json").read_text())
    print(f"circuit: {r1cs_json['constraints']} constraints, domain {r1cs_json['domain_size']}")
    print(f"snarkjs groth16 prove (whole command): {stats(theirs)}")
    for name, times in ours.items():
        print(f"cuzk prove --backend {name} (whole command): {stats(times)}; "
              f"ratio to snarkjs (medians) {statistics.median(times) / statistics.median(theirs):.2f}")


if __name__ == "__main__":
    main()
