"""Daemon configuration: one model per TOML section, each key with a default.

Sources, highest priority first: explicit overrides (the CLI's ``-l``), environment variables
``CUZK_<SECTION>__<KEY>`` (e.g. ``CUZK_DAEMON__LISTEN``, ``CUZK_GPUS__BACKEND``), the TOML file,
then the defaults below. An unknown section or key, or a bad value, stops start-up with a
message naming it (:class:`ConfigError`). Keys the reference daemon has deprecated are
accepted with a warning and ignored. ``cuzk-daemon --print-example-config`` (``cuzk_plugin/deploy/cuzk.example.toml``) explains every key.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from cuzk_plugin.errors import CuzkError

__all__ = ["ConfigError", "Config", "load_config", "parse_size", "parse_duration", "DEPRECATED_KEYS", "IGNORED_KEYS",
           "default_state_dir", "check_environment"]

log = logging.getLogger("cuzk.config")
ENV_PREFIX = "CUZK_"

#: Keys of the reference daemon that are accepted with a warning and ignored: (section, key) -> why.
DEPRECATED_KEYS: dict[tuple[str, str], str] = {
    ("synthesis", "partition_workers"): "use [synthesis] threads and [pipeline] max_parallel_synthesis",
    ("pipeline", "partition_workers"): "use [pipeline] max_parallel_synthesis",
    ("srs", "preload"): "keys load on demand; call PreloadSRS (cuzk-bench preload) to warm one",
    ("memory", "pinned_budget"): "one budget now: [memory] total_budget",
    ("memory", "working_memory_budget"): "one budget now: [memory] total_budget",
}

#: Keys of the reference daemon that have no effect here (accepted with a warning: a cuzk config starts as is).
IGNORED_KEYS: dict[tuple[str, str], str] = {
    ("pipeline", "slot_size"): "partitions are pipelined one by one; [pipeline] synthesis_lookahead bounds how many wait",
    ("pipeline", "max_gpu_queue_depth"): "[pipeline] synthesis_lookahead bounds the synthesized partitions waiting for a GPU",
}


_SIZE_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
               "t": 10**12, "tb": 10**12, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
#: Sizes and durations beyond these are typos, not settings.
MAX_SIZE = 1 << 62
MAX_DURATION = 365 * 86400.0
#: The longest Unix socket path, in bytes (sockaddr_un's sun_path holds 108 with the final NUL).
MAX_SOCKET_PATH_BYTES = 107
#: Directories that can never be the param cache (keys are written there).
_SYSTEM_DIRS = frozenset(Path(p) for p in ("/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64",
                                           "/proc", "/root", "/run", "/sbin", "/sys", "/tmp", "/usr", "/var"))


class ConfigError(CuzkError, ValueError):
    """A configuration file, variable or value the daemon cannot start with."""


def parse_size(value: int | str) -> int:
    """Bytes from an int or a string like ``"64GiB"``, ``"512 MB"``, ``"1e9"``; refuses anything else."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size, got {value!r}")
    if isinstance(value, int):
        if not 0 <= value < MAX_SIZE:
            raise ValueError(f"size must be in [0, {MAX_SIZE:,}), got {value}")
        return value
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(value), re.ASCII)
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(f"not a size: {value!r} (examples: 1073741824, \"64GiB\", \"512MB\")")
    number = float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if not number < MAX_SIZE:  # also catches inf ("1e999")
        raise ValueError(f"size {value!r} is beyond {MAX_SIZE:,} bytes (4 EiB)")
    return int(number)


def parse_duration(value: int | float | str) -> float:
    """Seconds from a number (seconds) or a string like ``"300ms"``, ``"30s"``, ``"5m"``, ``"1h"``."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?\s*", str(value), re.ASCII)
        if not m:
            raise ValueError(f"not a duration: {value!r} (examples: 30, \"300ms\", \"30s\", \"5m\")")
        seconds = float(m.group(1)) * _DURATION_UNITS[m.group(2) or "s"]
    if not 0 <= seconds <= MAX_DURATION:  # also catches nan and inf
        raise ValueError(f"duration must be in [0, {MAX_DURATION:.0f}] seconds (a year), got {value!r}")
    return seconds


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    _section: str = ""

    @model_validator(mode="before")
    @classmethod
    def _cuzk_keys(cls, data: Any) -> Any:
        """Accept cuzk's keys: deprecated and ineffective ones with a warning."""
        if not isinstance(data, dict):
            return data
        section = cls.__name__.removesuffix("Config").lower()
        data = dict(data)
        for (sec, key), hint in DEPRECATED_KEYS.items():
            if sec == section and key in data:
                data.pop(key)
                log.warning("config [%s] %s is deprecated and ignored: %s", sec, key, hint)
        for (sec, key), hint in IGNORED_KEYS.items():
            if sec == section and key in data:
                data.pop(key)
                log.warning("config [%s] %s (cuzk) has no effect here: %s", sec, key, hint)
        return data


class DaemonConfig(_Section):
    """[daemon]: where the daemon listens."""

    #: gRPC address: ``unix:///path`` or ``host:port``.
    listen: str = "unix:///run/curio/cuzk.sock"
    #: HTTP ``GET /status`` (JSON) and ``/metrics`` address, ``host:port``; empty disables it.
    status_listen: str = "127.0.0.1:9821"
    #: TLS for a TCP listen address: PEM certificate chain and key files (both or neither).
    tls_cert: str = ""
    tls_key: str = ""
    #: Shared secret clients send as ``authorization: Bearer <token>`` (empty: none). Curio sends
    #: neither TLS nor a token: use these only for clients that can (or behind a proxy that adds them).
    auth_token: str = ""

    @model_validator(mode="after")
    def _tls_pair(self) -> DaemonConfig:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("tls_cert and tls_key go together (both PEM files, or neither)")
        for name in ("tls_cert", "tls_key"):
            value = getattr(self, name)
            if value and not Path(value).is_file():
                raise ValueError(f"{name}: {value!r} is not a readable file")
        return self

    @field_validator("listen")
    @classmethod
    def _check_listen(cls, v: str) -> str:
        if v.startswith("unix://"):
            path = v.removeprefix("unix://")
            if not path:
                raise ValueError("unix:// address needs a path, e.g. unix:///run/curio/cuzk.sock")
            if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
                raise ValueError(f"unix socket path {path!r} is {len(os.fsencode(path))} bytes, more than the "
                                 f"{MAX_SOCKET_PATH_BYTES} a Unix socket address holds; choose a shorter path")
            return v
        _split_host_port(v)
        return v

    @field_validator("status_listen")
    @classmethod
    def _check_status(cls, v: str) -> str:
        if v:
            _split_host_port(v)
        return v


def _split_host_port(v: str) -> tuple[str, int]:
    if "://" in v or "/" in v:
        scheme = v.partition("://")[0] if "://" in v else ""
        raise ValueError(f"address {v!r} is not host:port or unix:///path"
                         + (f" (gRPC is served as is: no {scheme}:// scheme)" if scheme else ""))
    host, sep, port = v.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"address {v!r} is not host:port or unix:///path")
    return host.strip("[]") or "0.0.0.0", int(port)


class SrsConfig(_Section):
    """[srs]: where proving keys live."""

    #: Directory of `.params` files (Filecoin's parameter cache; our synthetic keys are cached here too).
    param_cache: Path = Path("/var/tmp/filecoin-proof-parameters")
    #: Largest key (2^k constraints) the daemon generates for a circuit of its own; bigger ones are refused.
    max_generated_log2: int = Field(default=16, ge=2, le=30)
    #: Make a TEST key (named ``<id>-test-key``, small sizes only) for a Filecoin circuit whose
    #: parameter files are missing; Filecoin's verifier rejects its proofs. false: such a job
    #: fails at once, naming the paths looked at (``param_cache``, then $FIL_PROOFS_PARAMETER_CACHE).
    allow_test_keys: bool = False
    #: Where the daemon keeps what it learnt about files it does not own: the digest verdicts of
    #: Filecoin's parameter files (so a read-only param cache is not hashed again on every start).
    #: "": $XDG_STATE_HOME/cuzk-plugin, else ~/.local/state/cuzk-plugin.
    state_dir: str = ""

    def state_path(self) -> Path:
        """state_dir, or its default when empty (expanded)."""
        return Path(os.path.expanduser(self.state_dir)) if self.state_dir else default_state_dir()

    @field_validator("state_dir")
    @classmethod
    def _check_state(cls, v: str) -> str:
        return str(cls._check_cache(Path(v))) if v else v

    @field_validator("param_cache")
    @classmethod
    def _check_cache(cls, v: Path) -> Path:
        resolved = Path(os.path.expanduser(v)).resolve()
        if resolved in _SYSTEM_DIRS:
            raise ValueError(f"{str(v)!r} is a system directory; give a directory of its own, "
                             "e.g. /var/tmp/filecoin-proof-parameters or ~/.local/state/cuzk-plugin")
        if resolved.exists() and not resolved.is_dir():
            raise ValueError(f"{str(v)!r} exists and is not a directory")
        return v


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/cuzk-plugin``, else ``~/.local/state/cuzk-plugin`` (writable by the
    daemon's user wherever the param cache is read-only)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "cuzk-plugin"


class MemoryConfig(_Section):
    """[memory]: one budget for the host memory of every loaded proving key."""

    #: Host bytes all loaded keys may use together ("auto": 90% of physical memory).
    total_budget: int | Literal["auto"] = "auto"
    #: Kept free below total_budget.
    safety_margin: int = 1 << 30
    #: Seconds a key must sit unused before idle eviction frees it.
    eviction_min_idle: float = 300.0

    @field_validator("total_budget", mode="before")
    @classmethod
    def _budget(cls, v: Any) -> Any:
        return v if v == "auto" else parse_size(v)

    @field_validator("safety_margin", mode="before")
    @classmethod
    def _margin(cls, v: Any) -> int:
        return parse_size(v)

    @field_validator("eviction_min_idle", mode="before")
    @classmethod
    def _idle(cls, v: Any) -> float:
        return parse_duration(v)

    @model_validator(mode="after")
    def _margin_below_total(self) -> MemoryConfig:
        total = self.resolved_total()
        if self.safety_margin >= total:
            what = "total_budget" if self.total_budget != "auto" else "total_budget = \"auto\" (90% of physical memory)"
            raise ValueError(f"safety_margin ({self.safety_margin:,} bytes) must be below {what} ({total:,} bytes)")
        return self

    def resolved_total(self) -> int:
        """total_budget in bytes ("auto": 90% of physical memory)."""
        if self.total_budget == "auto":
            return int(0.9 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        return int(self.total_budget)

    def budget_bytes(self) -> int:
        """The usable budget: total_budget (resolved) minus safety_margin, at least 0."""
        return max(0, self.resolved_total() - self.safety_margin)


class GpusConfig(_Section):
    """[gpus]: which devices prove, and how."""

    #: Device ordinals to use; empty: every device the backend reports.
    devices: list[Annotated[int, Field(ge=0, le=1023)]] = Field(default_factory=list, max_length=1024)
    #: Host threads for backend calls (0: 2 per worker slot).
    gpu_threads: int = Field(default=0, ge=0, le=4096)
    #: Concurrent partitions per device (two overlap one's upload with the other's compute).
    gpu_workers_per_device: int = Field(default=2, ge=1, le=64)
    #: The most device memory the daemon may use on each device (0: what is free at start);
    #: keys that do not fit beside their partitions stream from host memory (engine/residency.py).
    device_memory_limit: int = 0
    #: auto | cuda | opencl | cpu (auto: CUDA, else OpenCL, else cpu; the choice is logged).
    backend: str = "auto"
    #: Backends to move a partition to after its faults exhaust the retries on every device.
    fallback_backends: list[str] = Field(default_factory=list)
    #: Attempts per device for a transient backend fault (tenacity, exponential backoff).
    retry_attempts: int = Field(default=3, ge=1, le=20)
    #: When backend = "auto" found no GPU and proves on the CPU (PoCL or the cpu backend),
    #: Filecoin jobs of sectors larger than this are refused at once instead of taking minutes
    #: to hours. Set it to "64GiB" to prove every size on the CPU anyway.
    cpu_fallback_max_sector_size: int = 512 << 20

    @field_validator("cpu_fallback_max_sector_size", mode="before")
    @classmethod
    def _fallback_size(cls, v: Any) -> int:
        return parse_size(v)

    @field_validator("device_memory_limit", mode="before")
    @classmethod
    def _device_limit(cls, v: Any) -> int:
        return parse_size(v)


class SchedulerConfig(_Section):
    """[scheduler]: how GPU work is ordered (priority first, always)."""

    #: Partitions of one circuit a GPU worker takes back to back under one key acquisition.
    max_batch_size: int = Field(default=4, ge=1, le=1024)
    #: Reserved (accepted for the reference config): workers never idle waiting for a batch.
    max_batch_wait_ms: int = Field(default=0, ge=0, le=3_600_000)
    #: Among equal priorities, prefer partitions of the circuit a worker just proved (fewer key swaps).
    sort_by_type: bool = True
    #: Finished jobs kept for AwaitProof (oldest dropped first).
    keep_finished_jobs: int = Field(default=10_000, ge=1, le=1_000_000)
    #: Jobs queued or running at once; one more is refused (RESOURCE_EXHAUSTED) until one ends.
    max_pending: int = Field(default=64, ge=1, le=100_000)
    #: Room beyond max_pending that only HIGH (WindowPoSt) and CRITICAL jobs may take, so a queue
    #: full of PoRep and SnapDeals never refuses a proof with a deadline.
    high_priority_reserve: int = Field(default=32, ge=0, le=100_000)
    #: Room beyond that again that only CRITICAL (WinningPoSt) jobs may take.
    critical_reserve: int = Field(default=16, ge=0, le=100_000)


class SynthesisConfig(_Section):
    """[synthesis]: the worker processes that turn witnesses into partitions."""

    #: Worker processes (0: one per CPU core).
    threads: int = Field(default=0, ge=0, le=1024)
    #: Processes that compute one large PoRep or WindowPoSt partition's witness together (a
    #: 32 GiB PoRep partition: 4.3 s in one, 0.76 s in sixteen on the H200 host). 0: the CPU
    #: cores divided among the partitions synthesized at once.
    witness_processes: int = Field(default=0, ge=0, le=1024)


class PipelineConfig(_Section):
    """[pipeline]: overlap of synthesis with GPU work."""

    #: Synthesize ahead of the GPU; false: a partition is synthesized only for an idle GPU slot.
    enabled: bool = True
    #: Synthesized partitions allowed to wait for the GPU (beyond one per GPU slot).
    synthesis_lookahead: int = Field(default=2, ge=0, le=1024)
    #: Partitions synthesized at once, of all jobs together (0: [synthesis] threads).
    max_parallel_synthesis: int = Field(default=0, ge=0, le=1024)
    #: Proofs (jobs) whose partitions are being synthesized at once, as cuzk counts it (0: no
    #: limit). A WinningPoSt (CRITICAL) is never held back by it.
    synthesis_concurrency: int = Field(default=0, ge=0, le=100_000)


class LoggingConfig(_Section):
    """[logging]: what the daemon logs (``--log-level`` overrides level)."""

    #: trace, debug, info, warn, warning, error (trace logs as debug).
    level: Literal["trace", "debug", "info", "warn", "warning", "error"] = "info"
    #: text (one line a record) or json (one JSON object a line).
    format: Literal["text", "json"] = "text"

    @field_validator("level", "format", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v


class Config(BaseSettings):
    """The whole daemon configuration."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid")

    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    srs: SrsConfig = Field(default_factory=SrsConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    gpus: GpusConfig = Field(default_factory=GpusConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    synthesis: SynthesisConfig = Field(default_factory=SynthesisConfig)
    pipeline: PipelineConfig = Field(default_factory=PipelineConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, TomlConfigSettingsSource(settings_cls)

    def synthesis_workers(self) -> int:
        return self.synthesis.threads or os.cpu_count() or 1

    def parallel_synthesis(self) -> int:
        return self.pipeline.max_parallel_synthesis or self.synthesis_workers()


def _deep_merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_config(path: str | os.PathLike | None = None, overrides: dict[str, dict[str, Any]] | None = None,
                environ: dict[str, str] | None = None) -> Config:
    """Read ``path`` (TOML, optional), the environment and ``overrides`` ({section: {key: value}}).

    Raises :class:`ConfigError` naming the section and key of any unknown key or bad value, and
    any ``CUZK_*`` variable that looks like a setting but names no section and key."""
    if path is not None and not Path(path).is_file():
        raise ConfigError(f"config file {path} does not exist")
    check_environment(os.environ if environ is None else environ)
    class FileConfig(Config):
        model_config = SettingsConfigDict(**{**Config.model_config, "toml_file": None if path is None else Path(path)})

    try:
        return FileConfig(**_deep_merge({}, overrides or {}))
    except ValidationError as exc:
        raise ConfigError(_explain(exc, path)) from None
    except (ValueError, OSError) as exc:  # TOML syntax errors, unreadable file
        raise ConfigError(f"config {path}: {exc}") from None


def section_keys() -> dict[str, list[str]]:
    """Every key a section accepts: ours, then cuzk's deprecated and ineffective ones."""
    out: dict[str, list[str]] = {}
    for name, info in Config.model_fields.items():
        section = info.annotation
        keys = list(section.model_fields) if isinstance(section, type) and issubclass(section, BaseModel) else []
        out[name] = keys + [k for (sec, k) in (*DEPRECATED_KEYS, *IGNORED_KEYS) if sec == name]
    return out


def _nearest(word: str, choices: list[str]) -> str | None:
    close = difflib.get_close_matches(word.lower(), choices, n=1, cutoff=0.6)
    return close[0] if close else None


def check_environment(environ: dict[str, str] | os._Environ) -> None:
    """Refuse ``CUZK_<SECTION>__<KEY>`` variables that name no section or key, and
    ``CUZK_<SECTION>_<KEY>`` (one underscore) that was meant as one: ignoring them would run the
    daemon on settings the operator did not choose. Other ``CUZK_*`` variables (CUZK_TIMING,
    CUZK_OPENCL_DEVICE, ...) are process switches, not settings, and pass."""
    keys = section_keys()
    env_names = [f"{ENV_PREFIX}{sec.upper()}__{k.upper()}" for sec, ks in keys.items() for k in ks]
    problems = []
    for var in sorted(environ):
        if not var.upper().startswith(ENV_PREFIX):
            continue
        rest = var[len(ENV_PREFIX):].lower()
        if "__" in rest:
            section, _, key = rest.partition("__")
            if section not in keys:
                near = _nearest(section, list(keys))
                hint = f"; did you mean {ENV_PREFIX}{near.upper()}__{key.upper()}?" if near else ""
                problems.append(f"{var}: no section [{section}] (sections: {', '.join(keys)}){hint}")
            elif key.split("__")[0] not in keys[section]:
                near = _nearest(key, keys[section])
                hint = f"; did you mean {ENV_PREFIX}{section.upper()}__{near.upper()}?" if near else ""
                problems.append(f"{var}: [{section}] has no key {key!r}{hint}")
        elif any(rest.startswith(f"{sec}_") for sec in keys):
            close = difflib.get_close_matches(var.upper(), env_names, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}?" if close else "section and key are separated by two underscores"
            problems.append(f"{var}: not a setting ({hint})")
    if problems:
        raise ConfigError("environment: " + "; ".join(problems))


def _explain(exc: ValidationError, path: Any) -> str:
    lines = []
    keys = section_keys()
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        where = f"[{loc[0]}] {'.'.join(loc[1:])}" if len(loc) > 1 else f"[{loc[0]}]" if loc else "(top level)"
        if err["type"] == "extra_forbidden":
            choices = keys.get(loc[0], []) if len(loc) > 1 else list(keys)
            near = _nearest(loc[-1], choices) if loc else None
            what = "unknown key" if len(loc) > 1 else "unknown section"
            hint = f"did you mean {near!r}? " if near else ""
            lines.append(f"{where}: {what} ({hint}cuzk-daemon --print-example-config lists the valid ones)")
        else:
            msg = err["msg"].removeprefix("Value error, ")
            got = err.get("input")
            # A whole section as input says nothing new (and may hold the auth token): name the keys in msg.
            lines.append(f"{where}: {msg}" if isinstance(got, dict) else f"{where}: {msg} (got {got!r})")
    src = f"config {path}" if path else "config"
    return f"{src}: " + "; ".join(lines)
