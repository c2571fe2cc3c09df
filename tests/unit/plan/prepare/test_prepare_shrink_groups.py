"""Shrink groups beyond tests/unit/plan/test_shrink.py: what a group is keyed by, its order, and what
realise may and may not keep."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.plan.prepare.shrink_groups import Group, groups, realise

Shrinking = tuple[int, tuple[int, ...], int, int]


def test_the_same_replicas_with_another_factor_form_another_group() -> None:
    found = groups([(0, (1, 2, 3), 2, 5), (1, (3, 2, 1), 1, 5), (2, (2, 1, 3), 2, 7)])
    assert [(g.replicas, g.rf, g.members) for g in found] == [
        ((1, 2, 3), 1, ((1, 5),)),
        ((1, 2, 3), 2, ((2, 7), (0, 5))),
    ]


def test_groups_come_in_one_order_whatever_order_the_partitions_come_in() -> None:
    parts: list[Shrinking] = [(0, (4, 5), 1, 3), (1, (1, 2), 1, 3), (2, (5, 4), 1, 9), (3, (2, 1), 1, 3)]
    assert groups(parts) == groups(parts[::-1])
    assert [g.replicas for g in groups(parts)] == [(1, 2), (4, 5)]


def test_members_of_equal_size_are_in_index_order() -> None:
    (group,) = groups([(5, (1, 2, 3), 2, 10), (2, (1, 2, 3), 2, 10), (7, (1, 2, 3), 2, 20)])
    assert group.members == ((7, 20), (2, 10), (5, 10))


def test_realise_keeps_what_the_counts_ask_and_never_a_broker_with_no_count_left() -> None:
    group = Group((1, 2, 3), 2, ((0, 9), (1, 8), (2, 7)))
    counts = {1: 3, 2: 3, 3: 0}
    assert realise(group, counts) == {0: {1, 2}, 1: {1, 2}, 2: {1, 2}}
    assert counts == {1: 3, 2: 3, 3: 0}  # the caller's counts are left alone
    assert realise(group, {1: 1}) == {0: {1}, 1: set(), 2: set()}


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    replicas=st.lists(st.integers(0, 9), min_size=2, max_size=5, unique=True),
    data=st.data(),
)
def test_realise_keeps_only_the_groups_brokers_and_bigger_partitions_never_keep_fewer(
    replicas: list[int], data: st.DataObject
) -> None:
    rf = data.draw(st.integers(1, len(replicas) - 1))
    sizes = data.draw(st.lists(st.integers(0, 50), min_size=1, max_size=8))
    (group,) = groups([(i, tuple(replicas), rf, size) for i, size in enumerate(sizes)])
    # Any counts, even ones no realisation meets (brokers outside the group among them).
    counts = {b: data.draw(st.integers(0, len(sizes) + 1)) for b in [*replicas, 99]}
    keeps = realise(group, counts)
    assert set(keeps) == set(range(len(sizes)))
    for b in [*replicas, 99]:
        assert sum(b in kept for kept in keeps.values()) <= counts[b]
    assert all(kept <= set(replicas) and len(kept) <= rf for kept in keeps.values())
    kept_in_order = [len(keeps[index]) for index, _ in group.members]
    assert kept_in_order == sorted(kept_in_order, reverse=True)
