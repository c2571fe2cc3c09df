"""The bytes a plan's new replicas copy: a tiered partition's not-yet-uploaded bytes on a KIP-1023
broker, its size anywhere else."""

from __future__ import annotations

from ferry.model import Broker, ClusterSnapshot, Move, PartitionState, TopicPartition
from ferry.plan.measure.copies import bytes_to_copy

T0, T1 = TopicPartition("logs", 0), TopicPartition("plain", 0)


def test_a_kip_1023_broker_copies_only_what_is_not_uploaded() -> None:
    snapshot = ClusterSnapshot.of(
        [Broker(1), Broker(2, fetch_last_tiered=True), Broker(3)],
        [
            PartitionState(T0, (1,), size_bytes=1000, untiered_bytes=250),
            PartitionState(T1, (1,), size_bytes=400),
        ],
        ["logs"],
    )
    moves = [Move(T0, (1,), (2, 3), 1000), Move(T1, (1,), (2,), 400)]
    # logs-0: 250 into broker 2 (KIP-1023), 1,000 into broker 3; plain-0: 400 (nothing says less).
    assert bytes_to_copy(snapshot, moves) == 250 + 1000 + 400
