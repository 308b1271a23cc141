"""A Merkle tree whose leaves repeat a short block except at a few positions, built without
visiting the other leaves.

The leaves are a periodic background (leaf i is ``background[i mod P]``) with a handful of
overrides. Every level of such a tree is again periodic: level h's nodes at positions i and
i + P / (a_0 ... a_{h-1}) have identical subtrees, so level h needs only that many distinct
values (one, the default hash of an all-background subtree of that height, once the period
is used up), computed once per level. Only the ancestors of overridden leaves differ from the
background; they are the only nodes materialized. Building costs about P + (overrides x
height) hashes whatever the leaf count, and a path is read from the two tables.

For P equal to the leaf count the tree is an ordinary dense tree (the 2 KiB sectors).
"""

from __future__ import annotations

from math import prod

from cuzk_plugin.filecoin.trees import MerklePath, node_hasher

__all__ = ["SparseMerkleTree"]


class SparseMerkleTree:
    """``leaves`` leaves, level arities ``arities`` (leaf level first), hashed with ``hasher``
    ('sha256' binary or 'poseidon'); leaf i is ``overrides.get(i, background[i % len(background)])``.

    The period ``len(background)`` must divide the leaf count and, level by level, be a
    multiple of the arity until it is used up (a power of 8 for arity-8 trees, of 2 for binary).
    """

    def __init__(self, leaves: int, arities: list[int], hasher: str, background: list[int],
                 overrides: dict[int, int] | None = None):
        if prod(arities) != leaves:
            raise ValueError(f"{leaves} leaves do not fit arities {arities}")
        period = len(background)
        if period == 0 or leaves % period:
            raise ValueError(f"a background of {period} leaves does not tile {leaves} leaves")
        overrides = dict(overrides or {})
        bad = [i for i in overrides if not 0 <= i < leaves]
        if bad:
            raise ValueError(f"override index {bad[0]} is outside the {leaves} leaves")
        h = node_hasher(hasher)
        self.leaves = leaves
        self.arities = list(arities)
        #: background[h][j]: the value of every level-h node at a position = j mod the level's period
        self.background: list[list[int]] = [list(background)]
        #: materialized[h]: level-h nodes that differ from the background, by position
        self.materialized: list[dict[int, int]] = [overrides]
        for a in arities:
            bg, over = self.background[-1], self.materialized[-1]
            period = len(bg)
            if period > 1 and period % a:
                raise ValueError(f"a level period of {period} does not split into groups of {a}")
            nxt_bg = [h([bg[0]] * a)] if period == 1 else [h(bg[k:k + a]) for k in range(0, period, a)]
            nxt_over = {}
            for parent in sorted({i // a for i in over}):
                nxt_over[parent] = h([self._value(over, bg, parent * a + t) for t in range(a)])
            self.background.append(nxt_bg)
            self.materialized.append(nxt_over)

    @staticmethod
    def _value(over: dict[int, int], bg: list[int], i: int) -> int:
        return over[i] if i in over else bg[i % len(bg)]

    def node(self, level: int, index: int) -> int:
        """The value of node ``index`` of ``level`` (0 = leaves)."""
        return self._value(self.materialized[level], self.background[level], index)

    @property
    def root(self) -> int:
        return self.node(len(self.arities), 0)

    def leaf(self, index: int) -> int:
        return self.node(0, index)

    def path(self, index: int) -> MerklePath:
        """The inclusion path of leaf ``index``, as :class:`MerkleTree.path` gives it."""
        if not 0 <= index < self.leaves:
            raise ValueError(f"leaf {index} is outside the {self.leaves} leaves")
        levels = []
        i = index
        for level, a in enumerate(self.arities):
            group, pos = i - i % a, i % a
            levels.append(([self.node(level, group + k) for k in range(a) if k != pos], pos))
            i //= a
        return MerklePath(self.leaf(index), self.root, levels, list(self.arities))
