"""Shrinking partitions: grouping by replica set and realising per-broker keep counts."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from ferry.plan.prepare.shrink_groups import groups, realise


def test_groups_join_equal_replica_sets_in_any_order_largest_first() -> None:
    found = groups([(0, (3, 1, 2), 2, 10), (1, (1, 2, 3), 2, 50), (2, (1, 2, 4), 2, 5)])
    assert [(g.replicas, [i for i, _ in g.members]) for g in found] == [((1, 2, 3), [1, 0]), ((1, 2, 4), [2])]


@st.composite
def group_and_counts(draw: st.DrawFn) -> tuple[list[tuple[int, tuple[int, ...], int, int]], dict[int, int]]:
    size = draw(st.integers(2, 5))
    rf = draw(st.integers(1, size - 1))
    members = draw(st.integers(1, 12))
    replicas = tuple(range(size))
    # Counts k_b <= m with sum k_b <= rf * m: any such vector must be realisable.
    counts = {b: draw(st.integers(0, members)) for b in replicas}
    while sum(counts.values()) > rf * members:
        b = max(counts, key=lambda x: counts[x])
        counts[b] -= 1
    parts = [(i, replicas, rf, draw(st.integers(0, 100))) for i in range(members)]
    return parts, counts


@given(group_and_counts())
def test_realise_meets_every_count_and_never_keeps_more_than_rf(
    case: tuple[list[tuple[int, tuple[int, ...], int, int]], dict[int, int]],
) -> None:
    parts, counts = case
    (group,) = groups(parts)
    keeps = realise(group, counts)
    assert set(keeps) == {i for i, *_ in parts}
    assert all(len(k) <= group.rf for k in keeps.values())
    assert Counter(b for k in keeps.values() for b in k) == Counter({b: n for b, n in counts.items() if n})


def test_the_biggest_partitions_keep_all_they_may() -> None:
    (group,) = groups([(0, (1, 2, 3), 2, 1), (1, (1, 2, 3), 2, 99)])
    keeps = realise(group, {1: 1, 2: 1, 3: 1})
    assert len(keeps[1]) == 2 and len(keeps[0]) == 1
