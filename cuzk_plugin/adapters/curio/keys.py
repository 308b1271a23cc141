"""Proving keys of Filecoin circuits, for every Curio provider (PoRep, PoSt, SnapDeals).

A Filecoin circuit proves only with Filecoin's parameter files, found by Filecoin's names in
``[srs] param_cache`` and ``$FIL_PROOFS_PARAMETER_CACHE`` (:mod:`cuzk_plugin.filecoin.param_files`).
A missing file is refused when the request is planned, naming every path looked at, before
anything is synthesized. Only with ``[srs] allow_test_keys = true`` does the daemon make its own
key instead, and such a key is a different circuit id (``porep-2k-test-key``): its file name,
the logs, the status and the job's circuit id all say so, and its proofs never pass Filecoin's
verifier. A small circuit's test key is a `.params` file made once by a single-party setup of the
blank circuit (``make_test_key``); a large one with a pre-compiled circuit (``test_key_circuit``)
is made by each lane in its own memory from that circuit (:mod:`cuzk_plugin.engine.device_key`).

A provider calls two functions::

    def plan(self, request, param_cache):
        ...
        circuit_id = plan_filecoin_key("wpost-32g", param_cache, allow_test_keys=self.allow_test_keys,
                                       make_test_key=None)       # CircuitUnavailable when missing
        return JobPlan(circuit_id, tasks)

    def key_source(self, circuit_id, param_cache):
        return filecoin_key_source(circuit_id, param_cache, kinds=("wpost",),
                                   allow_test_keys=self.allow_test_keys, make_test_key=None)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cuzk_plugin.engine.circuits import KeySource
from cuzk_plugin.engine.errors import CircuitUnavailable
from cuzk_plugin.errors import ParamsError
from cuzk_plugin.filecoin.param_files import (
    FIL_CACHE_ENV,
    FilecoinCircuit,
    expected_paths,
    filecoin_cache_dirs,
    filecoin_circuit,
    find_filecoin_params,
    is_test_key_id,
    test_key_id,
    test_key_path,
)

__all__ = ["pce_enabled", "plan_filecoin_key", "filecoin_key_source", "MakeTestKey", "TestKeyCircuit", "CircuitFile",
           "BlankCircuitKey"]

log = logging.getLogger(__name__)

#: (Filecoin circuit id, path to write) -> a picklable zero-argument callable writing a test key
#: there, or None when this provider cannot make a key of that size.
MakeTestKey = Callable[[str, Path], object | None]
#: (Filecoin circuit id, param cache) -> a picklable zero-argument callable returning the path of
#: the circuit's pre-compiled file, from which each lane makes a test key in its own memory
#: (:mod:`cuzk_plugin.engine.device_key`); None where the provider has no such circuit.
TestKeyCircuit = Callable[[str, Path], object | None]


class BlankCircuitKey:
    """A TEST key ([srs] allow_test_keys) made by a single-party setup of a circuit's blank shape,
    synthesized through the circuit's own code; Filecoin's verifier rejects its proofs.

    A subclass (a frozen dataclass, so it pickles into the generating process) says how to
    synthesize its blank circuit into a constraint system and where the key goes (``path``)."""

    path: Path

    def synthesize_blank(self, cs) -> None:
        raise NotImplementedError

    @property
    def log2_constraints(self) -> int:
        """The key's domain (constraints + input rows, from the shape pass), checked by the engine
        against [srs] max_generated_log2 before anything is generated."""
        from cuzk_plugin.filecoin.gadgets.shape import ShapeConstraintSystem

        cs = ShapeConstraintSystem()
        self.synthesize_blank(cs)
        return (cs.num_constraints + cs.num_inputs - 1).bit_length()

    def __call__(self) -> None:
        from cuzk_plugin.circuit.fast_cs import FastConstraintSystem
        from cuzk_plugin.groth16.setup import setup

        cs = FastConstraintSystem()
        self.synthesize_blank(cs)
        r1cs, _, _ = cs.finish()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        setup(r1cs).save(self.path)  # atomic: tmp file + rename


@dataclass(frozen=True)
class CircuitFile:
    """A circuit's pre-compiled file, recorded on first use: what each lane makes a test key from
    (picklable: ``ensure`` is a module-level ``(circuit_id, param_cache) -> path`` function)."""

    ensure: Callable[[str, str], str]
    circuit_id: str
    param_cache: str

    def __call__(self) -> str:
        return self.ensure(self.circuit_id, self.param_cache)


def _missing(circuit: FilecoinCircuit, circuit_id: str, param_cache: Path | None, allow_test_keys: bool) -> str:
    paths = ", ".join(str(p) for p in expected_paths(filecoin_cache_dirs(param_cache), circuit_id))
    hint = ("no test key can be made for this size" if allow_test_keys else
            "for tests only, [srs] allow_test_keys = true makes a test key instead")
    return (f"circuit {circuit_id}: Filecoin's parameter file is missing: looked for {paths} "
            f"([srs] param_cache, then ${FIL_CACHE_ENV}); fetch the {circuit.size_name} parameters "
            f"(e.g. curio fetch-params {circuit.size_name}); {hint}")


def plan_filecoin_key(circuit_id: str, param_cache: Path | None, *, allow_test_keys: bool,
                      make_test_key: MakeTestKey | None, test_key_circuit: TestKeyCircuit | None = None) -> str:
    """The circuit id a job proves with: ``circuit_id`` when Filecoin's files are there, their
    sizes add up and no earlier load found their digest wrong (cheap checks, verdicts cached),
    else its test-key id when test keys are allowed and can be made. Raises
    :class:`CircuitUnavailable` naming the paths otherwise."""
    circuit = filecoin_circuit(circuit_id)
    if circuit is None:
        raise CircuitUnavailable(f"circuit {circuit_id}: not a Filecoin circuit id")
    files = find_filecoin_params(filecoin_cache_dirs(param_cache), circuit_id)
    if files is not None:
        try:
            files.check_layout()
            files.check_known_digests()
        except (ParamsError, OSError) as exc:
            raise CircuitUnavailable(f"circuit {circuit_id}: {exc}") from None
        return circuit_id
    test_id = test_key_id(circuit_id)
    if allow_test_keys and param_cache is not None and (make_test_key is not None or test_key_circuit is not None):
        path = test_key_path(param_cache, circuit_id)
        if (path.is_file() or (make_test_key is not None and make_test_key(circuit_id, path) is not None)
                or (test_key_circuit is not None and test_key_circuit(circuit_id, param_cache) is not None)):
            log.warning("circuit %s: Filecoin's parameter file is missing; proving with the TEST KEY %s "
                        "([srs] allow_test_keys = true): Filecoin's verifier rejects these proofs", circuit_id, test_id)
            return test_id
    raise CircuitUnavailable(_missing(circuit, circuit_id, param_cache, allow_test_keys))


def filecoin_key_source(circuit_id: str, param_cache: Path | None, *, kinds: tuple[str, ...], allow_test_keys: bool,
                        make_test_key: MakeTestKey | None,
                        test_key_circuit: TestKeyCircuit | None = None) -> KeySource | None:
    """The key of ``circuit_id`` when it is a Filecoin circuit of ``kinds`` (``porep``, ``wpost``,
    ``winning``, ``snap``) or a test key of one; None for any other id. Raises
    :class:`CircuitUnavailable` for such an id whose file is missing (naming the paths) or for a
    test key while test keys are off."""
    base = is_test_key_id(circuit_id)
    circuit = filecoin_circuit(base or circuit_id)
    if circuit is None or circuit.kind not in kinds:
        return None
    if base is not None:
        if not allow_test_keys:
            raise CircuitUnavailable(f"circuit {circuit_id} is a test key, and test keys are off "
                                     "([srs] allow_test_keys = false)")
        if param_cache is None:
            return None
        path = test_key_path(param_cache, base)
        generate = make_test_key(base, path) if make_test_key is not None else None
        if generate is None and not path.is_file() and test_key_circuit is not None:
            device_key = test_key_circuit(base, param_cache)
            if device_key is not None:
                return KeySource(circuit_id, path, test_key=True, device_key=device_key)
        return KeySource(circuit_id, path, generate, test_key=True)
    files = find_filecoin_params(filecoin_cache_dirs(param_cache), circuit_id)
    if files is None:
        raise CircuitUnavailable(_missing(circuit, circuit_id, param_cache, allow_test_keys))
    return KeySource(circuit_id, files.params, filecoin=files)


def pce_enabled() -> bool:
    """False when ``CUZK_DISABLE_PCE=1`` asks for the reference synthesis."""
    return os.environ.get("CUZK_DISABLE_PCE", "").strip() not in ("1", "true", "yes")
