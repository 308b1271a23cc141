"""`cuzk`: set up, prove, verify and inspect Groth16 circuits from the command line.

    cuzk setup --r1cs C.r1cs --out DIR          DIR/circuit.{params,vk,r1cs,json}
    cuzk prove --params P --wtns W --out proof.bin [--backend NAME]   (+ public.json beside it)
    cuzk verify --vk V --proof proof.bin --public public.json   (exit 0 valid, 1 invalid)
    cuzk export-snarkjs --vk V --proof proof.bin --public public.json --out DIR
    cuzk params inspect FILE [--json]
    cuzk pce extract --circuit porep-32g|snap-32g|wpost-32g|winning-32g [--param-cache DIR] [--force]
    cuzk pce check --c1 c1.json [--param-cache DIR] [--backend cuda] [--partitions 0,3]
    cuzk demo [--log2 K] [--backend NAME]
    cuzk --config cuzk.toml [-l ADDR] [--log-level L]   the proving daemon (as cuzk-daemon -c), as Curio runs cuzk
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import shutil
import sys
import time
from pathlib import Path

from cuzk_plugin.cli.logs import add_log_level_option, configure_logging
from cuzk_plugin.errors import CuzkError

log = logging.getLogger("cuzk")
EXIT_INVALID = 1
EXIT_ERROR = 2


#: Filecoin's circuits by kind and sector size, as `pce extract` and `params write-test-key` name them.
FILECOIN_CIRCUITS = [f"{kind}-{size}" for kind in ("porep", "snap", "wpost", "winning")
                     for size in ("2k", "8m", "512m", "32g", "64g")]

def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cmd_setup(args: argparse.Namespace) -> int:
    from cuzk_plugin.circuit.circom import read_r1cs
    from cuzk_plugin.groth16.setup import setup

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    r1cs, info = read_r1cs(args.r1cs)
    t1 = time.perf_counter()
    key = setup(r1cs)
    t2 = time.perf_counter()
    key.save(out / "circuit.params")
    key.vk.save(out / "circuit.vk")
    shutil.copyfile(args.r1cs, out / "circuit.r1cs")
    meta = {
        "r1cs_sha256": _sha256(Path(args.r1cs)),
        "constraints": r1cs.num_constraints,
        "public_inputs": info.num_public,
        "aux": r1cs.num_aux,
        "domain_size": key.domain_size,
    }
    (out / "circuit.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"setup: {r1cs.num_constraints} constraints, {info.num_public} public, domain {key.domain_size}; "
          f"read {t1 - t0:.2f}s, setup {t2 - t1:.2f}s, wrote {out}/circuit.params, circuit.vk")
    return 0


def _r1cs_for(params: Path, explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    candidate = params.with_suffix(".r1cs")
    if not candidate.exists():
        raise CuzkError(f"no circuit beside {params} ({candidate} missing): pass --r1cs C.r1cs")
    return candidate


def cmd_prove(args: argparse.Namespace) -> int:
    from cuzk_plugin.backends.registry import get_backend
    from cuzk_plugin.bls12_381.fields import limbs_to_ints
    from cuzk_plugin.circuit.circom import read_r1cs, read_wtns, split_witness
    from cuzk_plugin.circuit.r1cs import synthesize
    from cuzk_plugin.formats.params import ProvingKey
    from cuzk_plugin.groth16.prover import ProveTimings, prove
    from cuzk_plugin.groth16.snarkjs_export import public_json

    params = Path(args.params)
    out = Path(args.out)
    public_out = Path(args.public_out) if args.public_out else out.parent / "public.json"
    for flag, path in (("--out", out), ("--public-out", public_out)):
        _check_writable(flag, path)
    backend = get_backend(args.backend)  # an unusable backend is refused before any work
    t0 = time.perf_counter()
    key = ProvingKey.open(params)
    r1cs, _info = read_r1cs(_r1cs_for(params, args.r1cs))
    inputs, aux = split_witness(r1cs, read_wtns(args.wtns))
    t1 = time.perf_counter()
    part = synthesize(r1cs, inputs, aux)
    t2 = time.perf_counter()
    timings = ProveTimings()
    proof = prove(key, part, backend, timings=timings)
    _write_atomic(out, proof.to_bytes())
    _write_atomic(public_out, (json.dumps(public_json(limbs_to_ints(inputs)[1:])) + "\n").encode())
    print(f"prove ({backend.name}): load {t1 - t0:.2f}s, synthesis {t2 - t1:.2f}s, srs {timings.srs_load:.2f}s, "
          f"h+msm {timings.msm:.2f}s, assemble {timings.assemble:.3f}s; wrote {out} and {public_out}")
    return 0


def _check_writable(flag: str, path: Path) -> None:
    """Refuse an output path whose folder is missing, before the work that would fill it."""
    folder = path.parent
    if not folder.is_dir():
        raise CuzkError(f"{flag} {path}: folder {folder} does not exist")
    if path.is_dir():
        raise CuzkError(f"{flag} {path}: is a folder, give a file name")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def _read_public(path: str) -> list[int]:
    try:
        values = json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CuzkError(f"{path}: not JSON ({exc}); expected a list of decimal strings (snarkjs public.json)") from None
    if not isinstance(values, list):
        raise CuzkError(f"{path}: expected a JSON list of decimal strings")
    try:
        return [int(v) for v in values]
    except (TypeError, ValueError) as exc:
        raise CuzkError(f"{path}: public inputs must be decimal strings: {exc}") from exc


def cmd_verify(args: argparse.Namespace) -> int:
    from cuzk_plugin.formats.params import VerifyingKey
    from cuzk_plugin.formats.proof import decode_proofs
    from cuzk_plugin.groth16.verifier import verify

    vk = VerifyingKey.load(args.vk)
    public = _read_public(args.public)
    try:
        proofs = decode_proofs(Path(args.proof).read_bytes())
    except CuzkError as exc:
        print(f"invalid: {exc}")
        return EXIT_INVALID
    ok = all(verify(vk, p, public) for p in proofs)
    print("valid" if ok else "invalid")
    return 0 if ok else EXIT_INVALID


def cmd_export_snarkjs(args: argparse.Namespace) -> int:
    from cuzk_plugin.formats.params import VerifyingKey
    from cuzk_plugin.formats.proof import Proof
    from cuzk_plugin.groth16.snarkjs_export import proof_json, public_json, verification_key_json

    vk = VerifyingKey.load(args.vk)
    proof = Proof.from_bytes(Path(args.proof).read_bytes())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "verification_key.json").write_text(json.dumps(verification_key_json(vk), indent=1))
    (out / "proof.json").write_text(json.dumps(proof_json(proof), indent=1))
    (out / "public.json").write_text(json.dumps(public_json(_read_public(args.public)), indent=1))
    print(f"wrote {out}/verification_key.json, proof.json, public.json")
    return 0


def cmd_params_inspect(args: argparse.Namespace) -> int:
    from cuzk_plugin.formats.params import ProvingKey, VerifyingKey, file_digest

    path = Path(args.file)
    report: dict = {"file": str(path), "size_bytes": path.stat().st_size, "digest": file_digest(path)}
    if path.suffix == ".vk":
        vk = VerifyingKey.load(path)
        report |= {"kind": "vk", "counts": {"ic": vk.num_inputs}, "public_inputs": vk.num_inputs - 1}
    else:
        key = ProvingKey.open(path)
        counts = key.counts()
        report |= {
            "kind": "params",
            "counts": counts,
            "public_inputs": counts["ic"] - 1,
            "domain_size": key.domain_size,
            "log2_domain": key.domain_size.bit_length() - 1,
            "vector_bytes": {n: int(getattr(key, n).nbytes) for n in ("h", "l", "a", "b_g1", "b_g2")},
            "expected_size_bytes": ProvingKey.file_size(counts),
        }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['file']}: {report['kind']}, {report['size_bytes']:,} bytes, digest {report['digest']}")
    print(f"  public inputs (without ONE): {report['public_inputs']}")
    if report["kind"] == "params":
        print(f"  domain: 2^{report['log2_domain']} = {report['domain_size']:,}")
        for name, count in report["counts"].items():
            size = report["vector_bytes"].get(name)
            print(f"  {name:5s} {count:>12,} points" + (f"  {size:>15,} bytes" if size is not None else ""))
    return 0


def cmd_pce_extract(args: argparse.Namespace) -> int:
    from cuzk_plugin.adapters.curio.porep.job import ensure_porep_pce
    from cuzk_plugin.adapters.curio.post.provider import ensure_post_pce
    from cuzk_plugin.adapters.curio.snap.job import ensure_snap_pce
    from cuzk_plugin.formats.pce import pce_path, read_header

    cache = Path(args.param_cache).expanduser()
    if args.force:
        pce_path(cache, args.circuit).unlink(missing_ok=True)
    t0 = time.perf_counter()
    kind = args.circuit.split("-")[0]
    ensure = {"snap": ensure_snap_pce, "wpost": ensure_post_pce, "winning": ensure_post_pce}.get(kind, ensure_porep_pce)
    path = ensure(args.circuit, cache)
    hdr = read_header(path)
    print(f"{path}: {hdr.name}, {hdr.num_constraints:,} rows ({hdr.num_inputs} inputs, {hdr.num_aux:,} aux), "
          f"nnz A/B/C {hdr.nnz[0]:,}/{hdr.nnz[1]:,}/{hdr.nnz[2]:,}, {hdr.num_coeffs} coefficients, "
          f"{hdr.file_size:,} bytes, digest {hdr.digest}, {time.perf_counter() - t0:.1f}s")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from cuzk_plugin.demo import run_in_process

    return run_in_process(log2=args.log2, backend_name=args.backend, partitions=args.partitions)


def build_parser() -> argparse.ArgumentParser:
    from cuzk_plugin import __version__
    from cuzk_plugin.backends.registry import backend_names
    from cuzk_plugin.cli.pce_check import add_check_parser

    backends = ["auto", *backend_names()]
    backend_help = f"{', '.join(backends)}; auto (default) picks cuda, else opencl, else cpu"
    parser = argparse.ArgumentParser(prog="cuzk", description="Groth16 (BLS12-381) for Filecoin: setup, prove, verify.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_log_level_option(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("setup", help="generate .params/.vk for a circom .r1cs (bls12381)")
    p.add_argument("--r1cs", required=True, help="circom circuit compiled with --prime bls12381")
    p.add_argument("--out", required=True, help="output directory (created): circuit.{params,vk,r1cs,json}")
    p.set_defaults(func=cmd_setup)

    p = sub.add_parser("prove", help="prove a circom witness (.wtns)")
    p.add_argument("--params", required=True, help="proving key (.params, e.g. from cuzk setup)")
    p.add_argument("--wtns", required=True, help="witness from snarkjs wtns calculate")
    p.add_argument("--out", required=True, help="proof file (192 bytes); its folder must exist")
    p.add_argument("--r1cs", help="circuit (default: the .r1cs beside --params, written by setup)")
    p.add_argument("--public-out", help="public inputs JSON (default: public.json beside --out)")
    p.add_argument("--backend", default="auto", choices=backends, help=backend_help)
    p.set_defaults(func=cmd_prove)

    p = sub.add_parser("verify", help="verify a proof; exit 0 valid, 1 invalid")
    p.add_argument("--vk", required=True, help="verifying key (.vk, or a .params file)")
    p.add_argument("--proof", required=True, help="proof file (192 bytes per proof)")
    p.add_argument("--public", required=True, help="snarkjs public.json (decimal strings, no ONE)")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("export-snarkjs", help="write verification_key.json, proof.json, public.json")
    p.add_argument("--vk", required=True, help="verifying key (.vk)")
    p.add_argument("--proof", required=True, help="proof file (192 bytes)")
    p.add_argument("--public", required=True, help="public.json (decimal strings, no ONE)")
    p.add_argument("--out", required=True, help="output directory (created)")
    p.set_defaults(func=cmd_export_snarkjs)

    p = sub.add_parser("params", help="parameter files")
    psub = p.add_subparsers(dest="params_command", required=True, metavar="SUBCOMMAND")
    pi = psub.add_parser("inspect", help="counts, domain, sizes, digest")
    pi.add_argument("file", help="a .params or .vk file")
    pi.add_argument("--json", action="store_true", help="machine-readable output")
    pi.set_defaults(func=cmd_params_inspect)
    pw = psub.add_parser("write-test-key", help="make a circuit's TEST key on a GPU once and write it as "
                                                "<out>/<circuit>-test-key.params (and .vk), for cards too small to make it")
    pw.add_argument("--circuit", required=True, choices=FILECOIN_CIRCUITS,
                    help="the PoRep, SnapDeals (update), WindowPoSt or WinningPoSt circuit, by sector size")
    pw.add_argument("--param-cache", default="/var/tmp/filecoin-proof-parameters",
                    help="where its pre-compiled circuit is (recorded there first when missing; default "
                         "/var/tmp/filecoin-proof-parameters)")
    pw.add_argument("--out", default=None, help="directory to write the key to (default: the param cache, where the "
                                                "daemon finds it with [srs] allow_test_keys = true)")
    pw.set_defaults(func=_write_test_key)

    p = sub.add_parser("pce", help="pre-compiled circuits (R1CS recorded once per circuit shape)")
    psub = p.add_subparsers(dest="pce_command", required=True, metavar="SUBCOMMAND")
    pe = psub.add_parser("extract", help="record a circuit into {param-cache}/pce-{circuit}.pce (checked if present)")
    pe.add_argument("--circuit", required=True, choices=FILECOIN_CIRCUITS,
                    help="the PoRep, SnapDeals (update), WindowPoSt or WinningPoSt circuit to record, by sector size")
    pe.add_argument("--param-cache", default="/var/tmp/filecoin-proof-parameters",
                    help="the daemon's [srs] param_cache (default /var/tmp/filecoin-proof-parameters)")
    pe.add_argument("--force", action="store_true", help="extract again even if a valid file exists")
    pe.set_defaults(func=cmd_pce_extract)
    add_check_parser(psub, backends)

    p = sub.add_parser("demo", help="set up, prove and verify an example circuit, with timings")
    p.add_argument("--log2", type=int, default=12, help="constraints per partition, log2 (default 12)")
    p.add_argument("--partitions", type=int, default=2, help="partitions (default 2)")
    p.add_argument("--backend", default="auto", choices=backends, help=backend_help)
    p.set_defaults(func=cmd_demo)
    return parser


def _write_test_key(args: argparse.Namespace) -> int:
    from cuzk_plugin.cli.params_test_key import cmd_write_test_key

    return cmd_write_test_key(args)


#: Flags that, with no subcommand, make ``cuzk`` the daemon (Curio's docs run ``cuzk --config FILE``).
_DAEMON_FLAGS = ("-c", "--config")
_SUBCOMMANDS = frozenset({"setup", "prove", "verify", "export-snarkjs", "params", "pce", "demo"})


def wants_daemon(argv: list[str]) -> bool:
    """True for ``cuzk --config FILE`` / ``cuzk -c FILE`` with no subcommand: cuzk's own binary is the daemon."""
    return (any(a in _DAEMON_FLAGS or a.startswith("--config=") for a in argv)
            and not any(a in _SUBCOMMANDS for a in argv))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if wants_daemon(argv):
        from cuzk_plugin.cli.daemon import main as daemon_main

        return daemon_main(argv)
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level)
    try:
        return args.func(args)
    except (CuzkError, OSError, ValueError) as exc:
        print(f"cuzk: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("cuzk: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
