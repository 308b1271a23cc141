"""Stacked DRG graph and challenges: ChaCha core against its published vector, DRG and
expander parent invariants, challenge range."""

from __future__ import annotations

from cuzk_plugin.filecoin.porep import graph as g
from cuzk_plugin.filecoin.porep.challenges import interactive_challenges
from cuzk_plugin.filecoin.porep.graph import StackedGraph, feistel_permute


def test_chacha_block_matches_rfc7539_keystream():
    # RFC 7539 section 2.4.2 test vector #1 (ChaCha20, zero key, zero nonce, counter 0):
    # keystream starts 76 b8 e0 ad a0 f1 3d 90, i.e. words 0xade0b876, 0x903df1a0.
    words = g._chacha_block([0] * 8, 0, rounds=20)
    assert words[:2] == [0xADE0B876, 0x903DF1A0]


def test_drg_parents_invariants():
    porep_id = (5).to_bytes(8, "little") + bytes(24)
    graph = StackedGraph(1 << 10, porep_id)
    assert graph.drg_parents(0) == (0,) * 6 and graph.drg_parents(1) == (0,) * 6
    for node in range(2, 1 << 10):
        ps = graph.drg_parents(node)
        assert ps[0] == node - 1 and all(p < node for p in ps)
    legacy = StackedGraph(1 << 10, porep_id, legacy_predecessor=True)
    assert legacy.drg_parents(100)[5] == 99 and legacy.drg_parents(100)[:5] == graph.drg_parents(100)[1:]


def test_feistel_is_a_permutation():
    keys = [1, 2, 3, 4]
    for n in (64 * 8, 1000):
        assert sorted(feistel_permute(n, i, keys) for i in range(n)) == list(range(n))


def test_expander_parents_in_range():
    graph = StackedGraph(64, bytes(32))
    for node in range(64):
        assert all(0 <= p < 64 for p in graph.exp_parents(node))


def test_interactive_challenges_skip_node_zero():
    chs = interactive_challenges(bytes(32), bytes(range(32)), 64, 50, 3)
    assert len(chs) == 50 and all(1 <= c < 64 for c in chs)
    assert interactive_challenges(bytes(32), bytes(range(32)), 64, 2, 1) == chs[:0] + interactive_challenges(
        bytes(32), bytes(range(32)), 64, 4, 0)[2:4]
