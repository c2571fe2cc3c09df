"""What optima of earlier pooled programs broke, for the next program to pose differently
(:mod:`ferry.plan.balance.program.pools`, module docstring): which pools get a column per idle
broker, which rows are posed from the start."""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass, field

import numpy as np

from ferry.plan.balance.program.pool_groups import PER_RACK
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


@dataclass
class Refinements:
    """What optima of earlier pooled programs broke, for the next program to pose differently."""

    unpool: set[tuple[int, int]] = field(default_factory=set)
    """(topic, rack) pools whose idle brokers get a column each: the rack could not be split
    (:func:`tight`)."""
    capped: set[tuple[int, int]] = field(default_factory=set)
    """(topic, rack) rows of most extras posed, although an optimum mostly keeps them unasked
    (:attr:`ferry.plan.balance.program.state.ProgramState.loose`): one broke them."""
    every_cap: bool = False
    """Every such row posed: an optimum broke some, in a program that could not be split either (one
    that could poses the broken ones and is solved again at once, near that optimum:
    :func:`ferry.plan.balance.program.integer_program.solve`). Posing only the broken ones moves the
    excess to other topics' racks (on small clusters, where a rack's brokers are few, and on a
    skewed start): the 100k skewed shape of `benchmarks/plan_quality.py --shapes` took three pooled
    rounds that way, two this way (38 s -> 33 s)."""
    together: set[int] = field(default_factory=set)
    """Racks whose loaded brokers' pools could not be split: not pooled apart
    (:mod:`~ferry.plan.balance.program.pool_groups`)."""
    saturate: set[int] = field(default_factory=set)
    """Groups of brokers whose full pools get rows (:mod:`ferry.plan.balance.program.full_pools`): an
    optimum filled more pools than a broker idle for them could take."""

    def __bool__(self) -> bool:
        return bool(self.unpool or self.capped or self.saturate or self.together)

    def unpooled(self) -> dict[int, set[int]]:
        """Per topic, the racks of :attr:`unpool`."""
        racks: dict[int, set[int]] = {}
        for t, k in self.unpool:
            racks.setdefault(t, set()).add(k)
        return racks

    def add(self, other: Refinements) -> None:
        self.unpool |= other.unpool
        self.together |= other.together
        self.saturate |= other.saturate
        self.every_cap |= bool(other.capped)
        self.capped |= other.capped


def tight(
    taken: dict[int, list[tuple[int, int]]],
    groups: Sequence[int],
    again: Container[int],
    *,
    everywhere: bool = False,
) -> set[tuple[int, int]]:
    """The (topic, rack) pools to give their own columns where ``groups`` of brokers could not be
    split.

    A pool of one extra goes to any idle broker; those of several must find as many distinct ones
    among the brokers the group's other pools leave them, and where no split exists some of them
    could not (a broker idle for many topics that pooled all their idle brokers, say). So those are
    unpooled, every broker of their rack; in a rack that failed before (``again``), or in a group
    whose pools all hold one extra, every pool that took an extra.

    ``everywhere``: the program holds topics with single-replica partitions whose extras have a
    column per broker, not a pool (:func:`~ferry.plan.balance.program.state.singles_apart`), so
    they can fill a broker that pools of several extras needed, in any rack: unpooling those of the
    racks that failed moves the shortage to the next racks, round after round (a 20k skewed start
    at RF 1 to 4 solved five programs: tests/unit/plan/test_skewed_start.py). Once any group fails,
    every pool of several extras, in every rack, gets its own columns."""
    out: set[tuple[int, int]] = set()
    for g in groups:
        k = g // PER_RACK
        several = {(t, k) for t, y in taken[g] if y > 1}
        if k in again or not several:
            several = {(t, k) for t, _ in taken[g]}
        out |= several
    if everywhere and out:
        racks = {g // PER_RACK for g in taken}
        out |= {(t, k) for g in taken for t, y in taken[g] if y > 1 for k in racks}
    return out


def crowded(
    layout: RackLayout, demands: Sequence[TopicDemand], quotas: Sequence[Sequence[int]]
) -> frozenset[tuple[int, int]]:
    """Every (topic, rack) of the topics that ``quotas`` give more than one extra among the brokers
    idle for them (holding no more than their base) of one rack, single-replica topics left out: the
    pools a program with those apart gives their own columns once a split fails (:func:`tight`,
    ``everywhere``), read from an optimum of the program with them pooled.

    Solved again with single-replica topics apart after such an optimum
    (:func:`ferry.plan.balance.assign_extras._realised`), the first pooled program mostly failed to
    split: on a 100k skewed start at RF 1 to 3 over three racks a third of the plan's time went to
    that program (docs/benchmarks.md)."""
    rack_of = np.eye(len(layout.members), dtype=np.int64)[np.asarray(layout.rack_at, dtype=np.int64)]
    topics = [t for t, d in enumerate(demands) if not d.single_replica and d.quota.extras > 0]
    out: set[tuple[int, int]] = set()
    for first in range(0, len(topics), _BLOCK):
        block = topics[first : first + _BLOCK]
        base = np.array([demands[t].quota.base for t in block], dtype=np.int64)
        held = np.array([demands[t].held for t in block], dtype=np.int64)
        taken = (held <= base) & (np.array([quotas[t] for t in block], dtype=np.int64) > base)
        several = np.asarray(block)[((taken.astype(np.int64) @ rack_of) > 1).any(axis=1)]
        out.update((t, k) for t in several.tolist() for k in range(len(layout.members)))
    return frozenset(out)


_BLOCK = 1 << 12
"""Topics read into arrays at a time by :func:`crowded` (a 1M-partition cluster has about 100,000
topics over 200 brokers)."""
