"""The response's timeline breaks each partition's GPU call into the backend's own stages
(upload, a/b/c, H, MSMs) and the proof's assembly, inside the call's gpu_finish window."""

from __future__ import annotations

import pytest
from daemon_helpers import StageTimedBackend, synthetic_request, verify_synthetic

from cuzk_plugin.server.proto import cuzk_pb2 as pb


async def test_device_stages_are_in_the_timeline(make_daemon):
    d = await make_daemon(backends=[StageTimedBackend()])
    res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request("stages", log2=4, partitions=2, seed=2)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert verify_synthetic(d.param_cache, 4, 2, res.proof)
    for p in (0, 1):
        events = {e.stage: e for e in res.timeline if e.partition == p}
        finish = events["gpu_finish"]
        order = ["upload_wait", "upload", "abc_alloc", "abc", "h", "msm_g1", "msm_g2_wait", "release", "assemble"]
        assert set(order) <= set(events) and "gpu_queue" not in events  # a zero stage is left out
        for stage, ms in (("upload_wait", 1.5), ("upload", 2.0), ("abc_alloc", 0.5), ("abc", 4.0), ("h", 3.0), ("msm_g1", 5.0),
                          ("msm_g2_wait", 1.0), ("release", 0.5)):
            assert events[stage].end_ms - events[stage].start_ms == pytest.approx(ms, abs=1e-6), stage
        # end to end in the order they run, the unnamed device work (12 - 3 - 5 - 1 ms) between a/b/c and H
        assert events["abc"].end_ms + 3.0 == pytest.approx(events["h"].start_ms, abs=1e-6)
        assert events["upload_wait"].end_ms == pytest.approx(events["upload"].start_ms, abs=1e-6)
        assert events["upload"].end_ms == pytest.approx(events["abc_alloc"].start_ms, abs=1e-6)
        assert events["abc_alloc"].end_ms == pytest.approx(events["abc"].start_ms, abs=1e-6)
        assert events["h"].end_ms == pytest.approx(events["msm_g1"].start_ms, abs=1e-6)
        assert events["msm_g2_wait"].end_ms == pytest.approx(events["release"].start_ms, abs=1e-6)
        assert events["release"].end_ms == pytest.approx(events["assemble"].start_ms, abs=1e-6)
        assert finish.start_ms <= events["upload_wait"].start_ms and events["assemble"].end_ms <= finish.end_ms + 1e-6
        assert all(events[s].lane == finish.lane for s in order)
