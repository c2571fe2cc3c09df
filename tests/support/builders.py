"""Short builders for domain values in tests.

``snapshot([broker(1, "a"), broker(2, "b")], [partition("t", 0, [1, 2])])`` reads like the cluster
it describes. Builders only fill defaults; validation stays in the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ferry.model import Broker, ClusterSnapshot, PartitionState, TopicPartition
from ferry.plan.racks import RackLayout


def broker(id: int, rack: str | None = None) -> Broker:
    """A broker, without a rack unless one is given."""
    return Broker(id, rack)


def partition(
    topic: str,
    p: int,
    replicas: Sequence[int],
    size: int | None = None,
    leader: int | None = None,
    isr: Sequence[int] | None = None,
) -> PartitionState:
    """Partition ``topic-p`` with ``replicas`` (first = preferred leader); size None = unknown."""
    return PartitionState(
        TopicPartition(topic, p),
        tuple(replicas),
        leader=leader,
        isr=None if isr is None else tuple(isr),
        size_bytes=size,
    )


def snapshot(brokers: Iterable[Broker | int], partitions: Iterable[PartitionState]) -> ClusterSnapshot:
    """A snapshot; a plain int in ``brokers`` stands for a broker without a rack."""
    return ClusterSnapshot.of((b if isinstance(b, Broker) else Broker(b) for b in brokers), partitions)


def layout_of(sizes: Sequence[int]) -> RackLayout:
    """Racks r0, r1, ... of the given sizes over brokers 0, 1, ... (rack by rack)."""
    racks: dict[int, str] = {}
    for k, n in enumerate(sizes):
        for _ in range(n):
            racks[len(racks)] = f"r{k}"
    return RackLayout.of(racks, racks)
