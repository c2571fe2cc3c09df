"""validate_goal: every way a goal can miss its snapshot, named after the option that caused it."""

from __future__ import annotations

import pytest
from support.builders import broker, partition, snapshot

from ferry.errors import InputError
from ferry.model import ClusterSnapshot, Goal
from ferry.plan.prepare.scope import target_brokers
from ferry.plan.prepare.validate_goal import validate_goal

SRC = "snapshot.json"


def cluster() -> ClusterSnapshot:
    """Brokers 1-4 (4 is new and empty); orders has RF 3, logs RF 2."""
    return snapshot(
        [broker(1, "a"), broker(2, "b"), broker(3, "c"), broker(4, "a")],
        [
            partition("orders", 0, [1, 2, 3]),
            partition("orders", 1, [2, 3, 1]),
            partition("logs", 0, [1, 2]),
        ],
    )


def problems(goal: Goal, snap: ClusterSnapshot | None = None) -> tuple[str, ...]:
    with pytest.raises(InputError) as info:
        validate_goal(snap or cluster(), goal, source=SRC)
    assert info.value.exit_code == 3
    return info.value.problems


@pytest.mark.parametrize(
    "goal",
    [
        Goal(),
        Goal(brokers=frozenset({1, 2, 3})),
        Goal(replace=((3, 4),)),
        Goal(replace=((1, 4), (2, 3)), topics=frozenset({"logs"})),
        Goal(replication_factors={"logs": 4}),
        Goal(topics=frozenset({"logs"}), brokers=frozenset({1, 2})),
        Goal(exclude_topics=frozenset({"orders"}), brokers=frozenset({1, 4})),
        Goal(brokers=frozenset({1, 4}), replication_factors={"orders": 2}),
    ],
)
def test_goals_that_fit(goal: Goal) -> None:
    validate_goal(cluster(), goal, source=SRC)


def test_a_new_broker_cannot_itself_be_replaced() -> None:
    assert problems(Goal(replace=((1, 3), (3, 4)))) == ("--replace 1=3: broker 3 is itself being replaced",)


def test_unknown_target_brokers() -> None:
    assert problems(Goal(brokers=frozenset({1, 2, 3, 9, 8}))) == (
        "--brokers: broker 8 is not in snapshot.json",
        "--brokers: broker 9 is not in snapshot.json",
    )


def test_unknown_replace_brokers() -> None:
    assert problems(Goal(replace=((7, 1), (2, 9)))) == (
        "--replace 7=1: broker 7 is not in snapshot.json",
        "--replace 2=9: broker 9 is not in snapshot.json (list new brokers in its 'brokers')",
    )


def test_one_new_broker_cannot_take_two_olds() -> None:
    assert problems(Goal(replace=((1, 4), (2, 4)))) == ("--replace: broker 4 cannot replace both 1 and 2",)


@pytest.mark.parametrize(
    ("goal", "expected"),
    [
        (Goal(topics=frozenset({"x", "logs"})), "--topics: topic 'x' is not in snapshot.json"),
        (Goal(exclude_topics=frozenset({"y"})), "--exclude-topics: topic 'y' is not in snapshot.json"),
        (
            Goal(replication_factors={"z": 2}),
            "--replication-factor z=2: topic 'z' is not in snapshot.json",
        ),
        (
            Goal(topics=frozenset({"logs"}), replication_factors={"orders": 2}),
            "--replication-factor orders=2: topic 'orders' is excluded by --topics/--exclude-topics",
        ),
    ],
)
def test_unknown_or_excluded_topics(goal: Goal, expected: str) -> None:
    assert problems(goal) == (expected,)


def test_requested_replication_factor_above_target_brokers() -> None:
    assert problems(Goal(replication_factors={"orders": 5})) == (
        "--replication-factor orders=5: only 4 target brokers",
    )


def test_existing_replication_factor_above_target_brokers() -> None:
    assert problems(Goal(brokers=frozenset({1, 2}))) == (
        "topic 'orders' has replication factor 3 but only 2 target brokers"
        " (keep more brokers or lower it: --replication-factor orders=2)",
    )


def test_out_of_scope_topics_do_not_count_against_target_brokers() -> None:
    validate_goal(
        cluster(), Goal(brokers=frozenset({1, 2}), exclude_topics=frozenset({"orders"})), source=SRC
    )


def test_nothing_in_scope() -> None:
    goal = Goal(exclude_topics=frozenset({"orders", "logs"}))
    assert problems(goal) == ("nothing to plan: no topic of snapshot.json is in scope",)
    empty = snapshot([1, 2], [])
    assert problems(Goal(), empty) == ("nothing to plan: no topic of snapshot.json is in scope",)


def test_every_problem_at_once_and_the_message_counts_the_rest() -> None:
    goal = Goal(brokers=frozenset({1, 9}), topics=frozenset({"nope"}), replace=((8, 1),))
    with pytest.raises(InputError) as info:
        validate_goal(cluster(), goal, source=SRC)
    assert info.value.problems == (
        "--brokers: broker 9 is not in snapshot.json",
        "--replace 8=1: broker 8 is not in snapshot.json",
        "--topics: topic 'nope' is not in snapshot.json",
    )
    assert info.value.message == "--brokers: broker 9 is not in snapshot.json (and 2 more)"


def test_target_brokers_drop_the_replaced_ones() -> None:
    assert target_brokers(cluster(), Goal(replace=((3, 4),))) == [1, 2, 4]
    assert target_brokers(cluster(), Goal(brokers=frozenset({1, 2}))) == [1, 2]
