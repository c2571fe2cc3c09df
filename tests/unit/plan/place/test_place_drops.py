"""Replicas that leave before placement: the balance pass's keeps, then the smallest over-quota ones."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st
from support.builders import partition

from ferry.model import PartitionState
from ferry.plan.place.drops import apply_keeps, over_quota_drops
from ferry.plan.topic_work import TopicWork

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)


def _work(*states: PartitionState, targets: range = range(6)) -> TopicWork:
    return TopicWork.start("t", states, [s.replication_factor for s in states], set(targets))


def test_over_quota_drops_remove_the_smallest_replicas_of_an_over_full_broker_first() -> None:
    sizes = [50, 10, 30, 20]
    work = _work(*(partition("t", p, [0, 1 + p], size=n) for p, n in enumerate(sizes)))
    quota = {b: 4 for b in range(6)} | {0: 2}
    assert over_quota_drops(work, quota) == 2
    assert [0 in s.replicas for s in work.slots] == [True, False, True, False]
    assert [s.dropped for s in work.slots] == [set(), {0}, set(), {0}]
    assert work.load[0] == 2
    # The other brokers were within their quota and keep everything.
    assert all(len(s.replicas) == 1 + (0 in s.replicas) for s in work.slots)


def test_among_equal_sizes_a_replica_the_broker_leads_leaves_last() -> None:
    led = partition("t", 0, [0, 1], size=10, leader=0)
    follower = partition("t", 1, [1, 0], size=10, leader=1)
    work = _work(led, follower)
    assert over_quota_drops(work, {0: 1, 1: 2}) == 1
    assert work.slots[0].replicas == [0, 1]
    assert work.slots[1].replicas == [1]


def test_brokers_within_their_quota_lose_nothing() -> None:
    work = _work(partition("t", 0, [0, 1]), partition("t", 1, [1, 2]))
    assert over_quota_drops(work, {0: 1, 1: 2, 2: 5}) == 0
    assert [s.replicas for s in work.slots] == [[0, 1], [1, 2]]
    assert all(not s.dropped for s in work.slots)


def test_decided_partitions_never_lose_a_replica_to_the_quota() -> None:
    small = partition("t", 0, [0, 1], size=1)
    big = partition("t", 1, [0, 2], size=100)
    work = _work(small, big)
    work.slots[0].decided = True
    assert over_quota_drops(work, {0: 1, 1: 1, 2: 1}) == 1
    # The small replica would go first, but its partition is decided: the big one leaves.
    assert work.slots[0].replicas == [0, 1]
    assert work.slots[1].replicas == [2]
    both_decided = _work(small, big)
    for slot in both_decided.slots:
        slot.decided = True
    assert over_quota_drops(both_decided, {0: 1, 1: 1, 2: 1}) == 0
    assert both_decided.load[0] == 2


def test_apply_keeps_drops_exactly_the_replicas_not_kept_and_marks_the_partition_decided() -> None:
    work = _work(partition("t", 0, [0, 1, 2]), partition("t", 1, [3, 4, 5]), partition("t", 2, [0, 3]))
    dropped = apply_keeps(work, {0: frozenset({1}), 2: frozenset({0, 3})})
    assert dropped == 2
    assert work.slots[0].replicas == [1]
    assert work.slots[0].dropped == {0, 2}
    assert work.slots[0].decided
    # Kept in full: decided all the same, nothing dropped.
    assert work.slots[2].replicas == [0, 3] and work.slots[2].decided and not work.slots[2].dropped
    # Not in the keeps at all: untouched and still open to the quota drops.
    assert work.slots[1].replicas == [3, 4, 5] and not work.slots[1].decided
    assert work.load == Counter({0: 1, 1: 1, 3: 2, 4: 1, 5: 1})


def test_keeps_then_quota_drops_spare_the_decided_partition() -> None:
    work = _work(partition("t", 0, [0, 1], size=1), partition("t", 1, [0, 2], size=9))
    apply_keeps(work, {0: frozenset({0, 1})})
    over_quota_drops(work, {0: 1, 1: 1, 2: 1})
    assert work.slots[0].replicas == [0, 1]
    assert work.slots[1].replicas == [2] and work.slots[1].dropped == {0}


@st.composite
def topics(draw: st.DrawFn) -> tuple[TopicWork, dict[int, int]]:
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    brokers = draw(st.integers(2, 6))
    states = []
    for p in range(draw(st.integers(1, 12))):
        replicas = rnd.sample(range(brokers), rnd.randint(1, brokers))
        size = rnd.choice([0, 5, rnd.randint(1, 100)])
        states.append(partition("t", p, replicas, size=size, leader=rnd.choice(replicas)))
    work = _work(*states, targets=range(brokers))
    for slot in work.slots:
        slot.decided = rnd.random() < 0.2
    return work, {b: rnd.randint(0, len(states)) for b in range(brokers)}


@SETTINGS
@given(topics())
def test_quota_drops_bring_each_broker_down_to_its_quota_smallest_first(
    case: tuple[TopicWork, dict[int, int]],
) -> None:
    work, quota = case
    before = {id(s): list(s.replicas) for s in work.slots}
    load = Counter(work.load)
    movable = Counter(b for s in work.slots if not s.decided for b in s.replicas)
    dropped = over_quota_drops(work, quota)
    assert dropped == sum(len(before[id(s)]) - len(s.replicas) for s in work.slots)
    for b, limit in quota.items():
        assert work.load[b] == load[b] - min(movable[b], max(0, load[b] - limit))
        # Smallest first, a replica the broker leads after the others of its size.
        key = {id(s): (s.state.size, s.state.current_leader == b) for s in work.slots if not s.decided}
        gone = [key[id(s)] for s in work.slots if b in before[id(s)] and b not in s.replicas]
        stayed = [key[id(s)] for s in work.slots if not s.decided and b in s.replicas]
        if gone and stayed:
            assert max(gone) <= min(stayed)
    for slot in work.slots:
        left = set(before[id(slot)]) - set(slot.replicas)
        assert slot.dropped == left
        assert not (slot.decided and left)
