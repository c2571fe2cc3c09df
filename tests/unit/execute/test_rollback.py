"""plan_rollback: back to the originals, skipping what would go offline (KIP-236's rules)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from support.builders import partition, snapshot

from ferry.execute.rollback import plan_rollback
from ferry.kafka.admin import OngoingReassignment
from ferry.kafka.snapshot import LiveSnapshot
from ferry.model import Broker, Move, PartitionState, TopicPartition

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


def _live(
    partitions: Iterable[PartitionState],
    *,
    down: Iterable[int] = (),
    moving: Sequence[OngoingReassignment] = (),
    brokers: Iterable[int] = (1, 2, 3, 4),
) -> LiveSnapshot:
    dead = set(down)
    cluster = snapshot([Broker(b, alive=b not in dead) for b in brokers], partitions)
    return LiveSnapshot(cluster, {}, {r.tp: r for r in moving}, {})


def _originals(**by_partition: Sequence[int]) -> Mapping[TopicPartition, Sequence[int]]:
    return {TopicPartition("t", int(p[1:])): r for p, r in by_partition.items()}


def test_moved_partitions_go_back_and_unmoved_ones_are_counted() -> None:
    live = _live([partition("t", 0, [3, 4], size=500), partition("t", 1, [1, 2])])
    result = plan_rollback(_originals(p0=[1, 2], p1=[1, 2]), live)
    assert result.plan.moves == (Move(T0, (3, 4), (1, 2), 500),)
    assert result.unchanged == 1
    assert result.skipped == {}
    assert result.offline == ()


def test_an_unknown_size_moves_as_zero_bytes() -> None:
    result = plan_rollback(_originals(p0=[1, 2]), _live([partition("t", 0, [2, 3])]))
    assert [m.size_bytes for m in result.plan.moves] == [0]


def test_a_deleted_partition_is_skipped_and_said_so() -> None:
    result = plan_rollback(_originals(p0=[1, 2], p2=[1, 2]), _live([partition("t", 0, [3, 4])]))
    assert result.skipped == {T2: "the partition no longer exists"}
    assert [m.tp for m in result.plan.moves] == [T0]


def test_no_original_replica_in_the_isr_skips_the_partition() -> None:
    # Broker 1 holds a replica now but lags (out of the ISR): restoring [1] alone loses data.
    live = _live([partition("t", 0, [1, 3], isr=[3])])
    result = plan_rollback(_originals(p0=[1]), live)
    assert result.plan.moves == ()
    assert "rolling back would take the partition offline" in result.skipped[T0]
    assert "[1]" in result.skipped[T0]


def test_an_original_replica_no_longer_held_counts_as_a_fresh_copy() -> None:
    # Broker 1 is alive and holds no replica: it copies from the ISR like any new replica.
    result = plan_rollback(_originals(p0=[1, 2]), _live([partition("t", 0, [3, 4], isr=[3, 4])]))
    assert result.plan.moves == (Move(T0, (3, 4), (1, 2), 0),)
    assert result.skipped == {}


def test_a_dead_broker_kept_in_the_isr_cannot_hold_the_data() -> None:
    # Kafka keeps a dead broker as the last ISR member; it must not count as a holder.
    live = _live([partition("t", 0, [1, 3], isr=[1])], down=[1])
    result = plan_rollback(_originals(p0=[1]), live)
    assert T0 in result.skipped


def test_without_an_isr_the_replicas_stand_in_for_it() -> None:
    live = _live([partition("t", 0, [1, 3])])  # isr unknown
    result = plan_rollback(_originals(p0=[1]), live)
    assert result.plan.moves == (Move(T0, (1, 3), (1,), 0),)


def test_everything_down_is_rolled_back_and_reported_offline() -> None:
    live = _live([partition("t", 0, [3, 4], isr=[3])], down=[1, 2, 3, 4])
    result = plan_rollback(_originals(p0=[1, 2]), live)
    assert result.plan.moves == (Move(T0, (3, 4), (1, 2), 0),)
    assert result.offline == (T0,)
    assert result.skipped == {}


def test_a_moving_partition_starts_from_its_replicas_without_the_adding_ones() -> None:
    # Moving [1, 2] -> [1, 3]: Kafka lists replicas [1, 3, 2], adding [3], removing [2].
    move = OngoingReassignment(T0, (1, 3, 2), (3,), (2,))
    live = _live([partition("t", 0, [1, 3, 2], size=7)], moving=[move])
    result = plan_rollback(_originals(p0=[1, 2]), live)
    assert result.plan.moves == (Move(T0, (1, 2), (1, 2), 7),)
    assert result.unchanged == 0


def test_a_moving_partition_already_at_its_originals_is_still_re_targeted() -> None:
    # Its replicas read as the originals, but a move is in flight: it must be re-targeted back.
    move = OngoingReassignment(T1, (1, 2), (), ())
    live = _live([partition("t", 1, [1, 2])], moving=[move])
    result = plan_rollback(_originals(p1=[1, 2]), live)
    assert [m.tp for m in result.plan.moves] == [T1]
    assert result.unchanged == 0


def test_partitions_are_handled_in_order() -> None:
    live = _live([partition("t", p, [3, 4]) for p in (2, 0, 1)])
    result = plan_rollback({T2: [1, 2], T0: [1, 2], T1: [1, 2]}, live)
    assert [m.tp for m in result.plan.moves] == [T0, T1, T2]


def test_replicas_go_back_into_the_dirs_they_were_in() -> None:
    moved = replace(partition("t", 0, [1, 3], size=500), replica_dirs=((1, "/b"), (3, "/a")))
    in_place = replace(partition("t", 1, [1, 2], size=5), replica_dirs=((1, "/a"), (2, "/a")))
    dirs_only = replace(partition("t", 2, [1, 2], size=7), replica_dirs=((1, "/b"), (2, "/a")))
    live = _live([moved, in_place, dirs_only])
    dirs = {T0: {1: "/a", 2: "/b"}, T1: {1: "/a", 2: "/a"}, T2: {1: "/a", 2: "/a"}}
    result = plan_rollback(_originals(p0=[1, 2], p1=[1, 2], p2=[1, 2]), live, dirs)
    assert result.plan.moves == (
        Move(T0, (1, 3), (1, 2), 500, ("/a", "/b")),
        Move(T2, (1, 2), (1, 2), 7, ("/a", "/a")),
    )
    assert result.unchanged == 1  # t-1: its replicas and dirs are back already
