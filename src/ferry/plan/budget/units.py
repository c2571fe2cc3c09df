"""A partition's change cut into the units a budgeted step may take.

A change of more than one replica is cut into single-replica actions (one replica leaves and one
joins; where the replication factor changes, one joins or leaves alone) in an order where every
intermediate replica set keeps the rack rule, or for a partition already outside it gets no
further outside; a step may stop after any of them, and the next plan goes on from there. A change
with no such order is one unit: all of it or nothing. A change of preferred leader alone copies
nothing and is no unit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from ferry.model.cluster import Broker, PartitionState
from ferry.model.goal import RackMode
from ferry.plan.measure.copies import copied
from ferry.plan.racks import RackLayout


class Unit(NamedTuple):
    """Part of one partition's change; a partition's units are taken in ``order``. A named tuple:
    a step makes one per moving partition or more, and a tuple is made in C."""

    partition: int
    """Index of the partition in the plan's list."""
    order: int
    leaves: tuple[int, ...]
    joins: tuple[int, ...]
    """Brokers that get a replica: each copies the partition's data."""
    bytes: int
    """Bytes the new replicas copy (:func:`ferry.plan.measure.copies.copied`: on a broker that
    starts a tiered topic's replica at the last tiered offset, only what is not uploaded)."""
    last: bool
    """Taking it completes the partition's change."""

    @property
    def moves(self) -> int:
        return len(self.joins)


def units_of(
    index: int,
    change: tuple[PartitionState, Sequence[int]],
    layout: RackLayout,
    mode: RackMode,
    brokers: Mapping[int, Broker],
) -> list[Unit]:
    """The units of partition ``index``'s change from its replicas to a target (``change``: the
    partition and its target); ``brokers``: the snapshot's, by id, for the bytes each unit copies."""
    state, target = change
    joins = [b for b in target if b not in state.replicas]
    leaves = [b for b in state.replicas if b not in target]
    if not joins and not leaves:
        return []
    if len(joins) + len(leaves) > 2 or len(joins) != len(leaves):
        actions = _sequence(state.replicas, joins, leaves, layout, mode)
        if actions is not None:
            last = len(actions) - 1
            return [
                Unit(index, k, r, a, copied(state, a, brokers), k == last) for k, (r, a) in enumerate(actions)
            ]
    return [Unit(index, 0, tuple(leaves), tuple(joins), copied(state, joins, brokers), True)]


Action = tuple[tuple[int, ...], tuple[int, ...]]
"""(leaving, joining): one replica each, or one alone where the replication factor changes."""


def _sequence(
    replicas: Sequence[int], joins: Sequence[int], leaves: Sequence[int], layout: RackLayout, mode: RackMode
) -> list[Action] | None:
    """Single-replica actions in an order after each of which the partition is no further outside
    its rack bounds than before it (:meth:`RackLayout.outside`; for a partition inside them, what
    :func:`ferry.plan.racks.may_take` allows); ``None`` if there is no such order. A joining
    broker in the leaving one's rack goes first: the rack counts then stay.

    The order depends on the brokers' racks only, so it is worked out once per shape of change
    (the racks of the replicas held, and of the joining and leaving ones, in order) and kept in
    ``layout``'s memo as positions in ``joins`` and ``leaves``: a plan has few such shapes,
    however many partitions it moves."""
    rack = layout.rack_of.get
    held_racks = sorted(k for k in map(rack, replicas) if k is not None)
    key = ("budget-sequence", mode, tuple(held_racks), tuple(map(rack, joins)), tuple(map(rack, leaves)))
    if key not in layout.memo:
        found = _search(replicas, joins, leaves, layout, mode)
        at_join, at_leave = {b: i for i, b in enumerate(joins)}, {b: i for i, b in enumerate(leaves)}
        layout.memo[key] = (
            None
            if found is None
            else [(tuple(at_leave[b] for b in r), tuple(at_join[b] for b in a)) for r, a in found]
        )
    shape: list[tuple[tuple[int, ...], tuple[int, ...]]] | None = layout.memo[key]
    if shape is None:
        return None
    return [(tuple(leaves[i] for i in r), tuple(joins[i] for i in a)) for r, a in shape]


def _search(
    replicas: Sequence[int], joins: Sequence[int], leaves: Sequence[int], layout: RackLayout, mode: RackMode
) -> list[Action] | None:
    """:func:`_sequence` for these brokers, tried action by action."""
    held, joins, leaves = list(replicas), list(joins), list(leaves)
    actions: list[Action] = []
    while joins or leaves:
        allowed = _NoWorse(held, layout, mode)
        found = next((a for a in _candidates(joins, leaves, layout) if allowed(a)), None)
        if found is None:
            return None
        held = _after(held, found)
        for r in found[0]:
            leaves.remove(r)
        for a in found[1]:
            joins.remove(a)
        actions.append(found)
    return actions


def _candidates(joins: Sequence[int], leaves: Sequence[int], layout: RackLayout) -> Iterator[Action]:
    """The actions to try, in order (made as they are tried: the first is most often taken)."""
    rack = layout.rack_of.get
    for r in leaves:
        same = [a for a in joins if rack(a) == rack(r)]
        for a in same:
            yield (r,), (a,)
        for a in joins:
            if a not in same:
                yield (r,), (a,)
    if len(joins) > len(leaves):
        for a in joins:
            yield (), (a,)
    elif len(leaves) > len(joins):
        for r in leaves:
            yield (r,), ()


def _after(held: Sequence[int], action: Action) -> list[int]:
    """``held`` once ``action`` is done: a joining replica takes the leaving one's place."""
    out = list(held)
    leaving, joining = action
    if leaving and joining:
        out[out.index(leaving[0])] = joining[0]
    elif joining:
        out.append(joining[0])
    else:
        out.remove(leaving[0])
    return out


class _NoWorse:
    """Whether an action leaves a partition holding ``held`` no further outside its rack bounds;
    the rack counts of ``held`` are counted once for all the actions tried from it."""

    def __init__(self, held: Sequence[int], layout: RackLayout, mode: RackMode) -> None:
        self.layout, self.even = layout, mode is RackMode.EVEN
        self.counts: list[int] | None = None
        self.before = 0
        self.held = held

    def __call__(self, action: Action) -> bool:
        if self.even:
            return True
        leaving, joining = action
        rack_of = self.layout.rack_of
        # Replicas on brokers being removed count for no rack: the rule is the target brokers' racks'.
        gone = [rack_of[b] for b in leaving if b in rack_of]
        new = [rack_of[b] for b in joining]
        if gone == new:
            return True  # one for one inside a rack: the rack counts stay as they are
        if self.counts is None:
            self.counts = self.layout.counts(b for b in self.held if b in rack_of)
            self.before = self.layout.outside_counts(self.counts)
        counts = list(self.counts)
        for k in gone:
            counts[k] -= 1
        for k in new:
            counts[k] += 1
        return self.layout.outside_counts(counts) <= self.before


def step_replicas(state: PartitionState, target: Sequence[int], taken: Sequence[Unit]) -> tuple[int, ...]:
    """The partition's replicas after ``taken`` (a prefix of its units): the full ``target`` (its
    order, preferred leader first) when the last unit is taken, else its current order with each
    leaving replica's place given to the one joining."""
    if not taken:
        return state.replicas
    if taken[-1].last:
        return tuple(target)
    held: list[int] = list(state.replicas)
    for unit in taken:
        held = _after(held, (unit.leaves, unit.joins))
    return tuple(held)
