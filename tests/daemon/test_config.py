"""Config: defaults, the example file, environment overrides, refusals that name the key,
deprecated keys accepted with a warning."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cuzk_plugin.config import Config, ConfigError, load_config, parse_duration, parse_size

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuzk.example.toml"


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cuzk.toml"
    path.write_text(text)
    return path


def test_defaults():
    c = load_config()
    assert c.daemon.listen == "unix:///run/curio/cuzk.sock"
    assert c.gpus.backend == "auto" and c.gpus.gpu_workers_per_device == 2
    assert c.pipeline.enabled and c.memory.eviction_min_idle == 300.0
    assert c.memory.budget_bytes() > 0


def test_example_file_lists_every_key_with_its_default():
    text = EXAMPLE.read_text()
    config = load_config(EXAMPLE)
    assert config.model_dump() == Config().model_dump()
    for section, model in Config.model_fields.items():
        assert f"[{section}]" in text
        for key in model.annotation.model_fields:
            assert f"\n{key} = " in text, f"[{section}] {key} missing from the example"


def test_file_env_and_override_precedence(tmp_path, monkeypatch):
    path = _toml(tmp_path, '[daemon]\nlisten = "127.0.0.1:9820"\n[gpus]\nbackend = "cpu"\ngpu_workers_per_device = 3\n'
                           '[memory]\ntotal_budget = "8GiB"\neviction_min_idle = "90s"\n')
    monkeypatch.setenv("CUZK_GPUS__GPU_WORKERS_PER_DEVICE", "5")
    c = load_config(path, {"daemon": {"listen": "unix:///tmp/x.sock"}})
    assert c.daemon.listen == "unix:///tmp/x.sock"  # CLI override beats all
    assert c.gpus.gpu_workers_per_device == 5  # environment beats the file
    assert c.gpus.backend == "cpu" and c.memory.total_budget == 8 << 30 and c.memory.eviction_min_idle == 90.0


@pytest.mark.parametrize("text, expect", [
    ("[daemon]\nlisten_addr = 'x'\n", "[daemon] listen_addr: unknown key"),
    ("[gpu]\ndevices = []\n", "[gpu]: unknown section"),
    ("[memory]\ntotal_budget = 'lots'\n", "[memory] total_budget"),
    ("[memory]\neviction_min_idle = 'soon'\n", "[memory] eviction_min_idle"),
    ("[gpus]\ngpu_workers_per_device = 0\n", "[gpus] gpu_workers_per_device"),
    ("[daemon]\nlisten = 'nowhere'\n", "[daemon] listen"),
    # issue 28 item 13e: these passed the check and failed after start-up with a wrong reason
    ("[daemon]\nlisten = 'http://0.0.0.0:9820'\n", "no http:// scheme"),
    ("[daemon]\nstatus_listen = 'http://127.0.0.1:9821'\n", "[daemon] status_listen"),
    (f"[daemon]\nlisten = 'unix:///run/{'s' * 100}.sock'\n", "is 110 bytes, more than the 107 a Unix socket"),
    ("[pipeline]\nenabled = 'maybe'\n", "[pipeline] enabled"),
    ("[daemon\nlisten = 1\n", "config"),
])
def test_bad_config_names_the_key(tmp_path, text, expect):
    with pytest.raises(ConfigError) as err:
        load_config(_toml(tmp_path, text))
    assert expect in str(err.value)


def test_bad_environment_value_names_the_key(monkeypatch):
    monkeypatch.setenv("CUZK_SCHEDULER__MAX_BATCH_SIZE", "many")
    with pytest.raises(ConfigError, match=r"\[scheduler\] max_batch_size"):
        load_config()


def test_deprecated_keys_warn_and_are_ignored(tmp_path, caplog):
    path = _toml(tmp_path, "[memory]\npinned_budget = '10GiB'\nworking_memory_budget = '1GiB'\n"
                           "[srs]\npreload = ['porep-32g']\n[synthesis]\npartition_workers = 4\n")
    with caplog.at_level(logging.WARNING, logger="cuzk.config"):
        c = load_config(path)
    text = caplog.text
    for key in ("pinned_budget", "working_memory_budget", "preload", "partition_workers"):
        assert f"{key} is deprecated and ignored" in text
    assert c.model_dump() == Config().model_dump()


def test_sizes_and_durations():
    assert parse_size("64GiB") == 64 << 30 and parse_size("512MB") == 512 * 10**6 and parse_size(7) == 7
    assert parse_duration("300ms") == 0.3 and parse_duration("5m") == 300 and parse_duration(2) == 2.0
    for bad in ("-1", "1 parsec", "", True):
        with pytest.raises(ValueError):
            parse_size(bad)
