"""Balance figures of a placement (ferry.plan.measure.stats): what each figure answers to and what it
ignores."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.model import TopicPartition
from ferry.plan.measure.stats import Placement, balance
from ferry.plan.racks import RackLayout

RACKS = {b: "abc"[b % 3] for b in range(9)}
LAYOUT = RackLayout.of(RACKS, RACKS)
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)

placements = st.lists(
    st.tuples(
        st.sampled_from(["t0", "t1", "t2"]), st.lists(st.integers(0, 8), min_size=1, max_size=3, unique=True)
    ),
    min_size=1,
    max_size=20,
).map(lambda drawn: [(TopicPartition(t, i), reps) for i, (t, reps) in enumerate(drawn)])
targets = st.lists(st.integers(0, 8), min_size=1, unique=True).map(sorted)


def with_replicas(placement: Placement, j: int, replicas: list[int]) -> Placement:
    return [*placement[:j], (placement[j][0], replicas), *placement[j + 1 :]]


@SETTINGS
@given(placements, targets, st.randoms(use_true_random=False))
def test_the_figures_ignore_the_order_of_partitions_and_of_followers(
    placement: Placement, on: list[int], rnd: random.Random
) -> None:
    shuffled = [(tp, [reps[0], *rnd.sample(list(reps[1:]), len(reps) - 1)]) for tp, reps in placement]
    rnd.shuffle(shuffled)
    assert balance(shuffled, on, LAYOUT) == balance(placement, on, LAYOUT)


@SETTINGS
@given(placements, targets, st.data())
def test_a_new_preferred_leader_changes_the_leader_spread_alone(
    placement: Placement, on: list[int], data: st.DataObject
) -> None:
    j = data.draw(st.integers(0, len(placement) - 1))
    reps = placement[j][1]
    turned = with_replicas(placement, j, [*reps[1:], reps[0]])
    before, after = balance(placement, on, LAYOUT), balance(turned, on, LAYOUT)
    assert before | {"leader_spread": 0} == after | {"leader_spread": 0}
    leaders = Counter(r[0] for _, r in turned)
    assert after["leader_spread"] == max(leaders[b] for b in on) - min(leaders[b] for b in on)


@SETTINGS
@given(placements, targets, st.data())
def test_one_replica_moved_from_a_to_b_changes_the_spread_by_exactly_what_the_counts_say(
    placement: Placement, on: list[int], data: st.DataObject
) -> None:
    j = data.draw(st.integers(0, len(placement) - 1))
    reps = placement[j][1]
    a = data.draw(st.sampled_from(list(reps)))
    b = data.draw(st.sampled_from([b for b in range(9) if b not in reps] or [a]))
    moved = with_replicas(placement, j, [b if r == a else r for r in reps])
    counts = Counter(r for _, rs in placement for r in rs)
    counts.update({a: -1, b: 1})
    before, after = balance(placement, on, LAYOUT), balance(moved, on, LAYOUT)
    held = [counts[x] for x in on]
    assert (after["max_replicas_per_broker"], after["min_replicas_per_broker"]) == (max(held), min(held))
    assert after["replica_spread"] == max(held) - min(held)
    assert after["replicas_off_target"] == before["replicas_off_target"] - (a not in on) + (b not in on)
