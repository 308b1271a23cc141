"""The stacked DRG's labeling rule: a node's label of a layer is the SHA-256 of replica_id,
the layer, the node and its parents' labels, expanded to 37 slots (storage-proofs-porep
``stacked/vanilla/create_label``). The sealers label sectors with it; the native witness check
recomputes the labels a C1 opens.
"""

from __future__ import annotations

from cuzk_plugin.filecoin.porep.circuit import TOTAL_PARENTS
from cuzk_plugin.filecoin.trees import fr_to_bytes, sha256_fr

__all__ = ["expand_parents", "label_hash"]


def expand_parents(parents: list[int], layer: int) -> list[int]:
    """The 37 parent slots of a label: layer 1 repeats its 6 DRG parents; later layers their
    14 (DRG then expander) parents twice, then the first 9."""
    if layer == 1:
        return parents * 6 + parents[:1]
    return parents + parents + parents[:9]


def label_hash(replica_id: bytes, layer: int, node: int, parent_labels: list[int] | None) -> int:
    """SHA-256 of replica_id | layer (u32 BE) | node (u64 BE) | 20 zero bytes | the 37 expanded
    parent labels (none for node 0), as a field element."""
    buf = layer.to_bytes(4, "big") + node.to_bytes(8, "big") + bytes(20)
    msg = replica_id + buf
    if parent_labels is not None:
        assert len(parent_labels) == TOTAL_PARENTS
        msg += b"".join(fr_to_bytes(p) for p in parent_labels)
    return sha256_fr(msg)
