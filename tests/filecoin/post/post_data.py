"""PoSt test data shared by the PoSt test modules: two sealed 2 KiB sectors (made once)."""

from __future__ import annotations

from functools import lru_cache

from cuzk_plugin.filecoin.fixtures.post_seal import ProvenSector
from cuzk_plugin.filecoin.fixtures.seal import seal


@lru_cache(maxsize=1)
def sealed_post_sectors() -> tuple[ProvenSector, ...]:
    """Sectors 21 and 34 of miner 1000, sealed for real (2 KiB, V1_1)."""
    return tuple(ProvenSector(n, seal("StackedDrg2KiBV1_1", miner_id=1000, sector_id=n, data_seed=n)) for n in (34, 21))
