"""Replacing brokers one for one: only the old brokers' replicas move, to the new broker where the
rack rule allows, else to the least-loaded broker that may take them."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from support.builders import broker, partition, snapshot

from ferry.model import ClusterSnapshot, Goal, RackMode
from ferry.model.plan import Move
from ferry.plan.place.replace import Replaced, plan_replace

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)


def _after(done: Replaced) -> dict[str, tuple[int, ...]]:
    return {str(state.tp): reps for state, reps in done.planned}


def test_replace_moves_only_the_old_brokers_replicas_and_keeps_their_position() -> None:
    before = snapshot(
        [1, 2, 3, 4, 5],
        [partition("t", 0, [3, 1, 2]), partition("t", 1, [1, 3, 4]), partition("t", 2, [1, 2, 4])],
    )
    done = plan_replace(before, Goal(replace=((3, 5),)))
    # A preferred leader on the old broker becomes a preferred leader on the new one.
    assert _after(done) == {"t-0": (5, 1, 2), "t-1": (1, 5, 4), "t-2": (1, 2, 4)}
    assert done.targets == [1, 2, 4, 5]
    assert done.bound == 2
    assert [(m.tp.partition, m.original, m.target) for m in done.moves] == [
        (0, (3, 1, 2), (5, 1, 2)),
        (1, (1, 3, 4), (1, 5, 4)),
    ]


def test_a_replica_goes_elsewhere_when_the_new_broker_already_holds_the_partition() -> None:
    others = [partition("u", 0, [3, 4]), partition("u", 1, [3, 5]), partition("u", 2, [3])]
    before = snapshot([1, 2, 3, 4, 5], [partition("t", 0, [1, 2]), *others])
    done = plan_replace(before, Goal(replace=((1, 2),)))
    # Broker 3 holds three replicas, 4 and 5 one each: the lower id of the least loaded wins.
    assert _after(done)["t-0"] == (4, 2)


def test_fallback_destinations_count_the_replicas_already_sent_there() -> None:
    before = snapshot([1, 2, 3, 4], [partition("t", 0, [1, 2]), partition("t", 1, [2, 1])])
    done = plan_replace(before, Goal(replace=((1, 2),)))
    assert _after(done) == {"t-0": (3, 2), "t-1": (2, 4)}


def _three_racks() -> ClusterSnapshot:
    # Racks a: 1, 2; b: 3, 4, 7 (7 is empty); c: 5, 6. Old 1 (rack a) is replaced by new 3 (rack b),
    # but the partition already has a replica in rack b.
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 7: "b", 5: "c", 6: "c"}
    load = [partition("u", 0, [2, 5]), partition("u", 1, [2, 6]), partition("u", 2, [5])]
    return snapshot([broker(b, r) for b, r in racks.items()], [partition("t", 0, [1, 4]), *load])


def test_under_strict_a_replica_skips_a_new_broker_whose_rack_is_full() -> None:
    done = plan_replace(_three_racks(), Goal(replace=((1, 3),)))
    # 7 holds nothing but shares rack b with 4; 6 is the least loaded broker of an allowed rack.
    assert _after(done)["t-0"] == (6, 4)


def test_under_even_a_replica_goes_to_the_new_broker_even_sharing_its_rack() -> None:
    done = plan_replace(_three_racks(), Goal(replace=((1, 3),), rack_mode=RackMode.EVEN))
    assert _after(done)["t-0"] == (3, 4)


def test_replace_leaves_topics_out_of_scope_alone() -> None:
    before = snapshot([1, 2, 3], [partition("t", 0, [1, 2]), partition("x", 0, [1, 2])])
    done = plan_replace(before, Goal(replace=((1, 3),), exclude_topics=frozenset({"x"})))
    assert _after(done) == {"t-0": (3, 2)}
    assert done.bound == 1
    assert [m.tp.topic for m in done.moves] == ["t"]


def test_two_pairs_replace_each_old_broker_by_its_own_new_one() -> None:
    before = snapshot([1, 2, 3, 4, 5, 6], [partition("t", 0, [1, 2, 3]), partition("t", 1, [3, 2, 4])])
    done = plan_replace(before, Goal(replace=((1, 5), (2, 6))))
    assert _after(done) == {"t-0": (5, 6, 3), "t-1": (3, 6, 4)}
    assert done.targets == [3, 4, 5, 6]
    assert done.bound == 3


def test_replace_still_uses_the_new_broker_for_a_partition_already_outside_its_rack_bounds() -> None:
    racks = {1: "a", 2: "a", 7: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    busy = [partition("u", 0, [4, 5]), partition("u", 1, [4, 6])]
    before = snapshot([broker(b, r) for b, r in racks.items()], [partition("t", 0, [1, 2, 3]), *busy])
    done = plan_replace(before, Goal(replace=((3, 4),)))
    # Old 3 and new 4 share rack b, which then still holds one replica: nothing stops the move to 4.
    # Not to 7, the least loaded broker: a third replica in rack a.
    assert _after(done)["t-0"] == (1, 2, 4)


@st.composite
def replacements(draw: st.DrawFn) -> tuple[ClusterSnapshot, Goal]:
    """3-8 brokers in 0-3 racks, 1-3 topics, and 1-2 pairs whose new broker is a spare (existing or
    fresh) broker; one topic may be out of scope."""
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(3, 8))
    rack_count = draw(st.integers(0, 3))
    fresh = draw(st.integers(0, 2))
    ids = list(range(n + fresh))
    nodes = [broker(b, f"r{rnd.randrange(rack_count)}" if rack_count else None) for b in ids]
    parts = []
    for t in range(draw(st.integers(1, 3))):
        rf = rnd.randint(1, min(3, n - 2))
        parts += [partition(f"t{t}", p, rnd.sample(range(n), rf), size=p) for p in range(rnd.randint(1, 6))]
    olds = rnd.sample(range(n), draw(st.integers(1, 2)))
    news = [rnd.choice([b for b in ids if b not in olds]) for _ in olds]
    mode = draw(st.sampled_from(list(RackMode)))
    excluded = frozenset({"t0"}) if draw(st.booleans()) else frozenset()
    goal = Goal(replace=tuple(zip(olds, news, strict=True)), rack_mode=mode, exclude_topics=excluded)
    return snapshot(nodes, parts), goal


@SETTINGS
@given(replacements())
def test_replace_changes_exactly_the_old_replicas_in_place_and_nothing_else(
    case: tuple[ClusterSnapshot, Goal],
) -> None:
    before, goal = case
    done = plan_replace(before, goal)
    olds = {old for old, _ in goal.replace}
    news = dict(goal.replace)
    assert done.targets == sorted((set(before.broker_ids) - olds) | set(news.values()))
    scope = [p for p in before.partitions if goal.in_scope(p.tp.topic)]
    assert [state for state, _ in done.planned] == scope
    assert done.bound == sum(b in olds for p in scope for b in p.replicas)
    for state, reps in done.planned:
        assert len(reps) == len(set(reps)) == len(state.replicas)
        for was, now in zip(state.replicas, reps, strict=True):
            assert now == was if was not in olds else now in done.targets
        on_old = [b for b in state.replicas if b in olds]
        if goal.rack_mode is RackMode.EVEN and len(on_old) == 1:
            # Without racks to respect, only a partition already on the new broker goes elsewhere.
            went_new = reps[state.replicas.index(on_old[0])] == news[on_old[0]]
            assert went_new == (news[on_old[0]] not in state.replicas)
    changed = [(s, reps) for s, reps in done.planned if reps != s.replicas]
    assert done.moves == [Move(s.tp, s.replicas, reps, s.size) for s, reps in changed]
