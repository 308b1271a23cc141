"""Conformance suite set-up: which backends run, the session seed, shared point pools.

``pytest tests/conformance`` runs every test once per backend that can run here
(``registry.available_backends()``); ``--backend NAME`` (or ``CUZK_CONFORMANCE_BACKEND``)
runs only that one, and fails rather than skips when it cannot run.

Randomness: one session seed (``CUZK_TEST_SEED`` fixes it, else fresh) seeds the point pools
and, mixed with each test's id, every test's own generator; a failure prints the
``CUZK_TEST_SEED=...`` that reproduces it.
"""

from __future__ import annotations

import os
import secrets
import zlib

import numpy as np
import pytest

from cuzk_plugin.backends.registry import available_backends, get_backend, probe
from tests.conformance.pools import PointPool

_SESSION_SEED = int(os.environ.get("CUZK_TEST_SEED", secrets.randbits(32)))
_BACKENDS: dict[str, object] = {}


def selected_backends(config) -> list[str]:
    name = config.getoption("--backend", default=None) or os.environ.get("CUZK_CONFORMANCE_BACKEND")
    return [name] if name else available_backends()


def pytest_generate_tests(metafunc):
    if "backend_name" in metafunc.fixturenames:
        names = selected_backends(metafunc.config)
        metafunc.parametrize("backend_name", names, ids=names, scope="session")


def pytest_report_header(config):
    return f"conformance: backends {selected_backends(config)}, CUZK_TEST_SEED={_SESSION_SEED}"


@pytest.fixture(scope="session")
def backend(backend_name):
    """One instance per backend for the whole session (kernels build once)."""
    if backend_name not in _BACKENDS:
        why = probe(backend_name)
        if why is not None:
            pytest.fail(f"backend '{backend_name}' was asked for but cannot run here: {why}")
        _BACKENDS[backend_name] = get_backend(backend_name)
    return _BACKENDS[backend_name]


@pytest.fixture
def seed(request) -> int:
    """This test's seed: the session seed mixed with the test id (so tests differ)."""
    request.node.user_properties.append(("seed", _SESSION_SEED))
    return _SESSION_SEED ^ zlib.crc32(request.node.nodeid.encode())


@pytest.fixture
def rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def session_seed() -> int:
    """The session seed itself, for data that several tests share (made once per module or
    session); a test using such data also asks for ``seed``, so a failure prints the seed."""
    return _SESSION_SEED


@pytest.fixture(scope="session")
def g1_pool() -> PointPool:
    return PointPool(group=1, seed=_SESSION_SEED)


@pytest.fixture(scope="session")
def g2_pool() -> PointPool:
    return PointPool(group=2, seed=_SESSION_SEED + 1)
