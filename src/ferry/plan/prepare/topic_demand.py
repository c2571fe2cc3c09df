"""What one topic asks of the global balance pass (:class:`ferry.plan.prepare.demand.TopicDemand`).

Most of it depends on a partition's *shape* only: its replication factor now and planned, and how
many of its replicas each rack holds. A topic has few shapes however many partitions it has (a
rack-clean RF 3 topic over 10 racks: a handful), so each shape is classified once per topic, not
once per partition.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

from ferry.model.cluster import PartitionState
from ferry.model.goal import RackMode
from ferry.plan.prepare.demand import FreeLayouts, Pinned, TopicDemand
from ferry.plan.prepare.pinned import is_pinned, is_plain_shrink
from ferry.plan.prepare.quotas import TopicQuota
from ferry.plan.prepare.shrink_groups import groups
from ferry.plan.racks import RackLayout
from ferry.plan.topic_work import TopicWork

Shape = tuple[int, int, tuple[int, ...]]
"""Planned replication factor, current replication factor, replicas per rack."""


@dataclass(frozen=True, slots=True)
class Profile:
    """What a shape contributes, as a free partition, to the per-rack figures of a demand."""

    pinned: bool
    floor: tuple[int, ...]
    """Per rack, its lower bound."""
    opened: tuple[int, ...]
    """Per rack, new replicas it could take there without dropping any."""
    full: tuple[int, ...]
    """Racks at their upper bound: leaving a broker elsewhere gives it no room there."""


def topic_demand(work: TopicWork, layout: RackLayout, quota: TopicQuota, mode: RackMode) -> TopicDemand:
    racks = len(layout.members)
    # Per broker holding a replica of the topic only: a topic of a few partitions touches few of
    # many brokers, and the per-broker figures of the others are zeros (filled in at the end).
    free: dict[int, int] = {}
    mixed = len({s.rf for s in work.slots}) > 1
    strict = mode is RackMode.STRICT
    pinned, sizes = [], []
    # Per set of full racks (few per topic), the free partitions' replicas per broker.
    by_full: dict[tuple[int, ...], dict[int, int]] = {}
    shrinking: list[tuple[int, tuple[int, ...], int, int]] = []
    profiles: dict[Shape, Profile] = {}
    free_shapes: Counter[Shape] = Counter()
    for index, slot in enumerate(work.slots):
        replicas = slot.replicas
        if len(replicas) > slot.rf and is_plain_shrink(slot, layout, mode):
            shrinking.append((index, tuple(replicas), slot.rf, slot.state.size))
            continue
        shape = (slot.rf, len(slot.state.replicas), tuple(layout.counts(replicas)))
        profile = profiles.get(shape)
        if profile is None:
            profile = profiles[shape] = shape_profile(shape, layout, mode, mixed)
        if profile.pinned:
            pinned.append(pinned_partition(index, replicas, slot.rf, slot.state, layout, mode))
            sizes.append(slot.state.size)
            continue
        for b in replicas:
            free[b] = free.get(b, 0) + 1
        if strict:
            free_shapes[shape] += 1
            per_broker = by_full.get(profile.full)
            if per_broker is None:
                per_broker = by_full[profile.full] = {}
            for b in replicas:
                per_broker[b] = per_broker.get(b, 0) + 1
    floor, opened = _sum_profiles(profiles, free_shapes, racks)
    held = tuple(map(work.load.get, layout.brokers, repeat(0)))
    return TopicDemand(
        quota,
        held,
        held if not (pinned or shrinking) else _by_position(layout, free, 0),  # one tuple, not two
        _shed_sizes(work, layout, quota.base),
        tuple(pinned),
        tuple(sizes),
        tuple(floor),
        tuple(opened) if strict else (),
        _rack_room(layout, free, _full_at(layout, by_full), racks) if strict else (),
        len(work.slots),
        all(slot.rf == 1 for slot in work.slots),
        tuple(groups(shrinking)),
        free_layouts(work, layout) if exact_posable(strict, pinned, shrinking) else FreeLayouts(),
    )


def exact_posable(strict: bool, pinned: Sequence[Pinned], shrinking: Sequence[object]) -> bool:
    """Whether :mod:`ferry.plan.balance.repair.per_partition` can pose the topic: strict racks, no partition
    only shedding replicas, none lowering its factor (an out-of-sync replica may then stay only beside an
    in-sync one)."""
    return strict and not shrinking and not any(pin.in_sync for pin in pinned)


def free_layouts(work: TopicWork, layout: RackLayout) -> FreeLayouts:
    """Every partition of ``work`` as :class:`FreeLayouts` (positions in ``layout``)."""
    starts, replicas = [0], list[int]()
    position = layout.position.__getitem__
    for slot in work.slots:
        replicas.extend(map(position, slot.replicas))
        starts.append(len(replicas))
    return FreeLayouts(
        tuple(slot.rf for slot in work.slots),
        tuple(slot.state.size for slot in work.slots),
        tuple(starts),
        tuple(replicas),
    )


def _by_position(layout: RackLayout, values: dict[int, int], default: int) -> tuple[int, ...]:
    """``values`` by broker id as a tuple in layout order, ``default`` where a broker has none."""
    out = [default] * len(layout.brokers)
    for b, v in values.items():
        out[layout.position[b]] = v
    return tuple(out)


def _full_at(layout: RackLayout, by_full: dict[tuple[int, ...], dict[int, int]]) -> dict[int, list[int]]:
    """Per broker holding free partitions, per rack: how many of them are full in that rack (other
    than the broker's own)."""
    out: dict[int, list[int]] = {}
    racks = len(layout.members)
    for full, held in by_full.items():
        for b, n in held.items():
            row = out.get(b)
            if row is None:
                row = out[b] = [0] * racks
            own = layout.rack_of[b]
            for k in full:
                if k != own:
                    row[k] += n
    return out


def _rack_room(
    layout: RackLayout, holders: dict[int, int], full_at: dict[int, list[int]], racks: int
) -> tuple[tuple[int, ...], ...]:
    """Per broker, per rack: partitions holding a replica there with room in that rack once it
    leaves (:attr:`TopicDemand.rack_room`); zeros on brokers holding none."""
    zeros = (0,) * racks
    out = [zeros] * len(layout.brokers)
    for b, n in holders.items():
        # Few distinct rows however many topics: each kept once per layout, not once per topic and
        # broker holding it.
        row = tuple([n - m for m in full_at[b]])
        out[layout.position[b]] = layout.memo.setdefault(("room row", row), row)
    return tuple(out)


def shape_profile(shape: Shape, layout: RackLayout, mode: RackMode, mixed: bool) -> Profile:
    """What a shape contributes, once per layout (:attr:`RackLayout.memo`)."""
    key = ("profile", shape, mode, mixed)
    found: Profile | None = layout.memo.get(key)
    if found is None:
        found = layout.memo[key] = _classify(shape, layout, mode, mixed)
    return found


def _classify(shape: Shape, layout: RackLayout, mode: RackMode, mixed: bool) -> Profile:
    rf, current_rf, counts = shape
    if is_pinned(rf, current_rf, counts, layout, mode, mixed=mixed):
        return Profile(True, (), (), ())
    if mode is not RackMode.STRICT:
        return Profile(False, (), (), ())
    bounds = layout.bounds(rf)
    open_slots = rf - sum(counts)
    opened = tuple(
        min(open_slots, max(0, hi - c)) if open_slots > 0 else 0
        for c, (_, hi) in zip(counts, bounds, strict=True)
    )
    full = tuple(k for k, (c, (_, hi)) in enumerate(zip(counts, bounds, strict=True)) if c >= hi)
    return Profile(False, tuple(lo for lo, _ in bounds), opened, full)


def _sum_profiles(
    profiles: dict[Shape, Profile], uses: Counter[Shape], racks: int
) -> tuple[list[int], list[int]]:
    """Per rack, the lower bounds and the open room of every free partition together."""
    floor, opened = [0] * racks, [0] * racks
    for shape, n in uses.items():
        profile = profiles[shape]
        for k in range(racks):
            floor[k] += n * profile.floor[k]
            opened[k] += n * profile.opened[k]
    return floor, opened


def pinned_partition(
    index: int, replicas: list[int], rf: int, state: PartitionState, layout: RackLayout, mode: RackMode
) -> Pinned:
    bounds = None if mode is RackMode.EVEN else layout.bounds(rf)
    isr = state.isr
    lowered = rf < state.replication_factor and isr is not None
    in_sync = tuple(b for b in replicas if lowered and isr and b in isr)
    return Pinned(index, tuple(replicas), rf, bounds, in_sync)


def _shed_sizes(work: TopicWork, layout: RackLayout, base: Sequence[int]) -> tuple[int, ...]:
    """Per broker, the size of the replica an extra quota slot would let it keep."""
    sizes: dict[int, list[int]] = {}
    for slot in work.slots:
        size = slot.state.size_bytes or 0
        for b in slot.replicas:
            held = sizes.get(b)
            if held is None:
                sizes[b] = [size]
            else:
                held.append(size)
    out = [0] * len(layout.brokers)
    for b, held in sizes.items():
        i = layout.position[b]
        held.sort()
        excess = len(held) - base[i]
        out[i] = held[excess - 1] if excess > 0 else 0
    return tuple(out)
