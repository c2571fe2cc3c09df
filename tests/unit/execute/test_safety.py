"""Safety checks: what each one refuses, and that forcing needs a reason."""

from __future__ import annotations

import pytest

from ferry.errors import PreconditionError
from ferry.execute import safety
from ferry.model import Broker, ClusterSnapshot, LogDir, Move, PartitionState, TopicPartition

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def _cluster(dead: tuple[int, ...] = ()) -> ClusterSnapshot:
    brokers = [Broker(b, alive=b not in dead) for b in range(1, 6)]
    parts = [PartitionState(T0, (1, 2, 3)), PartitionState(T1, (2, 3, 4))]
    return ClusterSnapshot.of(brokers, parts)


def test_a_safe_move_passes() -> None:
    move = Move(T0, (1, 2, 3), (1, 2, 4))
    assert safety.check([move], _cluster(), {"t": 2}) == ()


def test_a_move_onto_a_dead_broker_is_refused() -> None:
    refusals = safety.check([Move(T0, (1, 2, 3), (1, 2, 5))], _cluster(dead=(5,)), {})
    assert [str(r) for r in refusals] == ["t-0: target broker(s) 5 not alive: the move could never finish"]


def test_a_dead_broker_already_holding_the_replica_is_not_a_new_risk() -> None:
    # Moving other replicas of a partition that keeps a replica on a dead broker is allowed.
    assert safety.check([Move(T0, (1, 2, 5), (1, 3, 5))], _cluster(dead=(5,)), {}) == ()


def test_shrinking_below_min_insync_is_refused() -> None:
    refusals = safety.check([Move(T0, (1, 2, 3), (1,))], _cluster(), {"t": 2})
    assert len(refusals) == 1
    assert "below min.insync.replicas=2" in refusals[0].reason


def test_an_under_replicated_partition_keeping_min_insync_replicas_passes() -> None:
    # ISR [1] of [1,2,3], min.insync.replicas=2, 3 dropped: Kafka (KRaft's
    # PartitionReassignmentReplicas) removes 3 only once the whole target [1,2] is in the ISR, so
    # the removal step leaves 2 in-sync replicas, not 1: only a target below 2 is refused.
    snap = ClusterSnapshot.of([Broker(b) for b in (1, 2, 3)], [PartitionState(T0, (1, 2, 3), 1, (1,))])
    assert safety.check([Move(T0, (1, 2, 3), (1, 2))], snap, {"t": 2}) == ()
    assert len(safety.check([Move(T0, (1, 2, 3), (1,))], snap, {"t": 2})) == 1


def test_a_partition_that_changed_since_the_plan_is_stale() -> None:
    moves = [Move(T0, (1, 2, 4), (1, 2, 5)), Move(T1, (2, 3, 4), (2, 3, 5))]
    refusals = safety.check(moves, _cluster(), {}, originals={T0: (1, 2, 3), T1: (2, 3, 4)})
    assert [r.tp for r in refusals] == [T0]
    assert "stale plan" in refusals[0].reason


def test_the_same_replicas_in_another_order_are_not_stale_but_named() -> None:
    # A cancelled KIP-455 reassignment: KRaft puts [2, 1, 3] back as [1, 2, 3].
    moves = [Move(T0, (1, 2, 3), (1, 2, 5)), Move(T1, (2, 3, 4), (2, 3, 5))]
    planned_from = {T0: (2, 1, 3), T1: (2, 3, 4)}
    assert safety.check(moves, _cluster(), {}, originals=planned_from) == ()
    assert safety.reordered(moves, planned_from) == (T0,)
    changed = {T0: (2, 1, 4), T1: (2, 3, 4)}  # a replica set that changed is still stale
    assert [r.tp for r in safety.check(moves, _cluster(), {}, originals=changed)] == [T0]
    assert safety.reordered(moves, changed) == ()


def test_a_move_onto_a_cordoned_broker_is_refused() -> None:
    brokers = [Broker(b, cordoned=b == 5) for b in range(1, 6)]
    cluster = ClusterSnapshot.of(brokers, [PartitionState(T0, (1, 2, 3)), PartitionState(T1, (2, 3, 5))])
    refusals = safety.check([Move(T0, (1, 2, 3), (1, 2, 5)), Move(T1, (2, 3, 5), (2, 4, 5))], cluster, {})
    # Keeping a replica on a cordoned broker is no new partition for it: only t-0 is refused.
    assert [str(r) for r in refusals] == ["t-0: target broker(s) 5 cordoned: they take no new partitions"]


def test_enforce_raises_one_line_naming_the_first_refusal_and_the_count() -> None:
    refusals = safety.check([Move(T0, (1, 2, 3), (1,)), Move(T1, (2, 3, 4), (2,))], _cluster(), {"t": 2})
    with pytest.raises(PreconditionError) as caught:
        safety.enforce(refusals, None)
    assert caught.value.exit_code == 4
    assert "t-0" in caught.value.message and "(and 1 more)" in caught.value.message
    assert "\n" not in caught.value.message


def test_enforce_lets_a_forced_submission_through() -> None:
    refusals = safety.check([Move(T0, (1, 2, 3), (1,))], _cluster(), {"t": 2})
    safety.enforce(refusals, "decommissioning the topic")


def test_summary_names_the_first_refusal_and_counts_the_rest() -> None:
    refusals = safety.check([Move(T0, (1, 2, 3), (1,)), Move(T1, (2, 3, 4), (2,))], _cluster(), {"t": 2})
    assert safety.summary(refusals) == f"{refusals[0]} (and 1 more)"
    assert safety.summary(refusals[:1]) == str(refusals[0])


def _jbod(**changes: LogDir) -> ClusterSnapshot:
    """Brokers 1-5 with dirs /a and /b each (1000 bytes, 600 free), some replaced by ``changes``."""
    dirs = {"a": LogDir("/a", 1000, 600), "b": LogDir("/b", 1000, 600)}
    brokers = [
        Broker(b, log_dirs=tuple(changes.get(f"b{b}{d}", dirs[d]) for d in ("a", "b"))) for b in range(1, 6)
    ]
    parts = [
        PartitionState(T0, (1, 2, 3), size_bytes=300, replica_dirs=((1, "/a"), (2, "/a"), (3, "/a"))),
        PartitionState(T1, (2, 3, 4), size_bytes=300),
    ]
    return ClusterSnapshot.of(brokers, parts)


@pytest.mark.parametrize(
    ("moves", "changes", "reason"),
    [
        (
            [Move(T0, (1, 2, 3), (1, 2, 3), 300, ("/c", "any", "any"))],
            {},
            "log dir /c is not a dir of broker 1",
        ),
        (
            [Move(T0, (1, 2, 3), (1, 2, 3), 300, ("/b", "any", "any"))],
            {"b1b": LogDir("/b", 1000, 600, cordoned=True)},
            "log dir /b of broker 1 is cordoned: it takes no new replicas",
        ),
        (
            [Move(T0, (1, 2, 3), (1, 2, 5), 300)],
            {"b5b": LogDir("/b", offline=True)},
            "broker 5 has an offline log dir: it takes no new replica",
        ),
        (
            [
                Move(T0, (1, 2, 3), (1, 2, 5), 300, ("any", "any", "/b")),
                Move(T1, (2, 3, 4), (2, 3, 5), 300, ("any", "any", "/b")),
            ],
            {},
            "log dir /b of broker 5 has room for 550 bytes (keeping 5% free), "
            "600 bytes of replicas are headed there",
        ),
    ],
)
def test_a_move_into_a_dir_that_cannot_take_it_is_refused(
    moves: list[Move], changes: dict[str, LogDir], reason: str
) -> None:
    refusals = safety.check(moves, _jbod(**changes), {})
    assert refusals and all(r.reason == reason for r in refusals)


def test_a_replica_named_into_the_dir_it_is_in_or_into_an_open_dir_with_room_passes() -> None:
    moves = [Move(T0, (1, 2, 3), (1, 2, 5), 300, ("/a", "any", "/b"))]
    assert safety.check(moves, _jbod(b1a=LogDir("/a", 1000, 0, cordoned=True)), {}) == ()
