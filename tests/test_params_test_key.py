"""`cuzk params write-test-key`: a key read back from a device (here: from a ProvingKey standing
in for it) is written byte for byte as ProvingKey.save writes it, a chunk at a time, atomically;
on a GPU, a SnapDeals test key written once loads as a `.params` file and proves."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.cli.params_test_key import write_params
from cuzk_plugin.formats.params import VECTOR_FIELDS, ProvingKey, VerifyingKey
from cuzk_plugin.groth16.setup import setup
from tests.cuda_support import built_library_or_skip


class KeyAsDevice:
    """A ProvingKey answering as CudaSrs does: counts() and read() as canonical limbs."""

    def __init__(self, key: ProvingKey, fail_after: int | None = None):
        self.key = key
        self.reads = 0
        self.fail_after = fail_after

    def counts(self) -> dict[str, int]:
        return {name: int(getattr(self.key, name).shape[0]) for name, _ in VECTOR_FIELDS}

    def read(self, name: str, start: int, stop: int) -> np.ndarray:
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise OSError("device went away")
        return self.key.vector_limbs(name, start, stop)


@pytest.fixture(scope="module")
def key() -> ProvingKey:
    shape, _, _ = filecoin_like(300, seed=0).finish()
    return setup(shape)


def test_written_in_chunks_equals_the_saved_key(key, tmp_path):
    key.save(tmp_path / "saved.params")
    lines: list[str] = []
    size = write_params(tmp_path / "written.params", key.vk, KeyAsDevice(key), chunk_points=7, progress=lines.append)
    assert (tmp_path / "written.params").read_bytes() == (tmp_path / "saved.params").read_bytes()
    assert size == (tmp_path / "saved.params").stat().st_size
    assert lines and lines[-1].startswith("written.params: 100% of")
    loaded = ProvingKey.open(tmp_path / "written.params")  # every point checked
    assert loaded.counts() == key.counts()


def test_a_failed_write_leaves_no_file(key, tmp_path):
    with pytest.raises(OSError, match="went away"):
        write_params(tmp_path / "k.params", key.vk, KeyAsDevice(key, fail_after=3), chunk_points=5)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.gpu
def test_a_gpu_made_test_key_written_once_loads_and_proves(tmp_path):
    built_library_or_skip()
    from cuzk_plugin.backends.cuda import CudaBackend

    if CudaBackend.probe() is not None:
        pytest.skip(f"no usable CUDA GPU: {CudaBackend.probe()}")
    from cuzk_plugin.cli.params_test_key import write_test_key

    path = write_test_key("snap-2k", tmp_path, tmp_path)
    assert path.name == "snap-2k-test-key.params"
    key = ProvingKey.open(path)
    assert VerifyingKey.load(path.with_suffix(".vk")) == key.vk
    assert key.domain_size > 1 and key.counts()["l"] > 0
