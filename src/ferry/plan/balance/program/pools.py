"""Pooled extras: the brokers an extra of a topic gains nothing on, one column per rack in the balance
program.

On a wide cluster of small topics (10 partitions, 30 replicas over 200 brokers in 10 racks) each
topic's extras may go to any of 200 brokers, but only the few that hold more of its replicas than
their base quota differ in the program: a kept replica rides on their extra. A broker holding no
more than its base keeps all it holds whatever its extra (its kept replicas fit under the base,
so no row of the program needs the extra there), and one holding nothing keeps nothing; for the
topic these *idle* brokers of one rack are alike: no gain, no size term, the same topic, rack and
rack-room rows. So the topic gets one integer column
``y[t, rack]`` (up to the rack's idle brokers) for them instead of one ``x[t, b]`` per broker, and
each broker's band row takes from its rack's pool through ``z[rack, b]``; a pool row says that what
the rack's topics pooled is what its brokers take. At 100,000 topics on 200 brokers that is about
40 columns a topic instead of 200. Where a start breaks the rack rule, a broker often holds no
more of a topic than its base (one of its replicas must go): pooled too, "large: unequal 20/20/17 +
0/0/2" of `benchmarks/plan_quality.py` plans in about three quarters of the time (docs/benchmarks.md).
Topics with single-replica partitions are not pooled: their leader rows count each broker's extras.
Brokers whose own extras fill their band (:mod:`ferry.plan.balance.program.loaded`) get columns of
their own where a pool could need them or, in a rack at least half of them, are pooled apart from the
others: a pool then stands for the brokers of one group of the rack
(:mod:`ferry.plan.balance.program.pool_groups`).

Every solution of the full program gives one of the pooled program with the same objective, so the
pooled optimum keeps at least as many replicas; and any split of each ``y[t, rack]`` over distinct
idle brokers of the topic that gives each broker its ``z[rack, b]`` meets every row of the full
program. :func:`split` finds one by a flow per group of brokers (topics to their idle brokers, one
each). Where none exists because pools filled every idle broker of a group and some broker could
not take one of each, rows rule that out and the program is solved again at once
(:mod:`ferry.plan.balance.program.full_pools`). Otherwise the pools that could not be placed get a
column per broker in the next program (:func:`tight`, :class:`Refinements`); the balance pass
solves a few such rounds (:func:`ferry.plan.balance.assign_extras._solve_pooled`), then the full
program.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Container, Sequence
from dataclasses import dataclass, field
from itertools import compress

import numpy as np

from ferry.plan.balance.program.columns import Columns, TopicColumns, extend_from
from ferry.plan.balance.program.loaded import loaded_idle
from ferry.plan.balance.program.pool_groups import EVERY, LOADED, OTHERS, PER_RACK, PoolGroups, group
from ferry.plan.balance.solvers.transport import POOL
from ferry.plan.consecutive import spans, starts
from ferry.plan.forked import forked_map
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


@dataclass
class Pools:
    """Where the pooled columns of a program are, and the split of its solution.

    Each pool is ``count`` (1 to 3: :func:`pool_columns`) consecutive columns from ``first``, of
    one topic and group of brokers (:mod:`~ferry.plan.balance.program.pool_groups`); in typed
    arrays: a million pools at 100,000 topics."""

    topic: array[int] = field(default_factory=lambda: array("q"))
    group: array[int] = field(default_factory=lambda: array("q"))
    first: array[int] = field(default_factory=lambda: array("q"))
    count: array[int] = field(default_factory=lambda: array("q"))
    into: dict[int, dict[int, int]] = field(default_factory=dict)
    """Per group with a pool, broker position -> its ``z`` column."""
    split: list[list[int]] = field(default_factory=list)
    """Per topic, the idle broker positions its pooled extras went to (once solved)."""

    @classmethod
    def empty(cls, topics: int) -> Pools:
        return cls(split=[[] for _ in range(topics)])

    def add(self, t: int, g: int, cols: Sequence[int]) -> None:
        """Topic ``t``'s pool of group ``g``: ``cols``, consecutive."""
        self.topic.append(t)
        self.group.append(g)
        self.first.append(cols[0])
        self.count.append(len(cols))

    def extend(self, topic: np.ndarray, group: np.ndarray, first: np.ndarray, count: np.ndarray) -> None:
        """Pools in bulk, each given by its topic, group, first column and count."""
        for target, values in (
            (self.topic, topic),
            (self.group, group),
            (self.first, first),
            (self.count, count),
        ):
            extend_from(target, values)

    def columns(self) -> tuple[np.ndarray, np.ndarray]:
        """Every pooled column and its group, pool by pool."""
        count = np.frombuffer(self.count, dtype=np.int64)
        cols = spans(np.frombuffer(self.first, dtype=np.int64), count)
        return cols, np.repeat(np.frombuffer(self.group, dtype=np.int64), count)

    def units(self, solution: np.ndarray) -> np.ndarray:
        """Per pool, the extras it took in ``solution``."""
        return self.summed(solution)

    def summed(self, values: np.ndarray) -> np.ndarray:
        """Per pool, ``values`` (one per column of the program) added up over its columns, rounded."""
        count = np.frombuffer(self.count, dtype=np.int64)
        if not len(count):
            return np.zeros(0, dtype=np.int64)
        cols = spans(np.frombuffer(self.first, dtype=np.int64), count)
        out: np.ndarray = np.rint(np.add.reduceat(values[cols], starts(count))).astype(np.int64)
        return out

    def taken(self, solution: np.ndarray) -> dict[int, list[tuple[int, int]]]:
        """Per group, (topic, extras) of the pools that took any in ``solution``, in the order built."""
        out: dict[int, list[tuple[int, int]]] = {k: [] for k in self.into}
        if not self.topic:
            return out
        units = self.units(solution)
        took = np.flatnonzero(units > 0)
        topic, groups = (
            np.frombuffer(self.topic, dtype=np.int64)[took],
            np.frombuffer(self.group, dtype=np.int64)[took],
        )
        for t, g, u in zip(topic.tolist(), groups.tolist(), units[took].tolist(), strict=True):
            out[g].append((t, u))
        return out


FULL_FINE = 2
"""Fines on the unit that fills a pool: more than on the units before it (one each)."""


def pool_columns(idle: np.ndarray, most: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pool over ``idle`` brokers, of which its topic's rows allow it ``most`` extras: how many
    columns, and per column (pool by pool) its upper bound and fines.

    A first unit is free; the units after it cost a fine each, so the optimum spreads pooled
    extras over many topics where it can (a broker takes at most one of each topic's:
    :func:`split`). Where the pool can fill (``most >= idle``), the unit that fills it is a column
    of its own and costs :data:`FULL_FINE`, so a pool fills only where that keeps more replicas: a
    full pool gives every broker of the rack idle for the topic an extra whatever their bands allow,
    and where many are full a split fails (:mod:`ferry.plan.balance.program.full_pools`). On 100k
    partitions of a cluster grown from 180 to 200 brokers (`benchmarks/plan_quality.py --shapes`)
    four rounds of pooled programs failed so, and the full program was solved after them, where
    optima that fill no pool keep as many replicas."""
    can_fill = most >= idle
    count = pool_width(idle, most)
    pool = np.repeat(np.arange(len(idle)), count)
    at = spans(np.zeros(len(idle), dtype=np.int64), count)
    full = can_fill[pool] & (at == count[pool] - 1)
    rest = (at == 1) & ~full
    upper = np.where(rest, idle[pool] - 1 - can_fill[pool], 1)
    fines = np.where(full, FULL_FINE, rest.astype(np.int64))
    return count, upper, fines


def pool_width(idle: np.ndarray, most: np.ndarray) -> np.ndarray:
    """How many columns :func:`pool_columns` gives each pool: a free first unit, the rest, and
    where the pool can fill a unit that fills it, as far as its ``idle`` brokers go."""
    out: np.ndarray = np.minimum(idle, np.where(most >= idle, 3, 2))
    return out


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


def holders(
    layout: RackLayout,
    d: TopicDemand,
    unpooled: Container[int] = (),
    loaded: Collection[int] = (),
    groups: PoolGroups | None = None,
) -> tuple[list[int], dict[int, int], set[int]]:
    """The positions open to the topic's extras
    (:meth:`~ferry.plan.prepare.quotas.TopicQuota.extra_positions`) that hold more of it than their base
    quota, sit in an ``unpooled`` rack or are ``loaded`` brokers of a rack not pooled apart where
    the pool would need them; per group of brokers (of ``groups``: every broker of a rack where none
    given) of another open rack how many are idle for it (module docstring); and the racks where its
    ``loaded`` brokers pose its row of most extras (:mod:`ferry.plan.balance.program.loaded`)."""
    sizes = layout.sizes
    idle = {k: sizes[k] for k, (_, hi) in enumerate(d.quota.rack_extras) if hi > 0 and k not in unpooled}
    base = d.quota.base
    positions = compress(range(len(layout.brokers)), d.held)
    held = [i for i in positions if layout.rack_at[i] in idle and d.held[i] > base[i]]
    for i in held:
        idle[layout.rack_at[i]] -= 1
    in_loaded, posed = loaded_idle(layout, d, held, idle, loaded) if loaded else ({}, set())
    per_group: dict[int, int] = {}
    mine: list[int] = []
    for k, m in idle.items():
        if groups is not None and groups.apart[k]:
            per_group[group(k, OTHERS)] = m - len(in_loaded.get(k, ()))
            per_group[group(k, LOADED)] = len(in_loaded.get(k, ()))
        elif k in posed:
            # Loaded brokers of a rack mostly of others: columns of their own (pool_groups).
            mine += in_loaded[k]
            per_group[group(k, EVERY)] = m - len(in_loaded[k])
        else:
            per_group[group(k, EVERY)] = m
    held = sorted([*held, *mine])
    if unpooled:
        own = {k for k, (_, hi) in enumerate(d.quota.rack_extras) if hi > 0 and k in unpooled}
        held = sorted([*held, *(layout.position[b] for k in own for b in layout.members[k])])
    return held, {g: m for g, m in per_group.items() if m > 0}, posed


def pool_rows(program: Columns, groups: PoolGroups, pools: Pools, by_broker: dict[int, list[int]]) -> None:
    """Per group of brokers with pooled extras, ``z[group, b]`` into each of its brokers' band rows
    (``by_broker``: per broker position, the columns of its row), and the pool row: what the
    group's topics pooled is what its brokers take."""
    if not pools.topic:
        return
    cols, group_of = pools.columns()
    order = np.argsort(group_of, kind="stable")
    cols, group_of = cols[order], group_of[order]
    present = np.unique(group_of)
    bounds = [*np.searchsorted(group_of, present).tolist(), len(group_of)]
    most = np.add.reduceat(np.frombuffer(program.upper, dtype=np.float64)[cols], bounds[:-1]).tolist()
    for j, g in enumerate(present.tolist()):
        into = pools.into[g] = {}
        for i in groups.members(g):
            into[i] = program.column(most[j])
            by_broker.setdefault(i, []).append(into[i])
        program.ones(cols[bounds[j] : bounds[j + 1]], 0, 0, POOL, minus=list(into.values()))


def split(
    layout: RackLayout,
    extras: TopicColumns,
    pools: Pools,
    solution: np.ndarray,
) -> tuple[list[list[int]], list[int], dict[int, list[tuple[int, int]]]]:
    """Per topic, the idle brokers that take its pooled extras (module docstring), the groups of
    brokers whose pools could not be split, and per group the pools that took extras
    (:meth:`Pools.taken`)."""
    out: list[list[int]] = [[] for _ in pools.split]
    taken = pools.taken(solution)
    holding = holders_of(extras, len(layout.brokers))
    groups = list(pools.into.items())

    def one(j: int) -> list[tuple[int, int]] | None:
        g, into = groups[j]
        return _split_group(layout, holding, taken[g], into, solution)

    # Each group's pools split on their own: in forked processes where there are cores for them.
    failed = []
    found = forked_map(one, [len(taken[g]) * len(into) for g, into in groups])
    for (g, _), pairs in zip(groups, found, strict=True):
        if pairs is None:
            failed.append(g)
        for t, b in pairs or ():
            out[t].append(b)
    return out, failed, taken


def holders_of(extras: TopicColumns, brokers: int) -> np.ndarray:
    """``topic * brokers + position`` of every extra with a column of its own, sorted: the
    (topic, broker) pairs whose broker is not idle for the topic. Kept by ``extras`` until it
    grows: a split that fails, its check for full pools, their rows and the split again all read it."""
    return extras.pairs(brokers)


def are_idle(holding: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Per ``topic * brokers + position`` of ``pairs``, whether it is not in ``holding``
    (:func:`holders_of`)."""
    if not len(holding):
        return np.ones(len(pairs), dtype=bool)
    at = np.minimum(np.searchsorted(holding, pairs), len(holding) - 1)
    out: np.ndarray = holding[at] != pairs
    return out


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


def _split_group(
    layout: RackLayout,
    holding: np.ndarray,
    taken: list[tuple[int, int]],
    into: dict[int, int],
    solution: np.ndarray,
) -> list[tuple[int, int]] | None:
    """Split one group's pools that ``taken`` extras (topic, extras): topics to their idle brokers
    of the group (``into``: per broker position, its ``z`` column) by a flow, as (topic, broker)
    pairs; ``None`` where no split exists. ``holding``: :func:`holders_of` the program's extras."""
    from ortools.graph.python import min_cost_flow

    if not taken:
        return []
    members = np.array(sorted(into), dtype=np.int64)
    wants = np.rint(solution[[into[i] for i in members.tolist()]]).astype(np.int64)
    topics, extras = np.array(taken, dtype=np.int64).reshape(-1, 2).T
    n, m = len(topics), len(members)
    tails, heads = np.repeat(np.arange(n), m), np.tile(np.arange(m), n)
    brokers = len(layout.brokers)
    idle = are_idle(holding, topics[tails] * brokers + members[heads])
    tails, heads = tails[idle], heads[idle]
    flow = min_cost_flow.SimpleMinCostFlow()
    arcs = flow.add_arcs_with_capacity_and_unit_cost(
        tails, heads + n, np.ones(len(tails), dtype=np.int64), np.zeros(len(tails), dtype=np.int64)
    )
    supply = np.concatenate([extras, -wants])
    flow.set_nodes_supplies(np.arange(n + m), supply)
    if supply.sum() != 0 or flow.solve() != flow.OPTIMAL:
        return None
    used = flow.flows(arcs) > 0
    return list(zip(topics[tails[used]].tolist(), members[heads[used]].tolist(), strict=True))
