"""cuzk-bench habits: its -t aliases, --log-level, a zero --randomness by default (with a
warning), gen-vanilla making inputs the client can derive a request's public inputs from, and a
bad --verify-vk file answered in one line."""

from __future__ import annotations

import shlex

import pytest

from cuzk_plugin.cli.bench import build_parser, main
from cuzk_plugin.cli.bench_daemon import build_request, check_args, request_public_inputs


def _parse(argv: list[str]):
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    return args


@pytest.mark.parametrize("alias, kind", [
    ("porep-c2", "porep"), ("seal-commit", "porep"), ("snap-deals", "snap"), ("update", "snap"),
    ("window-post", "wpost"), ("windowpost", "wpost"), ("winning-post", "winning"), ("WinningPost", "winning"),
])
def test_type_aliases(alias, kind):
    assert build_parser().parse_args(["single", "-t", alias]).type == kind


def test_log_level_and_default_randomness(tmp_path, capsys):
    vanilla = tmp_path / "v.bin"
    vanilla.write_bytes(b"\x01")
    args = _parse(["--log-level", "info", "single", "-t", "winning-post", "--vanilla", str(vanilla)])
    assert args.log_level == "info" and args.randomness == bytes(32)
    assert "no --randomness; using 32 zero bytes" in capsys.readouterr().err


def test_a_bad_verify_vk_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        _parse(["single", "--verify-vk", "/etc/passwd"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_.value.code == 2 and "--verify-vk /etc/passwd: " in err and "not a verifying key" in err


@pytest.mark.parametrize("what", ["winning-post", "window-post", "snap-prove"])
def test_gen_vanilla_makes_inputs_single_takes(what, tmp_path, capfd):
    out = tmp_path / f"{what}.json"
    assert main(["gen-vanilla", what, "--out", str(out)]) == 0
    command = capfd.readouterr().out.strip().splitlines()[-1]
    words = shlex.split(command)
    assert words[:2] == ["cuzk-bench", "single"]
    req = build_request(_parse(words[1:]), "gen")
    publics = request_public_inputs(req)  # the client's own derivation accepts what gen-vanilla wrote
    assert publics and all(publics)
