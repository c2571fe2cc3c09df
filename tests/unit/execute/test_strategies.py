"""Ordering strategies: composable sort keys, parsed from --order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.exec_moves import plans

from ferry.errors import UsageError
from ferry.execute.strategies import STRATEGIES, Ordering, parse_order
from ferry.model import Move, Plan, TopicPartition


def _move(topic: str, p: int, original: tuple[int, ...], target: tuple[int, ...], size: int) -> Move:
    return Move(TopicPartition(topic, p), original, target, size)


SMALL = _move("b", 0, (1, 2), (1, 3), 10)
LARGE = _move("a", 0, (1, 2), (1, 3), 1000)
LEADER = _move("c", 0, (1, 2), (3, 2), 500)


def test_smallest_and_largest_first() -> None:
    assert parse_order("smallest-first").sort([LARGE, SMALL, LEADER]) == [SMALL, LEADER, LARGE]
    assert parse_order("largest-first").sort([SMALL, LARGE, LEADER]) == [LARGE, LEADER, SMALL]


def test_later_strategies_only_break_ties() -> None:
    # leader-first puts LEADER first; smallest-first orders the rest.
    assert parse_order("leader-first,smallest-first").sort([LARGE, SMALL, LEADER]) == [LEADER, SMALL, LARGE]
    assert parse_order("by-topic").sort([SMALL, LEADER, LARGE]) == [LARGE, SMALL, LEADER]


def test_size_counts_every_replica_to_copy() -> None:
    two_copies = _move("d", 0, (1, 2), (3, 4), 600)
    assert parse_order("smallest-first").sort([two_copies, LARGE]) == [LARGE, two_copies]


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "at least one"), ("fastest", "unknown --order strategy 'fastest'"), ("by-topic,by-topic", "twice")],
)
def test_bad_orders_are_usage_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_order(text)


@given(plans(), st.lists(st.sampled_from(sorted(STRATEGIES)), min_size=1, max_size=3, unique=True))
def test_any_order_is_a_deterministic_permutation(plan: Plan, names: list[str]) -> None:
    ordering = Ordering(tuple(names))
    ordered = ordering.sort(list(plan.moves))
    assert sorted(ordered, key=lambda m: m.tp) == list(plan.moves)
    assert ordering.sort(list(reversed(plan.moves))) == ordered


@given(plans())
def test_smallest_first_never_puts_more_bytes_before_fewer(plan: Plan) -> None:
    ordered = parse_order("smallest-first").sort(list(plan.moves))
    copied = [m.size_bytes * len(m.adding) for m in ordered]
    assert copied == sorted(copied)
