"""A partition's change cut into units: each unit one replica, every replica set along the way no
further outside the rack bounds than the one before it, and all units together the whole change."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.model import Broker, PartitionState, TopicPartition
from ferry.model.goal import RackMode
from ferry.plan.budget.units import Unit, step_replicas, units_of
from ferry.plan.racks import RackLayout


@st.composite
def changes(draw: st.DrawFn) -> tuple[RackLayout, dict[int, str | None], tuple[int, ...], tuple[int, ...]]:
    """A rack layout of target brokers and every broker's rack, a start replica set (on target
    brokers and on brokers leaving the cluster) and a target set, 1 to 5 replicas each."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=2, max_size=4))
    racks = {b: f"r{k}" for k, size in enumerate(sizes) for b in range(sum(sizes[:k]), sum(sizes[: k + 1]))}
    targets = sorted(racks)
    removed = list(range(len(targets), len(targets) + draw(st.integers(0, 2))))
    racks.update({b: "gone" for b in removed})
    start = draw(st.lists(st.sampled_from(targets + removed), min_size=1, max_size=5, unique=True))
    target = draw(st.lists(st.sampled_from(targets), min_size=1, max_size=5, unique=True))
    return RackLayout.of(racks, targets), racks, tuple(start), tuple(target)


@settings(max_examples=400, deadline=None)
@given(changes(), st.sampled_from([RackMode.STRICT, RackMode.EVEN]))
def test_units_get_no_further_outside_the_rack_bounds_and_add_up_to_the_change(
    change: tuple[RackLayout, dict[int, str | None], tuple[int, ...], tuple[int, ...]], mode: RackMode
) -> None:
    layout, racks, start, target = change
    state = PartitionState(TopicPartition("t", 0), start, start[0], start, 1_000)
    brokers = {b: Broker(b, rack) for b, rack in racks.items()}
    units = units_of(0, (state, target), layout, mode, brokers)
    assert [u.order for u in units] == list(range(len(units)))
    assert sum(u.moves for u in units) == len(set(target) - set(start))
    assert sum(u.bytes for u in units) == 1_000 * len(set(target) - set(start))
    held = state.replicas
    for k in range(len(units)):
        after = step_replicas(state, target, units[: k + 1])
        assert len(set(after)) == len(after)
        if len(units) > 1:  # cut into single replicas: each may only keep or narrow the distance
            assert len(units[k].joins) <= 1 and len(units[k].leaves) <= 1
            if mode is RackMode.STRICT:
                inside = [b for b in after if b in layout.rack_of]
                before = [b for b in held if b in layout.rack_of]
                assert layout.outside(inside) <= layout.outside(before)
        held = after
    assert set(held) == set(target) or not units
    assert bool(units) == (set(start) != set(target))


@settings(max_examples=400, deadline=None)
@given(changes(), st.data(), st.sampled_from([RackMode.STRICT, RackMode.EVEN]))
def test_a_change_of_a_shape_seen_before_is_cut_as_if_it_came_first(
    change: tuple[RackLayout, dict[int, str | None], tuple[int, ...], tuple[int, ...]],
    data: st.DataObject,
    mode: RackMode,
) -> None:
    """The order of a change's units is kept per shape of change (the racks involved): a partition
    planned after others, of its shape or not, gets the units it would get first."""
    layout, racks, start, target = change
    brokers = {b: Broker(b, rack) for b, rack in racks.items()}
    by_rack: dict[str | None, list[int]] = {}
    for b, rack in racks.items():
        by_rack.setdefault(rack, []).append(b)
    # The same brokers' racks, other brokers of them: the shape of the first change.
    other: dict[int, int] = {}
    for members in by_rack.values():
        other.update(zip(members, data.draw(st.permutations(members)), strict=True))
    relabelled = tuple(other[b] for b in start), tuple(other[b] for b in target)
    # Another change on the same brokers, of whatever shape.
    anywhere, targets = st.sampled_from(sorted(racks)), st.sampled_from(layout.brokers)
    drawn = tuple(data.draw(st.lists(anywhere, min_size=1, max_size=5, unique=True)))
    drawn_to = tuple(data.draw(st.lists(targets, min_size=1, max_size=5, unique=True)))

    def units(index: int, replicas: tuple[int, ...], to: tuple[int, ...], where: RackLayout) -> list[Unit]:
        state = PartitionState(TopicPartition("t", index), replicas, replicas[0], replicas, 1_000)
        return units_of(index, (state, to), where, mode, brokers)

    units(0, start, target, layout)  # its shape is now known to the layout
    for index, (replicas, to) in enumerate([relabelled, (drawn, drawn_to)], start=1):
        fresh = RackLayout.of(racks, layout.brokers)
        assert units(index, replicas, to, layout) == units(index, replicas, to, fresh)
