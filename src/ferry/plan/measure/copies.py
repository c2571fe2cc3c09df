"""The bytes a plan's new replicas copy, where that is less than their partitions' sizes: a new
replica of a tiered topic on a broker that starts at the last tiered offset (KIP-1023) copies
only what its leader has not uploaded (``PartitionState.untiered_bytes``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ferry.model import Broker, ClusterSnapshot, Move, PartitionState


def bytes_to_copy(snapshot: ClusterSnapshot, moves: Iterable[Move]) -> int:
    """What every new replica of ``moves`` copies (a partition's size where nothing says less)."""
    brokers = {b.id: b for b in snapshot.brokers}
    return sum(copied(snapshot.partition(move.tp), move.adding, brokers) for move in moves)


def copied(state: PartitionState, joining: Iterable[int], brokers: Mapping[int, Broker]) -> int:
    """What new replicas of ``state`` on the brokers ``joining`` copy (``brokers``: the snapshot's,
    by id; its size for one it does not list)."""
    return sum(state.bytes_to_copy(brokers[b]) if b in brokers else state.size for b in joining)
