"""Shared fixtures: a seeded RNG whose seed is printed on failure, the npm oracles, and the
recorded porep-2k circuit (used by the Filecoin and the conformance tests); the sealed 2 KiB
sector's fixtures come from :mod:`tests.sealed_sector` (Filecoin and adapter tests share them)."""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest_plugins = ["tests.sealed_sector"]


def pytest_addoption(parser):
    # Here, at the tests' root, so `pytest tests --backend X` works as well as `pytest tests/conformance --backend X`.
    parser.addoption("--backend", action="store", default=None,
                     help="run the conformance suite for this backend only (cpu, opencl, cuda, ...)")


@pytest.fixture
def seed(request) -> int:
    """A fresh seed per test (CUZK_TEST_SEED fixes it); shown in the report when a test fails."""
    value = int(os.environ.get("CUZK_TEST_SEED", secrets.randbits(32)))
    request.node.user_properties.append(("seed", value))
    return value


@pytest.fixture
def rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for key, value in item.user_properties:
            if key == "seed":
                report.sections.append(("seed", f"reproduce with CUZK_TEST_SEED={value}"))


def oracle_bin(name: str) -> Path | None:
    """Path of an npm oracle (snarkjs, circom2) installed by ./dev, or on PATH."""
    base = Path(os.environ.get("CUZK_ORACLES", ROOT / "tools/oracles/node_modules"))
    candidate = base / ".bin" / name
    if candidate.exists():
        return candidate
    found = shutil.which(name)
    return Path(found) if found else None


def _require_oracle(name: str) -> Path:
    path = oracle_bin(name)
    if path is None:
        pytest.fail(f"{name} not installed: run ./dev test (it installs tools/oracles)")
    return path


@pytest.fixture(scope="session")
def snarkjs() -> Path:
    return _require_oracle("snarkjs")


@pytest.fixture(scope="session")
def circom2() -> Path:
    return _require_oracle("circom2")


@pytest.fixture(scope="session")
def porep_2k_pce_cache(tmp_path_factory) -> Path:
    """A param cache holding the recorded porep-2k circuit (~5-8 s to record), shared read-only:
    every test that only reads the circuit uses this one recording."""
    from cuzk_plugin.adapters.curio.porep.job import ensure_porep_pce

    cache = tmp_path_factory.mktemp("porep-2k-pce")
    ensure_porep_pce("porep-2k", cache)
    return cache
