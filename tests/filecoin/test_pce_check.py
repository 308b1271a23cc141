"""`cuzk pce check`: every partition of a sealed 2 KiB C1 satisfies every row of the recorded
circuit, and a changed witness value is found, naming the first failing row."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_plugin.adapters.curio.porep.job import ensure_porep_pce, porep_partitions
from cuzk_plugin.backends.cpu.backend import CpuBackend
from cuzk_plugin.bls12_381.fields import ints_to_limbs
from cuzk_plugin.cli.main import main
from cuzk_plugin.cli.pce_check import _violations, check_partitions
from cuzk_plugin.formats.pce import load_pce


@pytest.mark.slow
def test_a_sealed_c1_satisfies_its_circuit_and_a_changed_value_does_not(c1_bytes, porep_2k_pce_cache, tmp_path, capsys):
    cache = porep_2k_pce_cache
    c1 = tmp_path / "c1.json"
    c1.write_bytes(c1_bytes)
    assert main(["pce", "check", "--c1", str(c1), "--param-cache", str(cache), "--partitions", "0"]) == 0
    # 2,687,921 constraints + 40 input rows
    assert "partition 0: 2,687,961 rows, every row holds" in capsys.readouterr().out

    job = porep_partitions(c1_bytes)
    inputs, aux = job.assignment(0)
    z = np.concatenate([inputs, aux])
    z[len(inputs) + 1000] = ints_to_limbs([3])[0]  # a bit that is now 3
    backend = CpuBackend()
    count, first = _violations(backend, backend.load_circuit(load_pce(ensure_porep_pce(job.circuit_id, cache))), z)
    assert count >= 1 and first is not None
    with pytest.raises(ValueError, match="not a partition of this C1"):
        list(check_partitions(c1_bytes, cache, "cpu", [3]))
