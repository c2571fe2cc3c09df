"""What one topic asks of the balance pass (topic_demand), checked partition by partition against the
rules each TopicDemand field states; and the sums over many demands."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.builders import broker, partition, snapshot
from support.clusters import unequal_racks

from ferry.model import ClusterSnapshot, Goal
from ferry.model.goal import RackMode
from ferry.plan.prepare.demand import FreeLayouts, TopicDemand, base_loads, distinct_bases, extra_bounds
from ferry.plan.prepare.pinned import is_pinned, is_plain_shrink
from ferry.plan.prepare.quotas import topic_quota
from ferry.plan.prepare.scope import in_scope, target_brokers
from ferry.plan.prepare.topic_demand import topic_demand
from ferry.plan.racks import RackLayout
from ferry.plan.topic_work import TopicWork

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True)


@dataclass
class Case:
    layout: RackLayout
    work: TopicWork
    demand: TopicDemand
    mode: RackMode


def prepared(snap: ClusterSnapshot, goal: Goal) -> list[Case]:
    """Every topic in scope, prepared as the planner prepares it (over one layout)."""
    layout = RackLayout.of(snap.racks, target_brokers(snap, goal))
    cases = []
    for parts in in_scope(snap, goal):
        rfs = [goal.replication_factors.get(p.tp.topic, p.replication_factor) for p in parts]
        work = TopicWork.start(parts[0].tp.topic, parts, rfs, layout.position)
        demand = topic_demand(work, layout, topic_quota(layout, rfs, goal.rack_mode), goal.rack_mode)
        cases.append(Case(layout, work, demand, goal.rack_mode))
    return cases


@st.composite
def topics(draw: st.DrawFn) -> Case:
    """One topic over racks of 1-3 brokers, some brokers possibly removed, factors possibly changed,
    replicas placed at random (rack rule ignored) with partial in-sync sets and unknown sizes."""
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    racks = [f"r{k}" for k, n in enumerate(sizes) for _ in range(n)]
    brokers = [broker(b, rack) for b, rack in enumerate(racks)]
    everyone = [b.id for b in brokers]
    removed = draw(st.sets(st.sampled_from(everyone), max_size=min(2, len(everyone) - 1)))
    targets = len(everyone) - len(removed)
    parts = []
    for p in range(draw(st.integers(1, 6))):
        replicas = draw(
            st.lists(st.sampled_from(everyone), min_size=1, max_size=min(4, targets), unique=True)
        )
        isr = draw(st.none() | st.lists(st.sampled_from(replicas), unique=True))
        size = draw(st.none() | st.integers(0, 100))
        parts.append(partition("t", p, replicas, size=size, isr=isr))
    factor = draw(st.none() | st.integers(1, targets))
    goal = Goal(
        brokers=frozenset(everyone) - removed,
        replication_factors={} if factor is None else {"t": factor},
        rack_mode=draw(st.sampled_from(RackMode)),
    )
    (case,) = prepared(snapshot(brokers, parts), goal)
    return case


def kinds(case: Case) -> list[str]:
    """Per partition, as the rules say: 'shrink', 'pinned' or 'free'."""
    mixed = len({slot.rf for slot in case.work.slots}) > 1
    out = []
    for slot in case.work.slots:
        counts = case.layout.counts(slot.replicas)
        if len(slot.replicas) > slot.rf and is_plain_shrink(slot, case.layout, case.mode):
            out.append("shrink")
        elif is_pinned(slot.rf, len(slot.state.replicas), counts, case.layout, case.mode, mixed=mixed):
            out.append("pinned")
        else:
            out.append("free")
    return out


def per_broker(case: Case, which: Sequence[int]) -> tuple[int, ...]:
    """Per broker (layout order), how many of the partitions at ``which`` hold a replica there."""
    slots = [case.work.slots[j] for j in which]
    return tuple(sum(b in slot.replicas for slot in slots) for b in case.layout.brokers)


@SETTINGS
@given(topics())
def test_held_and_free_count_each_brokers_replicas_and_those_of_partitions_left_free(case: Case) -> None:
    kind = kinds(case)
    everything = range(len(kind))
    assert case.demand.held == per_broker(case, everything)
    assert case.demand.free == per_broker(case, [j for j in everything if kind[j] == "free"])
    assert case.demand.partitions == len(case.work.slots)
    assert case.demand.single_replica == all(slot.rf == 1 for slot in case.work.slots)


@SETTINGS
@given(topics())
def test_every_partition_is_pinned_shrinking_or_free_and_pinned_ones_are_listed_whole(case: Case) -> None:
    kind = kinds(case)
    slots = case.work.slots
    pinned = [j for j, k in enumerate(kind) if k == "pinned"]
    assert [pin.index for pin in case.demand.pinned] == pinned
    assert case.demand.sizes == tuple(slots[j].state.size for j in pinned)
    for pin in case.demand.pinned:
        slot = slots[pin.index]
        assert (pin.replicas, pin.rf) == (tuple(slot.replicas), slot.rf)
        assert pin.bounds == (None if case.mode is RackMode.EVEN else case.layout.bounds(slot.rf))
        isr = slot.state.isr
        lowered = slot.rf < slot.state.replication_factor and isr is not None
        assert pin.in_sync == (tuple(b for b in slot.replicas if b in isr) if lowered and isr else ())
    grouped = {(i, g.replicas, g.rf) for g in case.demand.shrink_groups for i, _ in g.members}
    shrinking = {
        (j, tuple(sorted(slots[j].replicas)), slots[j].rf) for j, k in enumerate(kind) if k == "shrink"
    }
    assert grouped == shrinking


@SETTINGS
@given(topics())
def test_rack_rows_sum_the_free_partitions_bounds_open_slots_and_room(case: Case) -> None:
    layout, demand = case.layout, case.demand
    racks = range(len(layout.members))
    free = [slot for slot, k in zip(case.work.slots, kinds(case), strict=True) if k == "free"]
    if case.mode is RackMode.EVEN:
        assert demand.rack_floor == (0,) * len(racks)
        assert demand.rack_open == ()
        assert demand.rack_room == ()
        return
    assert demand.rack_floor == tuple(sum(layout.bounds(s.rf)[k][0] for s in free) for k in racks)
    opened = []
    for k in racks:
        room = [layout.bounds(s.rf)[k][1] - layout.counts(s.replicas)[k] for s in free]
        opened.append(sum(min(s.open, max(0, r)) for s, r in zip(free, room, strict=True)))
    assert demand.rack_open == tuple(opened)
    # Once it leaves broker b, a partition has room in b's rack, and in any other below its bound.
    for b, row in zip(layout.brokers, demand.rack_room, strict=True):
        holding = [s for s in free if b in s.replicas]
        assert row == tuple(
            sum(
                k == layout.rack_of[b] or layout.counts(s.replicas)[k] < layout.bounds(s.rf)[k][1]
                for s in holding
            )
            for k in racks
        )


@SETTINGS
@given(topics())
def test_shed_is_the_replica_an_extra_would_let_a_broker_keep_and_layouts_cover_posable_topics(
    case: Case,
) -> None:
    layout, demand, slots = case.layout, case.demand, case.work.slots
    for i, b in enumerate(layout.brokers):
        held = sorted(slot.state.size for slot in slots if b in slot.replicas)
        over = len(held) - demand.quota.base[i]
        # Dropping the smallest first, the largest it drops is what one extra replica saves.
        assert demand.shed[i] == (held[over - 1] if over > 0 else 0)
    kind = kinds(case)
    posable = (
        case.mode is RackMode.STRICT
        and "shrink" not in kind
        and not any(pin.in_sync for pin in demand.pinned)
    )
    if not posable:
        assert demand.layouts == FreeLayouts()
        return
    assert len(demand.layouts) == len(slots)
    for j, slot in enumerate(slots):
        assert demand.layouts.held(j) == tuple(layout.position[b] for b in slot.replicas)
        assert (demand.layouts.rf[j], demand.layouts.size[j]) == (slot.rf, slot.state.size)
    assert demand.exact == (not demand.single_replica)


def test_replicas_on_a_removed_broker_count_for_no_one_and_leave_the_partition_free() -> None:
    snap = snapshot(
        [broker(1, "a"), broker(2, "b"), broker(3, "c"), broker(4, "a")],
        [partition("t", 0, [1, 2, 3]), partition("t", 1, [4, 2, 3])],
    )
    (case,) = prepared(snap, Goal(brokers=frozenset({1, 2, 3})))
    assert case.layout.brokers == (1, 2, 3)
    assert case.demand.held == case.demand.free == (1, 2, 2)
    assert case.demand.pinned == ()
    assert case.demand.rack_floor == (2, 2, 2)  # RF 3 over three racks: one each, per partition
    assert case.demand.rack_open == (1, 0, 0)  # partition 1 lacks its replica in rack a


def test_lowering_the_factor_pins_every_partition_with_its_in_sync_replicas() -> None:
    snap = snapshot(
        [broker(1, "a"), broker(2, "b"), broker(3, "a"), broker(4, "b")],
        [partition("t", 0, [1, 2, 3], size=7, isr=[1, 2]), partition("t", 1, [2, 3, 4], size=5)],
    )
    (case,) = prepared(snap, Goal(replication_factors={"t": 2}))
    first, second = case.demand.pinned
    assert (first.index, first.rf, first.in_sync) == (0, 2, (1, 2))
    assert (second.index, second.in_sync) == (1, ())  # no in-sync set known
    assert case.demand.sizes == (7, 5)
    assert case.demand.free == (0, 0, 0, 0)
    assert case.demand.held == (1, 2, 2, 1)
    assert case.demand.layouts == FreeLayouts()  # a lowered factor with in-sync replicas is not posable


def test_one_shape_is_pinned_in_a_topic_of_mixed_factors_and_free_in_a_plain_one_on_one_layout() -> None:
    snap = snapshot(
        [broker(1, "a"), broker(2, "b"), broker(3, "c")],
        [
            partition("plain", 0, [1, 2, 3]),
            partition("mixed", 0, [1, 2, 3]),
            partition("mixed", 1, [2, 3]),
        ],
    )
    mixed, plain = prepared(snap, Goal())
    assert mixed.layout is plain.layout  # shapes are classified once per layout
    assert [pin.index for pin in mixed.demand.pinned] == [0]  # RF 3 over three racks owes each rack one
    assert plain.demand.pinned == ()
    assert plain.demand.free == (1, 1, 1)


def test_base_loads_extra_bounds_and_distinct_bases_read_every_topics_quota() -> None:
    snap = unequal_racks((2, 2, 1), [(4, 2), (4, 2), (3, 3), (1, 1)], seed=1)
    cases = prepared(snap, Goal())
    demands = [c.demand for c in cases]
    brokers = len(cases[0].layout.brokers)
    assert base_loads(brokers, demands).tolist() == np.sum([d.quota.base for d in demands], axis=0).tolist()
    assert base_loads(brokers, []).tolist() == [0] * brokers
    distinct, rows = distinct_bases(demands)
    assert [tuple(distinct[r]) for r in rows] == [d.quota.base for d in demands]
    assert len(distinct) == len({d.quota.base for d in demands}) < len(demands)  # the two (4, 2) topics
    bounds, extras = extra_bounds(demands, 3)
    assert bounds.tolist() == [[list(row) for row in d.quota.rack_extras] for d in demands]
    assert extras.tolist() == [d.quota.extras for d in demands]


def test_free_layouts_slice_each_partitions_positions() -> None:
    layouts = FreeLayouts(rf=(2, 1, 3), size=(5, 6, 7), starts=(0, 2, 2, 5), replicas=(0, 3, 1, 2, 4))
    assert len(layouts) == 3
    assert [layouts.held(j) for j in range(3)] == [(0, 3), (), (1, 2, 4)]
    assert len(FreeLayouts()) == 0
