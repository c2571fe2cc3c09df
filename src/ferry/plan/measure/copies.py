"""The bytes a plan's new replicas copy, where that is less than their partitions' sizes: a new
replica of a tiered topic on a broker that starts at the last tiered offset (KIP-1023) copies
only what its leader has not uploaded (``PartitionState.untiered_bytes``)."""

from __future__ import annotations

from collections.abc import Iterable

from ferry.model import ClusterSnapshot, Move


def bytes_to_copy(snapshot: ClusterSnapshot, moves: Iterable[Move]) -> int:
    """What every new replica of ``moves`` copies (a partition's size where nothing says less)."""
    brokers = {b.id: b for b in snapshot.brokers}
    total = 0
    for move in moves:
        state = snapshot.partition(move.tp)
        total += sum(state.bytes_to_copy(brokers[b]) if b in brokers else state.size for b in move.adding)
    return total
