"""``--one-replica-at-a-time``: the single-replica steps of a move."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from ferry.execute.steps import next_target, single_replica_steps

RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c", 7: "a", 8: "b", 9: "c"}


def test_three_new_replicas_come_one_at_a_time_each_in_the_rack_of_the_one_it_replaces() -> None:
    steps = single_replica_steps((1, 2, 3), (6, 4, 5), RACKS)
    assert steps == ((4, 2, 3), (4, 5, 3), (6, 4, 5))
    for before, after in zip(((1, 2, 3), *steps), steps, strict=False):
        assert len(set(after) - set(before)) == 1
        assert Counter(RACKS[b] for b in after) == Counter("abc")


def test_one_replica_changing_is_one_step() -> None:
    assert single_replica_steps((1, 2, 3), (1, 2, 6), RACKS) == ((1, 2, 6),)
    assert single_replica_steps((1, 2), (2, 1), RACKS) == ((2, 1),)


def test_replication_factor_down_drops_first_and_up_adds_last() -> None:
    down = single_replica_steps((1, 2, 3, 4), (5, 6), RACKS)
    assert all(len(s) <= 4 for s in down) and down[-1] == (5, 6)
    assert down[0] in {(1, 2, 4), (2, 3, 4), (1, 2, 3), (1, 3, 4)}
    up = single_replica_steps((1, 2), (4, 5, 3), RACKS)
    assert up == ((4, 2), (4, 5), (4, 5, 3))


def test_next_target_follows_the_steps_from_wherever_the_partition_is() -> None:
    steps = single_replica_steps((1, 2, 3), (4, 5, 6), RACKS)
    assert next_target(steps, (1, 2, 3), (3, 1, 2)) == steps[0]
    assert next_target(steps, (1, 2, 3), steps[0]) == steps[1]
    assert next_target(steps, (1, 2, 3), steps[1][::-1]) == steps[2]
    assert next_target(steps, (1, 2, 3), (7, 8, 9)) == (4, 5, 6)  # moved elsewhere: straight on


@given(
    st.lists(st.integers(1, 9), min_size=1, max_size=5, unique=True),
    st.lists(st.integers(1, 9), min_size=1, max_size=5, unique=True),
)
def test_every_step_adds_at_most_one_replica_and_the_last_is_the_target(
    original: list[int], target: list[int]
) -> None:
    steps = single_replica_steps(original, target, RACKS)
    assert steps[-1] == tuple(target)
    for before, after in zip((tuple(original), *steps), steps, strict=False):
        assert len(set(after) - set(before)) <= 1
        assert len(set(before) - set(after)) <= 1
        assert len(after) == len(set(after))
        assert len(after) <= max(len(original), len(target))
    assert len(steps) <= max(len(set(target) - set(original)), len(set(original) - set(target)), 1)
