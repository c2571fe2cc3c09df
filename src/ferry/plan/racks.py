"""Racks of the target brokers and the per-partition rack rule.

A broker without a rack counts as a rack of its own, so a cluster without rack information gets the
plain "never two replicas on one broker" rule from the same code. Where no target broker has a rack,
the planning passes see them all as one rack instead: the rule is the same (one rack of ``n`` brokers
asks ``r`` replicas of every partition, on distinct brokers as always), and their per-rack work is
done once instead of once per broker (on a 100k-partition cluster of 200 brokers without racks,
planning took about a tenth of the time: docs/benchmarks.md). The report keeps a rack per broker.

The rule for one partition of replication factor ``r`` over racks of sizes ``n_k``: let ``c`` be the
smallest integer with ``sum(min(n_k, c)) >= r``. Rack ``k`` then holds at most ``min(n_k, c)`` and at
least ``min(n_k, c - 1)`` replicas of the partition
(and at least what the other racks cannot hold). With at least ``r`` racks this is "at most one
replica per rack"; with fewer racks it spreads the replicas over the racks as evenly as the rack sizes
allow. The lower bounds sum to at most ``r``, and to ``r`` only where every rack's count is fixed
(as many racks as replicas: one each).

Every pass that gives a partition a replica asks :func:`may_take` (or, for a whole rack at once,
:func:`racks_open`): placement, replace, the byte balance. Under ``RackMode.EVEN`` only "never two
replicas on one broker" holds; the bounds still measure how far a replica set is from the rule
(:meth:`RackLayout.outside`), which the leader swaps and the report read.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ferry.model.goal import RackMode

RackBounds = tuple[tuple[int, int], ...]
"""Per rack index: (lower, upper) replicas of one partition."""


@dataclass(frozen=True, slots=True)
class RackLayout:
    """Target brokers grouped by rack; racks and brokers in a fixed, sorted order."""

    brokers: tuple[int, ...]
    rack_of: Mapping[int, int]
    members: tuple[tuple[int, ...], ...]
    names: tuple[str, ...]
    position: Mapping[int, int]
    """Index of each broker in ``brokers``."""
    rack_at: tuple[int, ...]
    """Rack index of each broker position (``brokers`` order)."""
    _bounds: dict[int, RackBounds] = field(default_factory=dict, compare=False, repr=False)
    memo: dict[Hashable, Any] = field(default_factory=dict, compare=False, repr=False)
    """Values that depend on the layout and a small key alone, computed once per layout: a cluster of
    100,000 topics has a handful of distinct partition shapes and topic factor mixes."""

    @classmethod
    def of(
        cls, racks: Mapping[int, str | None], targets: Iterable[int], *, broker_racks: bool = False
    ) -> RackLayout:
        """Build the layout of ``targets`` given every broker's rack (``None``: no rack): where none
        of them has a rack, one rack of them all, unless ``broker_racks`` asks for a rack per broker
        (module docstring)."""
        brokers = tuple(sorted(set(targets)))
        if not broker_racks and brokers and not any(racks.get(b) for b in brokers):
            keys = dict.fromkeys(brokers, "")
        else:
            keys = {b: racks.get(b) or f"\0broker-{b}" for b in brokers}
        names = tuple(sorted(set(keys.values())))
        index = {name: i for i, name in enumerate(names)}
        rack_of = {b: index[keys[b]] for b in brokers}
        members = tuple(tuple(b for b in brokers if rack_of[b] == i) for i in range(len(names)))
        position = {b: i for i, b in enumerate(brokers)}
        return cls(brokers, rack_of, members, names, position, tuple(rack_of[b] for b in brokers))

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(m) for m in self.members)

    def bounds(self, rf: int) -> RackBounds:
        """Per rack (lower, upper) replica counts for one partition of replication factor ``rf``."""
        cached = self._bounds.get(rf)
        if cached is None:
            cached = rack_bounds(self.sizes, rf)
            self._bounds[rf] = cached
        return cached

    def bounds_under(self, rf: int, mode: RackMode) -> RackBounds:
        """:meth:`bounds` under ``mode``: under ``RackMode.EVEN`` a rack may hold any of its brokers'
        share of the partition and owes it nothing."""
        if mode is RackMode.EVEN:
            return tuple((0, min(len(m), rf)) for m in self.members)
        return self.bounds(rf)

    def base_by_rack(self, base: tuple[int, ...]) -> tuple[int, ...]:
        """Per rack, the sum of ``base`` (a value per broker position) over its brokers; once per
        distinct ``base`` (topics of one size share theirs)."""
        key = ("base by rack", base)
        found: tuple[int, ...] | None = self.memo.get(key)
        if found is None:
            sums = [0] * len(self.members)
            for k, n in zip(self.rack_at, base, strict=True):
                sums[k] += n
            found = self.memo[key] = tuple(sums)
        return found

    def counts(self, replicas: Iterable[int]) -> list[int]:
        """Replicas per rack index; every replica must be a target broker."""
        counts = [0] * len(self.members)
        for b in replicas:
            counts[self.rack_of[b]] += 1
        return counts

    def violations(self, replicas: Iterable[int], rf: int | None = None) -> int:
        """How many replicas break the rack rule (above a rack's upper bound)."""
        reps = [b for b in replicas if b in self.rack_of]
        counts = self.counts(reps)
        bounds = self.bounds(rf if rf is not None else len(reps))
        return sum(max(0, c - hi) for c, (_, hi) in zip(counts, bounds, strict=True))

    def outside(self, replicas: Sequence[int]) -> int:
        """How far a replica set of target brokers is outside its per-rack (lower, upper) bounds:
        replicas above each rack's upper bound plus those missing below its lower bound."""
        return self.outside_counts(self.counts(replicas))

    def outside_counts(self, counts: Sequence[int]) -> int:
        """:meth:`outside` of a replica set holding ``counts`` replicas per rack (once per shape)."""
        key = ("outside", tuple(counts))
        found: int | None = self.memo.get(key)
        if found is None:
            bounds = self.bounds(sum(counts))
            found = self.memo[key] = sum(
                max(0, n - hi) + max(0, lo - n) for n, (lo, hi) in zip(counts, bounds, strict=True)
            )
        return found


def may_take(
    layout: RackLayout,
    mode: RackMode,
    replicas: Sequence[int],
    rf: int,
    broker: int,
    without: int | None = None,
) -> bool:
    """The rack rule: whether ``broker`` may take a replica of a partition of replication factor
    ``rf`` that holds ``replicas`` (target brokers), once ``without`` (if given) has left it.

    Never a second replica on one broker; under ``RackMode.STRICT`` also never above the rack's
    upper bound, and only while every rack's lower bound stays reachable with the slots left.
    """
    held = [b for b in replicas if b != without]
    if broker in held:
        return False
    return racks_open(layout, mode, rf, layout.counts(held))[layout.rack_of[broker]]


def racks_open(layout: RackLayout, mode: RackMode, rf: int, counts: Sequence[int]) -> list[bool]:
    """Per rack, :func:`may_take` for any of its brokers not holding the partition, which holds
    ``counts`` replicas per rack: the answer depends on the rack alone, so a pass asking about
    every broker decides once per rack. Few distinct answers however many replicas are placed,
    each worked out once per layout (shared: read only)."""
    if mode is RackMode.EVEN:
        return [True] * len(counts)
    key = ("racks open", rf, tuple(counts))
    found: list[bool] | None = layout.memo.get(key)
    if found is None:
        bounds = layout.bounds(rf)
        # Replicas the racks' lower bounds still ask for; one in a rack short of its bound is one less.
        need = sum(max(0, lo - c) for (lo, _), c in zip(bounds, counts, strict=True))
        spare = rf - sum(counts) - 1
        found = layout.memo[key] = [
            c < hi and need - (c < lo) <= spare for (lo, hi), c in zip(bounds, counts, strict=True)
        ]
    return found


@cache
def rack_bounds(sizes: tuple[int, ...], rf: int) -> RackBounds:
    """(lower, upper) replicas per rack for one partition; see the module docstring."""
    if rf > sum(sizes):
        raise ValueError(f"replication factor {rf} exceeds the {sum(sizes)} target brokers")
    c = 1
    while sum(min(n, c) for n in sizes) < rf:
        c += 1
    uppers = [min(n, c) for n in sizes]
    room = sum(uppers)
    # A rack must also take whatever the other racks cannot (with as many racks as RF: one each).
    return tuple((max(min(n, c - 1), rf - (room - hi)), hi) for n, hi in zip(sizes, uppers, strict=True))
