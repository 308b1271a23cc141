"""The `cuzk` command's own behaviour: demo, params inspect, error exits, examples."""

import json
import subprocess
import sys

from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.cli.main import main
from cuzk_plugin.groth16.setup import setup

from .conftest import ROOT


def test_demo_proves_and_verifies(capsys):
    assert main(["demo", "--log2", "6", "--partitions", "2", "--backend", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "VALID" in out and "partition 1" in out and "synthesis" in out


def test_params_inspect_words_and_json(tmp_path, capsys):
    r1cs, _, _ = filecoin_like(40, seed=1).finish()
    key = setup(r1cs)
    key.save(tmp_path / "c.params")
    key.vk.save(tmp_path / "c.vk")
    assert main(["params", "inspect", str(tmp_path / "c.params"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == key.counts()
    assert report["domain_size"] == 64 and report["size_bytes"] == report["expected_size_bytes"]
    assert report["public_inputs"] == key.vk.num_inputs - 1
    assert main(["params", "inspect", str(tmp_path / "c.vk")]) == 0
    assert "vk" in capsys.readouterr().out


def test_errors_exit_2_with_the_cause(tmp_path, capsys):
    (tmp_path / "short.params").write_bytes(b"\0" * 100)
    assert main(["params", "inspect", str(tmp_path / "short.params")]) == 2
    assert "too short" in capsys.readouterr().err
    assert main(["verify", "--vk", str(tmp_path / "missing.vk"), "--proof", "x", "--public", "y"]) == 2


def test_example_script_runs():
    res = subprocess.run([sys.executable, "examples/prove_cubic.py", "--backend", "cpu"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    assert "valid for y: True" in res.stdout and "valid for y+1: False" in res.stdout


def test_bench_address_before_or_after_the_subcommand():
    from cuzk_plugin.cli.bench import build_parser

    parser = build_parser()
    assert parser.parse_args(["-a", "127.0.0.1:9820", "status"]).addr == "127.0.0.1:9820"
    assert parser.parse_args(["batch", "-a", "unix:///tmp/s.sock", "-c", "2"]).addr == "unix:///tmp/s.sock"


def test_bench_type_porep_needs_a_c1():
    import pytest

    from cuzk_plugin.cli.bench import build_parser
    from cuzk_plugin.cli.bench_daemon import build_request

    args = build_parser().parse_args(["single", "-t", "porep"])
    with pytest.raises(SystemExit, match="-t porep needs --c1"):
        build_request(args, "r1")
