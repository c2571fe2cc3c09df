"""What a goal plans over: target brokers and the partitions in scope, topic by topic."""

from __future__ import annotations

from support.builders import broker, partition, snapshot

from ferry.model import ClusterSnapshot, Goal, PartitionState
from ferry.plan.prepare.scope import in_scope, target_brokers


def cluster() -> ClusterSnapshot:
    """Brokers 1, 2, 3, 5 and 10; three topics given out of order."""
    return snapshot(
        [broker(10, "a"), broker(2, "b"), broker(1, "a"), broker(5, "b"), broker(3, "c")],
        [
            partition("orders", 1, [1, 2]),
            partition("audit", 0, [3, 5]),
            partition("orders", 0, [2, 3]),
            partition("logs", 2, [5, 10]),
            partition("logs", 10, [1, 10]),
            partition("audit", 1, [1, 5]),
        ],
    )


def layout(groups: list[list[PartitionState]]) -> list[list[str]]:
    return [[str(p.tp) for p in group] for group in groups]


def test_the_targets_default_to_every_broker_of_the_snapshot_sorted() -> None:
    assert target_brokers(cluster(), Goal()) == [1, 2, 3, 5, 10]


def test_the_targets_are_the_goals_brokers_when_given() -> None:
    assert target_brokers(cluster(), Goal(brokers=frozenset({10, 2, 3}))) == [2, 3, 10]


def test_replaced_brokers_leave_the_targets_and_their_replacements_join_sorted() -> None:
    assert target_brokers(cluster(), Goal(replace=((10, 4), (1, 7)))) == [2, 3, 4, 5, 7]


def test_a_replacement_joins_even_when_its_old_broker_is_not_a_target() -> None:
    goal = Goal(brokers=frozenset({1, 2, 3}), replace=((5, 6),))
    assert target_brokers(cluster(), goal) == [1, 2, 3, 6]


def test_a_replacement_already_among_the_targets_is_listed_once() -> None:
    assert target_brokers(cluster(), Goal(replace=((1, 2),))) == [2, 3, 5, 10]


def test_in_scope_groups_partitions_by_topic_in_topic_partition_order() -> None:
    assert layout(in_scope(cluster(), Goal())) == [
        ["audit-0", "audit-1"],
        ["logs-2", "logs-10"],
        ["orders-0", "orders-1"],
    ]


def test_in_scope_leaves_out_topics_not_asked_for_and_excluded_ones() -> None:
    assert layout(in_scope(cluster(), Goal(topics=frozenset({"orders", "logs"})))) == [
        ["logs-2", "logs-10"],
        ["orders-0", "orders-1"],
    ]
    goal = Goal(topics=frozenset({"orders", "logs"}), exclude_topics=frozenset({"logs"}))
    assert layout(in_scope(cluster(), goal)) == [["orders-0", "orders-1"]]
    assert in_scope(cluster(), Goal(topics=frozenset({"missing"}))) == []
