"""Each lane of a fresh build measures its link (cuda): run on a GPU machine with the library built,
`CUZK_CUDA_LIBRARY=... python bench/residency/lane_link.py`; prints each lane's budget and GB/s."""

import logging
from cuzk_plugin.config import load_config
from cuzk_plugin.engine.lanes import build_lanes
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
for limit in (0, 24 << 30):
    lanes, summary = build_lanes(load_config(None, {"gpus": {"backend": "cuda", "device_memory_limit": limit}}))
    print(summary, [(l.name, l.device_budget, round(l.link_bytes_per_s / 1e9, 2)) for l in lanes])
