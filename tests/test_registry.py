"""Backend registry: names, probing, `auto` selection and its log line."""

import logging

import pytest

from cuzk_plugin.backends import registry
from cuzk_plugin.backends.protocol import Backend
from cuzk_plugin.errors import BackendUnavailable


def test_cpu_is_always_available():
    assert "cpu" in registry.available_backends()
    assert isinstance(registry.get_backend("cpu"), Backend)


def test_unknown_backend_is_named():
    with pytest.raises(BackendUnavailable, match="unknown backend 'quantum'"):
        registry.get_backend("quantum")


def test_auto_logs_choice_and_reasons(monkeypatch, caplog):
    monkeypatch.setattr(registry, "probe", lambda name: None if name == "cpu" else f"{name} is switched off")
    with caplog.at_level(logging.INFO, logger="cuzk_plugin.backends.registry"):
        backend = registry.get_backend("auto")
    assert backend.name == "cpu"
    (rec,) = [r for r in caplog.records if "auto" in r.getMessage()]
    assert rec.levelno == logging.WARNING  # not CUDA: said loudly
    assert "NOT CUDA, proving on 'cpu'" in rec.getMessage() and "cuda unavailable: cuda is switched off" in rec.getMessage()


def test_unavailable_backend_says_why(monkeypatch):
    monkeypatch.setattr(registry, "probe", lambda name: "no device here")
    with pytest.raises(BackendUnavailable, match="backend 'opencl' cannot run here: no device here"):
        registry.get_backend("opencl")
    with pytest.raises(BackendUnavailable, match="no backend can run here"):
        registry.get_backend("auto")
