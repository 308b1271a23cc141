"""Every CLI failure is one clear line and an exit code (2: bad flag or input, 1: no daemon or a
failed proof), never a traceback; `--version`, help on every option, fixed values as choices;
cuzk-bench's flags and kinds as cuzk-bench has them."""

from __future__ import annotations

import argparse
import base64
import json
import socket
import subprocess
import sys

import pytest

from cuzk_plugin.cli import bench, bench_daemon
from cuzk_plugin.cli.daemon import build_parser as daemon_parser
from cuzk_plugin.cli.daemon import main as daemon_main
from cuzk_plugin.cli.main import build_parser as cuzk_parser
from cuzk_plugin.cli.main import main as cuzk_main
from cuzk_plugin.server.proto import cuzk_pb2 as pb


def _one_line_error(err: str, *needles: str) -> None:
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if not line.startswith("usage:") and not line.startswith(" ")]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, timeout=60)


def _walk(parser: argparse.ArgumentParser, where: str = ""):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{where} {name}")
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield where, action


@pytest.mark.parametrize("build", [cuzk_parser, bench.build_parser, daemon_parser], ids=["cuzk", "cuzk-bench", "cuzk-daemon"])
def test_every_option_has_help(build):
    missing = [f"{where} {action.option_strings or action.dest}" for where, action in _walk(build())
               if not action.help]
    assert not missing


@pytest.mark.parametrize("main", [cuzk_main, bench.main, daemon_main], ids=["cuzk", "cuzk-bench", "cuzk-daemon"])
def test_version(main, capsys):
    from cuzk_plugin import __version__

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip().endswith(__version__)


def test_log_level_is_a_choice_in_any_case(capsys):
    with pytest.raises(SystemExit) as exit_:
        cuzk_main(["--log-level", "LOUD", "params", "inspect", "x"])
    assert exit_.value.code == 2
    _one_line_error(capsys.readouterr().err, "--log-level", "invalid choice: 'loud'")
    assert cuzk_parser().parse_args(["--log-level", "DEBUG", "params", "inspect", "x"]).log_level == "debug"


def test_backend_is_a_choice():
    with pytest.raises(SystemExit):
        cuzk_parser().parse_args(["prove", "--params", "p", "--wtns", "w", "--out", "o", "--backend", "cdua"])


def test_non_json_public_file_is_named(tmp_path, capsys):
    public = tmp_path / "public.json"
    public.write_text("1, 2, 3 not json")
    assert cuzk_main(["verify", "--vk", str(tmp_path / "x.vk"), "--proof", "p", "--public", str(public)]) == 2
    # the vk is read first; give one so that public.json is what fails
    from cuzk_plugin.circuit.examples import filecoin_like
    from cuzk_plugin.groth16.setup import setup

    key = setup(filecoin_like(8, seed=1).finish()[0])
    key.vk.save(tmp_path / "c.vk")
    capsys.readouterr()
    assert cuzk_main(["verify", "--vk", str(tmp_path / "c.vk"), "--proof", "p", "--public", str(public)]) == 2
    _one_line_error(capsys.readouterr().err, str(public), "not JSON")


def test_out_into_a_missing_folder_is_refused_before_any_work(tmp_path, capsys):
    # --params does not even exist: the folder is checked first, before the key is opened
    missing = tmp_path / "no-such-folder" / "proof.bin"
    assert cuzk_main(["prove", "--params", str(tmp_path / "absent.params"), "--wtns", "w", "--out", str(missing),
                      "--backend", "cpu"]) == 2
    _one_line_error(capsys.readouterr().err, "--out", f"folder {missing.parent} does not exist")
    assert cuzk_main(["prove", "--params", "p", "--wtns", "w", "--out", str(tmp_path / "p.bin"),
                      "--public-out", str(missing), "--backend", "cpu"]) == 2
    _one_line_error(capsys.readouterr().err, "--public-out")


def test_unusable_backend_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    from cuzk_plugin.backends import registry

    monkeypatch.setattr(registry, "probe", lambda name: "no device (test)" if name == "cuda" else None)
    assert cuzk_main(["prove", "--params", str(tmp_path / "absent.params"), "--wtns", "w",
                      "--out", str(tmp_path / "p.bin"), "--backend", "cuda"]) == 2
    _one_line_error(capsys.readouterr().err, "backend 'cuda' cannot run here: no device (test)")


def test_bench_status_without_a_daemon_is_one_line():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = _run("cuzk_plugin.cli.bench", "status", "-a", f"127.0.0.1:{port}", "--timeout", "5")
    assert res.returncode == 1
    _one_line_error(res.stderr, f"cannot reach the daemon at 127.0.0.1:{port}")


def test_cuzk_log_level_loud_in_a_process():
    res = _run("cuzk_plugin.cli.main", "--log-level", "LOUD", "demo")
    assert res.returncode == 2
    _one_line_error(res.stderr, "invalid choice: 'loud'")


# -- cuzk-bench's flags -----------------------------------------------------------------------------------
def _bench_args(*argv: str) -> argparse.Namespace:
    parser = bench.build_parser()
    args = parser.parse_args(list(argv))
    bench_daemon.check_args(parser, args)
    return args


def test_http_addresses_and_preload_c():
    assert _bench_args("-a", "http://127.0.0.1:9820", "status").addr == "127.0.0.1:9820"
    assert _bench_args("status", "-a", "http://10.0.0.5:9820/").addr == "10.0.0.5:9820"
    assert _bench_args("preload", "-c", "porep-32g").circuit_id == "porep-32g"
    assert _bench_args("evict", "wpost-32g").circuit_id == "wpost-32g"


@pytest.mark.parametrize("argv, needle", [
    (["single", "-t", "wpost", "--randomness", "00" * 32], "-t wpost needs --vanilla FILE"),
    (["single", "-t", "windowpost"], "-t wpost needs --vanilla FILE"),  # cuzk-bench's alias; --randomness defaults to zeros
    (["single", "-t", "snap", "--vanilla", "f", "--comm-r-old", "11" * 32], "--comm-r-new and --comm-d-new"),
    (["batch", "-t", "porep"], "-t porep needs --c1"),
    (["single", "-t", "wpost", "--randomness", "abcd"], "expected 32 bytes"),
    (["preload"], "needs a circuit id"),
    (["preload", "a", "-c", "b"], "two circuit ids"),
    (["single", "--out", "/no/such/folder/p.bin"], "folder /no/such/folder does not exist"),
    (["batch", "--plot", "/no/such/folder/t.png"], "--plot /no/such/folder/t.png: folder"),
    (["-a", "https://h:1", "status"], "TLS"),
])
def test_bench_flag_errors_exit_2_with_one_line(argv, needle, capsys):
    with pytest.raises(SystemExit) as exit_:
        _bench_args(*argv)
    assert exit_.value.code == 2
    _one_line_error(capsys.readouterr().err, needle)


def test_vanilla_container(tmp_path):
    proofs = [b"\x01\x02\x03", bytes(range(200))]
    several = tmp_path / "proofs.json"
    several.write_text(json.dumps([base64.b64encode(p).decode() for p in proofs]))
    one = tmp_path / "one.bin"
    one.write_bytes(b"\x00\x07raw bincode")
    assert bench_daemon.read_vanilla([str(several), str(one)]) == [*proofs, b"\x00\x07raw bincode"]
    bad = tmp_path / "bad.json"
    bad.write_text('["not base64!!"]')
    with pytest.raises(bench_daemon.BenchInputError, match=r"--vanilla .*bad\.json: not a JSON list of base64"):
        bench_daemon.read_vanilla([str(bad)])
    (tmp_path / "empty.bin").write_bytes(b"")
    with pytest.raises(bench_daemon.BenchInputError, match="empty"):
        bench_daemon.read_vanilla([str(tmp_path / "empty.bin")])


def test_requests_of_cuzk_bench_kinds(tmp_path):
    vanilla = tmp_path / "v.json"
    vanilla.write_text(json.dumps([base64.b64encode(b"sector-proof-%d" % i).decode() for i in range(3)]))
    r = bytes(range(32))
    req = bench_daemon.build_request(_bench_args(
        "single", "-t", "wpost", "--vanilla", str(vanilla), "--registered-proof", "13", "--randomness", r.hex(),
        "--partition-index", "2", "--miner-id", "1234"), "wdpost-1")
    assert (req.proof_kind, req.registered_proof, req.randomness, req.partition_index, req.miner_id) == \
        (pb.WINDOW_POST_PARTITION, 13, r, 2, 1234)
    assert list(req.vanilla_proofs) == [b"sector-proof-%d" % i for i in range(3)]
    req = bench_daemon.build_request(_bench_args(
        "single", "-t", "winning", "--vanilla", str(vanilla), "--randomness", "0x" + r.hex()), "winpost-1")
    assert req.proof_kind == pb.WINNING_POST and req.registered_proof == 3 and req.randomness == r
    a, b, c = (bytes([i]) * 32 for i in (1, 2, 3))
    req = bench_daemon.build_request(_bench_args(
        "single", "-t", "snap", "--vanilla", str(vanilla), "--comm-r-old", a.hex(), "--comm-r-new", b.hex(),
        "--comm-d-new", c.hex(), "--sector-num", "9"), "snap-1")
    assert (req.proof_kind, req.comm_r_old, req.comm_r_new, req.comm_d_new, req.sector_number, req.registered_proof) == \
        (pb.SNAP_DEALS_UPDATE, a, b, c, 9, 3)
    c1 = tmp_path / "c1.json"
    c1.write_text(json.dumps({"registered_proof": "StackedDrg2KiBV1_1", "vanilla_proofs": {}}))
    req = bench_daemon.build_request(_bench_args("single", "-t", "porep", "--vanilla", str(c1), "--sector", "7"), "p-1")
    envelope = json.loads(req.vanilla_proof)
    assert req.proof_kind == pb.POREP_SEAL_COMMIT and envelope["SectorNum"] == 7 and envelope["SectorSize"] == 2048
    assert base64.b64decode(envelope["Phase1Out"]) == c1.read_bytes()


def test_daemon_on_a_port_in_use_says_so(tmp_path):
    config = tmp_path / "cuzk.toml"
    config.write_text(f'[daemon]\nstatus_listen = ""\n[srs]\nparam_cache = "{tmp_path / "params"}"\n'
                      '[gpus]\nbackend = "cpu"\n[synthesis]\nthreads = 1\n')
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = _run("cuzk_plugin.cli.daemon", "-c", str(config), "-l", f"127.0.0.1:{port}", "--log-level", "error")
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert f"cannot listen on 127.0.0.1:{port}: the address is in use" in res.stderr
