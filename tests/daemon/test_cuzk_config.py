"""cuzk's operators switch without rewriting their config: every key cuzk's example sets, with
its values, starts our daemon; cuzk's other keys are accepted (deprecated and ineffective ones
with a warning); keys neither daemon knows, and values that would fail later, stop start-up
naming the key."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from test_daemon_cli import _wait_serving

from cuzk_plugin.config import ConfigError, load_config

#: Every key (and value) that cuzk's cuzk.example.toml sets.
CUZK_EXAMPLE = """\
[daemon]
listen = "0.0.0.0:9820"

[srs]
param_cache = "/data/zk/params"

[memory]
total_budget = "auto"
safety_margin = "5GiB"
eviction_min_idle = "5m"

[gpus]
devices = []
gpu_threads = 32
gpu_workers_per_device = 2

[scheduler]
max_batch_size = 1
max_batch_wait_ms = 10000
sort_by_type = true

[synthesis]
threads = 0

[pipeline]
enabled = true
synthesis_lookahead = 1
synthesis_concurrency = 1

[logging]
level = "info"
"""

#: The rest of cuzk's config.rs: deprecated keys, keys without an effect here, the status page.
CUZK_OTHER_KEYS = """\
[daemon]
status_listen = ""
[srs]
preload = ["porep-32g"]
[memory]
pinned_budget = "50GiB"
working_memory_budget = "80GiB"
[synthesis]
partition_workers = 12
[pipeline]
slot_size = 3
max_gpu_queue_depth = 8
[logging]
format = "json"
"""


def test_cuzk_example_values_map_onto_ours(tmp_path):
    path = tmp_path / "cuzk.toml"
    path.write_text(CUZK_EXAMPLE)
    c = load_config(path)
    assert c.daemon.listen == "0.0.0.0:9820" and c.srs.param_cache == Path("/data/zk/params")
    assert c.memory.total_budget == "auto" and c.memory.safety_margin == 5 << 30 and c.memory.eviction_min_idle == 300
    assert c.gpus.devices == [] and c.gpus.gpu_threads == 32 and c.gpus.gpu_workers_per_device == 2
    assert (c.scheduler.max_batch_size, c.scheduler.max_batch_wait_ms, c.scheduler.sort_by_type) == (1, 10000, True)
    assert c.synthesis.threads == 0 and c.pipeline.enabled and c.pipeline.synthesis_lookahead == 1
    assert c.pipeline.synthesis_concurrency == 1 and c.pipeline.max_parallel_synthesis == 0  # proofs, not partitions
    assert c.logging.level == "info"


def test_cuzk_other_keys_warn_and_start(tmp_path, caplog):
    path = tmp_path / "cuzk.toml"
    path.write_text(CUZK_OTHER_KEYS)
    with caplog.at_level(logging.WARNING, logger="cuzk.config"):
        c = load_config(path)
    for key in ("preload", "pinned_budget", "working_memory_budget", "partition_workers"):
        assert f"{key} is deprecated and ignored" in caplog.text
    for key in ("slot_size", "max_gpu_queue_depth"):
        assert f"{key} (cuzk) has no effect here" in caplog.text
    assert c.daemon.status_listen == "" and c.logging.format == "json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
async def test_cuzk_example_starts_the_daemon(tmp_path, param_cache):
    """The file as cuzk's operators have it; only what is the host's (the port the test may
    use, the parameter directory, the backend of this machine) comes from -l and CUZK_*."""
    config = tmp_path / "cuzk.toml"
    config.write_text(CUZK_EXAMPLE)
    port = _free_port()
    env = {**os.environ, "CUZK_SRS__PARAM_CACHE": str(param_cache), "CUZK_GPUS__BACKEND": "cpu",
           "CUZK_SYNTHESIS__THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "cuzk_plugin.cli.daemon", "-c", str(config), "-l", f"127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        await _wait_serving(f"127.0.0.1:{port}", proc, timeout=90)
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(30)
    out = proc.stdout.read()
    assert rc == 0, out
    assert "Traceback" not in out and "serving on 127.0.0.1" in out


@pytest.mark.parametrize("text, expect", [
    ('[memory]\ntotal_budget = "1e999"\n', "[memory] total_budget: size '1e999' is beyond"),
    ('[memory]\ntotal_budget = "4GiB"\nsafety_margin = "5GiB"\n', "[memory]: safety_margin"),
    ('[memory]\nsafety_margin = "1e18"\n', "safety_margin"),
    ('[memory]\neviction_min_idle = 1e400\n', "[memory] eviction_min_idle"),
    ('[srs]\nparam_cache = "/"\n', "[srs] param_cache: '/' is a system directory"),
    ('[srs]\nparam_cache = "/etc/"\n', "[srs] param_cache"),
    ('[srs]\nmax_generated_log2 = 99\n', "[srs] max_generated_log2"),
    ('[pipeline]\nsynthesis_lookahead = 1000000\n', "[pipeline] synthesis_lookahead"),
    ('[synthesis]\nthreads = 100000\n', "[synthesis] threads"),
    ('[gpus]\ngpu_threads = 99999\n', "[gpus] gpu_threads"),
    ('[gpus]\ndevices = [-1]\n', "[gpus] devices"),
    ('[scheduler]\nmax_pending = 0\n', "[scheduler] max_pending"),
    ('[logging]\nlevel = "loud"\n', "[logging] level"),
    ('[logging]\ncolour = true\n', "[logging] colour: unknown key"),
    ('[daemon]\ntls_cert = "/nonexistent.pem"\n', "[daemon]: tls_cert and tls_key go together"),
    ('[daemon]\nauth_token = "s3cret"\ntls_cert = "/x"\n', "tls_cert"),
])
def test_values_that_would_fail_later_stop_startup(tmp_path, text, expect):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert expect in str(err.value)
    assert "s3cret" not in str(err.value)  # a refusal never echoes the token


def test_huge_budget_exits_2_naming_the_key(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[memory]\ntotal_budget = "1e999"\n')
    proc = subprocess.run([sys.executable, "-m", "cuzk_plugin.cli.daemon", "-c", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "[memory] total_budget" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("text, expect", [
    ('[pipeline]\nsynthesis_concurency = 1\n', "[pipeline] synthesis_concurency: unknown key (did you mean 'synthesis_concurrency'?"),
    ('[gpus]\nbackends = "cpu"\n', "did you mean 'backend'?"),
    ('[gpu]\nbackend = "cpu"\n', "[gpu]: unknown section (did you mean 'gpus'?"),
])
def test_an_unknown_key_names_the_nearest_valid_one(tmp_path, text, expect):
    path = tmp_path / "typo.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert expect in str(err.value)


@pytest.mark.parametrize("var, expect", [
    ("CUZK_GPUZ__BACKEND", "no section [gpuz]"),
    ("CUZK_DAEMON_LISTEN", "did you mean CUZK_DAEMON__LISTEN?"),
    ("CUZK_GPUS__BAKEND", "did you mean CUZK_GPUS__BACKEND?"),
])
def test_a_misspelt_environment_variable_stops_startup(monkeypatch, var, expect):
    monkeypatch.setenv(var, "cpu")
    with pytest.raises(ConfigError) as err:
        load_config(None)
    assert var in str(err.value) and expect in str(err.value)


def test_cuzk_keys_and_process_switches_in_the_environment_pass(monkeypatch, caplog):
    monkeypatch.setenv("CUZK_PIPELINE__SLOT_SIZE", "3")  # a cuzk key without an effect here: a warning
    monkeypatch.setenv("CUZK_PIPELINE__SYNTHESIS_CONCURRENCY", "2")
    monkeypatch.setenv("CUZK_TIMING", "1")  # a process switch, not a setting
    with caplog.at_level(logging.WARNING, logger="cuzk.config"):
        c = load_config(None)
    assert c.pipeline.synthesis_concurrency == 2 and "slot_size (cuzk) has no effect here" in caplog.text
