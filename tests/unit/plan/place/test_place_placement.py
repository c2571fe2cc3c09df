"""Placement of one topic's open slots: greedy under quotas and the rack rule, then augmenting paths,
and a counted fallback over quota only when nothing else works."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.builders import partition
from support.invariants import rack_caps

from ferry.model import PartitionState, RackMode
from ferry.plan.place.drops import over_quota_drops
from ferry.plan.place.placement import Room, _best, place
from ferry.plan.racks import RackLayout, racks_open
from ferry.plan.topic_work import Slot, TopicWork

SETTINGS = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
OFF = 100
"""Broker ids from here on are not targets: a replica there has to move."""


def _work(states: Sequence[PartitionState], targets: Iterable[int]) -> TopicWork:
    return TopicWork.start("t", states, [s.replication_factor for s in states], set(targets))


def _no_racks(n: int) -> RackLayout:
    return RackLayout.of({}, range(n))


def _members(racks: Mapping[int, str | None]) -> list[list[int]]:
    keys = {b: racks[b] or f"b{b}" for b in sorted(racks)}
    return [[b for b in sorted(racks) if keys[b] == name] for name in sorted(set(keys.values()))]


def _within_caps(replicas: Sequence[int], members: list[list[int]], rf: int) -> bool:
    """The rack rule checked independently of ``ferry.plan.racks`` (support.invariants' caps)."""
    _, caps = rack_caps([len(m) for m in members], rf)
    return all(lo <= sum(b in m for b in replicas) <= hi for m, (lo, hi) in zip(members, caps, strict=True))


def _legal(rnd: random.Random, members: list[list[int]], rf: int, mode: RackMode) -> list[int]:
    """A random full replica set that keeps the rack rule of ``mode``."""
    if mode is RackMode.EVEN:
        return rnd.sample([b for m in members for b in m], rf)
    _, caps = rack_caps([len(m) for m in members], rf)
    counts = [lo for lo, _ in caps]
    while sum(counts) < rf:
        counts[rnd.choice([k for k, (_, hi) in enumerate(caps) if counts[k] < hi])] += 1
    replicas = [b for m, n in zip(members, counts, strict=True) for b in rnd.sample(m, n)]
    rnd.shuffle(replicas)
    return replicas


@dataclass
class Case:
    layout: RackLayout
    members: list[list[int]]
    mode: RackMode
    states: list[PartitionState]
    rf: int
    quota: dict[int, int]


@st.composite
def cases(draw: st.DrawFn, feasible: bool) -> Case:
    """One topic on 2-7 brokers in 0-3 racks; each partition keeps a rack-legal part of its replicas
    (the rest sit on non-target brokers). ``feasible``: the quotas are the loads of a rack-legal full
    placement, so one that meets them exists; else they are random."""
    n = draw(st.integers(2, 7))
    rack_count = draw(st.integers(0, 3))
    racks = {b: f"r{draw(st.integers(0, rack_count - 1))}" if rack_count else None for b in range(n)}
    members = _members(racks)
    mode = draw(st.sampled_from(list(RackMode)))
    rf = draw(st.integers(1, min(3, n)))
    parts = draw(st.integers(1, 8))
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    states = []
    for p in range(parts):
        kept = _legal(rnd, members, rf, mode)[: rnd.randint(0, rf)]
        replicas = kept + list(range(OFF, OFF + rf - len(kept)))
        states.append(partition("t", p, replicas, size=rnd.choice([0, 10, rnd.randint(1, 1000)])))
    if feasible:
        loads = Counter(b for _ in range(parts) for b in _legal(rnd, members, rf, mode))
        quota = {b: loads[b] for b in range(n)}
    else:
        quota = {b: rnd.randint(0, parts) for b in range(n)}
    return Case(RackLayout.of(racks, range(n)), members, mode, states, rf, quota)


def _run(case: Case) -> tuple[TopicWork, int]:
    work = _work(case.states, case.layout.brokers)
    over_quota_drops(work, case.quota)
    return work, place(work, case.layout, case.quota, case.mode)


@SETTINGS
@given(cases(feasible=False))
def test_placement_fills_every_open_slot_with_distinct_target_brokers(case: Case) -> None:
    work, _ = _run(case)
    for slot in work.slots:
        assert slot.open == 0
        assert len(set(slot.replicas)) == case.rf
        assert set(slot.replicas) <= set(case.layout.brokers)
    recount = Counter(b for slot in work.slots for b in slot.replicas)
    assert {b: n for b, n in work.load.items() if n} == dict(recount)


@SETTINGS
@given(cases(feasible=False))
def test_every_replica_above_a_quota_is_a_counted_fallback(case: Case) -> None:
    work, fallbacks = _run(case)
    above = sum(max(0, work.load[b] - limit) for b, limit in case.quota.items())
    assert above <= fallbacks
    if fallbacks == 0:
        assert all(work.load[b] <= limit for b, limit in case.quota.items())


@SETTINGS
@given(cases(feasible=False))
def test_under_strict_no_partition_breaks_its_rack_bounds_without_a_fallback(case: Case) -> None:
    work, fallbacks = _run(case)
    if case.mode is RackMode.STRICT and fallbacks == 0:
        assert all(_within_caps(slot.replicas, case.members, case.rf) for slot in work.slots)


@SETTINGS
@given(cases(feasible=True))
def test_quotas_a_legal_placement_meets_are_met_exactly_and_without_fallback(case: Case) -> None:
    work, fallbacks = _run(case)
    assert fallbacks == 0
    assert all(work.load[b] == limit for b, limit in case.quota.items())
    if case.mode is RackMode.STRICT:
        assert all(_within_caps(slot.replicas, case.members, case.rf) for slot in work.slots)


def test_greedy_step_takes_the_broker_with_most_room() -> None:
    work = _work([partition("t", 0, [OFF])], range(3))
    assert place(work, _no_racks(3), {0: 1, 1: 3, 2: 2}, RackMode.STRICT) == 0
    assert work.slots[0].replicas == [1]
    assert work.slots[0].new == {1}


def test_greedy_step_prefers_the_rack_the_partition_still_needs_over_room() -> None:
    layout = RackLayout.of({0: "a", 1: "a", 2: "b", 3: "b"}, range(4))
    work = _work([partition("t", 0, [0, OFF])], range(4))
    assert place(work, layout, {0: 1, 1: 5, 2: 1, 3: 1}, RackMode.EVEN) == 0
    assert work.slots[0].replicas == [0, 2]


def test_greedy_step_takes_a_fuller_rack_when_the_emptier_one_has_no_room() -> None:
    layout = RackLayout.of({0: "a", 1: "a", 3: "a", 2: "b"}, range(4))
    work = _work([partition("t", 0, [0, OFF, OFF + 1])], range(4))
    assert place(work, layout, {0: 1, 1: 1, 2: 0, 3: 1}, RackMode.EVEN) == 0
    assert work.slots[0].replicas == [0, 1, 3]


@SETTINGS
@given(st.dictionaries(st.integers(0, 40), st.integers(1, 6), max_size=25), st.data())
def test_the_room_index_ranks_by_most_room_then_id_as_brokers_take_replicas(
    rooms: dict[int, int], data: st.DataObject
) -> None:
    index, left = Room(dict(rooms)), dict(rooms)
    while True:
        assert list(index.ranked()) == sorted(left, key=lambda b: (-left[b], b))
        if not left:
            return
        broker = data.draw(st.sampled_from(sorted(left)))
        index.take(broker)
        left[broker] -= 1
        if left[broker] == 0:
            del left[broker]


@SETTINGS
@given(
    st.integers(2, 12),
    st.integers(1, 4),
    st.sampled_from(list(RackMode)),
    st.integers(1, 3),
    st.data(),
)
def test_the_greedy_step_chooses_the_lowest_score_of_every_broker_with_room(
    brokers: int, rack_count: int, mode: RackMode, rf: int, data: st.DataObject
) -> None:
    """The walk in rank order stops early; the choice is that of scoring every broker with room by
    (replicas of the partition in its rack, least room, id) among racks that may take one."""
    racks = {b: f"r{data.draw(st.integers(0, rack_count - 1))}" for b in range(brokers)}
    layout = RackLayout.of(racks, range(brokers))
    rf = min(rf, brokers)
    held = data.draw(st.lists(st.sampled_from(range(brokers)), max_size=rf - 1, unique=True))
    rooms = data.draw(st.dictionaries(st.sampled_from(range(brokers)), st.integers(1, 5)))
    slot = Slot(partition("t", 0, [*held, *range(OFF, OFF + rf - len(held))]), rf, list(held))
    counts = layout.counts(slot.replicas)
    rack_ok = racks_open(layout, mode, rf, counts)
    scored = [
        (counts[layout.rack_of[b]], -room, b)
        for b, room in rooms.items()
        if rack_ok[layout.rack_of[b]] and b not in slot.replicas
    ]
    expected = min(scored)[2] if scored else None
    assert _best(slot, layout, Room(dict(rooms)), mode) == expected


def test_strict_goes_over_quota_where_even_shares_a_rack() -> None:
    layout = RackLayout.of({0: "a", 1: "a", 2: "b"}, range(3))
    quota = {0: 1, 1: 1, 2: 0}
    even = _work([partition("t", 0, [0, OFF])], range(3))
    assert place(even, layout, quota, RackMode.EVEN) == 0
    assert even.slots[0].replicas == [0, 1]
    strict = _work([partition("t", 0, [0, OFF])], range(3))
    assert place(strict, layout, quota, RackMode.STRICT) == 1
    assert strict.slots[0].replicas == [0, 2]


def test_a_slot_the_greedy_step_cannot_place_pushes_out_a_new_replica_not_over_quota() -> None:
    # The big partition goes first and takes broker 0 (tie on room, lowest id); the small one may
    # only use broker 0 (it holds 1), so it takes 0 and the big one's new replica moves on to 1.
    big = partition("t", 0, [OFF], size=100)
    small = partition("t", 1, [1, OFF], size=1)
    work = _work([big, small], range(2))
    assert place(work, _no_racks(2), {0: 1, 1: 2}, RackMode.STRICT) == 0
    assert [s.replicas for s in work.slots] == [[1], [1, 0]]
    assert work.slots[0].new == {1}
    assert work.slots[1].new == {0}
    assert work.load == Counter({0: 1, 1: 2})


def test_a_dropped_replica_returns_and_pushes_out_a_kept_one_for_no_extra_move() -> None:
    # Broker 1 is over its quota and drops the small partition, which then needs a broker other
    # than 2: it returns to 1 and the kept replica there moves to 2 (one move). Taking broker 0 and
    # pushing out the kept replica there would cost two.
    small = partition("t", 0, [1, 2], size=1)
    on_one = partition("t", 1, [1], size=100)
    on_zero = partition("t", 2, [0], size=100)
    work = _work([small, on_one, on_zero], range(3))
    quota = {0: 1, 1: 1, 2: 2}
    assert over_quota_drops(work, quota) == 1
    assert work.slots[0].dropped == {1}
    assert place(work, _no_racks(3), quota, RackMode.STRICT) == 0
    assert [sorted(s.replicas) for s in work.slots] == [[1, 2], [2], [0]]
    assert work.slots[0].returned == {1} and not work.slots[0].dropped
    assert work.slots[1].new == {2}
    assert sum(len(set(s.replicas) - set(s.state.replicas)) for s in work.slots) == 1


def test_a_kept_replica_is_pushed_out_only_when_no_free_path_exists() -> None:
    # Partition 0 must hold both brokers; broker 1 is full with partition 1's kept replica, which
    # no free path may move: the costly path moves it (one more move) instead of a fallback.
    needs_both = partition("t", 0, [OFF, OFF + 1], size=1)
    kept = partition("t", 1, [1], size=100)
    work = _work([needs_both, kept], range(2))
    assert place(work, _no_racks(2), {0: 2, 1: 1}, RackMode.STRICT) == 0
    assert sorted(work.slots[0].replicas) == [0, 1]
    assert work.slots[1].replicas == [0]
    assert work.load == Counter({0: 2, 1: 1})


def test_without_any_path_a_slot_goes_to_the_least_over_broker_and_counts_as_a_fallback() -> None:
    states = [partition("t", 0, [OFF, OFF + 1]), partition("t", 1, [OFF, OFF + 1]), partition("t", 2, [OFF])]
    work = _work(states, range(3))
    # 5 replicas, quotas for 3. Partition 1 gets broker 2, then may only use 0 or 1 (equally full):
    # the lower id goes over. Partition 2 may use any broker: one of those not yet over, 1.
    fallbacks = place(work, _no_racks(3), {0: 1, 1: 1, 2: 1}, RackMode.STRICT)
    assert fallbacks == 2
    assert [s.replicas for s in work.slots] == [[0, 1], [2, 0], [1]]
    assert work.load == Counter({0: 2, 1: 2, 2: 1})


def test_placement_leaves_full_partitions_alone() -> None:
    states = [partition("t", 0, [0, 1]), partition("t", 1, [1, 2])]
    work = _work(states, range(3))
    assert place(work, _no_racks(3), {0: 1, 1: 2, 2: 1}, RackMode.STRICT) == 0
    assert [s.replicas for s in work.slots] == [[0, 1], [1, 2]]
    assert all(not s.new for s in work.slots)
