"""The balance program's pinned partitions (ferry.plan.balance.program: pinned_rows, pinned_set): the
columns and rows posed for a topic at once equal those posed partition by partition, and what a
solution keeps of them and the rack room it leaves are read as a loop over them would."""

from __future__ import annotations

from array import array

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.clusters import generated

from ferry.model import ClusterSnapshot, Goal, RackMode
from ferry.plan.balance.program.pinned_rows import (
    InRack,
    _one_by_one,
    binding_floors,
    owes_plainly,
    pinned_columns,
)
from ferry.plan.balance.program.pinned_set import PinnedSet
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.planner import in_scope, prepare_topic, target_brokers
from ferry.plan.prepare.demand import Pinned, TopicDemand
from ferry.plan.racks import RackLayout

SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
ANY_RACKS = st.integers(0, 4)


@st.composite
def posed(draw: st.DrawFn, racks: st.SearchStrategy[int] = ANY_RACKS) -> tuple[RackLayout, list[TopicDemand]]:
    """Demands of skewed clusters, where many partitions are pinned: two replicas in a rack, or a
    factor lowered."""
    snapshot: ClusterSnapshot = generated(
        brokers=draw(st.integers(3, 9)),
        racks=draw(racks),
        topics=draw(st.integers(1, 4)),
        partitions=draw(st.integers(1, 12)),
        rf=draw(st.integers(1, 3)),
        seed=draw(st.integers(0, 999)),
        skew=draw(st.sampled_from([0.0, 2.0, 4.0])),
    )
    lowered = {p.tp.topic: max(1, len(p.replicas) - 1) for p in snapshot.partitions if draw(st.booleans())}
    goal = Goal(replication_factors=lowered, rack_mode=draw(st.sampled_from(list(RackMode))))
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    return layout, retarget(layout, [prepare_topic(p, goal, layout)[1] for p in in_scope(snapshot, goal)])


def _posed(state: ProgramState) -> dict[str, list[object]]:
    held = {
        name: getattr(state, name)
        for name in ("rows", "cols", "vals", "lows", "highs", "upper", "gain", "size", "implied", "kinds")
    }
    held["grouped"] = [*state.grouped[0], -1, *state.grouped[1]]
    held["kept"] = [*state.kept.topic, -1, *state.kept.pos, -1, *state.kept.col]
    return {k: list(v) if isinstance(v, array | list) else v for k, v in held.items()}


# Many draws admit no topic (an out-of-sync replica, a rack's lower bound below its upper one): filtered
# out, and more drawn. Three racks at three replicas owe every rack one; two racks owe a lower bound
# below the upper one (not admitted) at three replicas.
@settings(SETTINGS, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(posed(st.sampled_from([0, 2, 3, 4, 5])))
def test_pinned_columns_in_bulk_equal_those_posed_one_by_one(
    case: tuple[RackLayout, list[TopicDemand]],
) -> None:
    layout, demands = case
    bulk, single = (ProgramState(layout, demands, room_rows=set()) for _ in range(2))
    admitted = 0
    for t, d in enumerate(demands):
        on_broker, in_rack, kept_in_rack, room_cols = pinned_columns(bulk, t, d)
        if not d.pinned:
            continue
        admitted += int(owes_plainly(bulk, t, d))
        floors = {k: InRack() for k in binding_floors(layout, d)}
        assert (on_broker, kept_in_rack, room_cols) == _one_by_one(single, t, d, floors)
        assert list(in_rack.items()) == list(floors.items())  # the capacity rows follow this order
        mine, theirs = bulk.pinned[t], single.pinned[t]
        assert mine is not None and theirs is not None
        assert mine.cols.tolist() == theirs.cols.tolist() and mine.pins == theirs.pins
    assume(admitted)
    assert _posed(bulk) == _posed(single)


@SETTINGS
@given(posed(), st.integers(0, 2**32 - 1))
def test_a_solutions_kept_replicas_and_rack_room_read_as_a_loop_over_partitions_would(
    case: tuple[RackLayout, list[TopicDemand]], seed: int
) -> None:
    layout, demands = case
    state = ProgramState(layout, demands)
    for t, d in enumerate(demands):
        pinned_columns(state, t, d)
    x = np.random.default_rng(seed).integers(0, 2, len(state.upper)).astype(float)
    racks = len(layout.members)
    sets = [pins for pins in state.pinned if pins is not None]
    assume(sets)
    for pins in sets:
        need, avail = [0.0] * racks, [0.0] * racks
        decided = {}
        for j, pin in enumerate(pins.pins):
            kept = {int(b): x[c] for b, c, p in zip(pins.brokers, pins.cols, pins.pin, strict=True) if p == j}
            decided[pin.index] = frozenset(b for b, v in kept.items() if v > 0.5)
            for b, v in kept.items():
                need[layout.rack_of[b]] += v
            if pin.bounds is not None:
                for r, (_, hi) in enumerate(pin.bounds):
                    in_r = sum(v for b, v in kept.items() if layout.rack_of[b] == r)
                    avail[r] += max(0.0, min(pin.rf - sum(kept.values()), hi - in_r))
        kept_by_rack, room = pins.room(x)
        assert pins.kept(x) == decided
        assert kept_by_rack.tolist() == need and room.tolist() == avail


def test_only_partitions_that_racks_bound_leave_rack_room() -> None:
    layout = RackLayout.of({1: "a", 2: "a", 3: "b", 4: "b"}, [1, 2, 3, 4])
    bounded = Pinned(0, (1, 2, 3), 2, layout.bounds(2))
    even = Pinned(1, (3, 4), 2, None)
    pins = PinnedSet.of([bounded, even], np.arange(5), layout)
    x = np.array([1.0, 0.0, 0.0, 0.0, 0.0])
    kept, room = pins.room(x)
    # The bounded partition keeps 1 in rack a, so one open slot, with room in rack b only; the
    # even one has two open slots but no rack bound to leave room under.
    assert kept.tolist() == [1.0, 0.0] and room.tolist() == [0.0, 1.0]
    assert pins.kept(x) == {0: frozenset({1}), 1: frozenset()}
