"""One topic's columns and rows in the balance program, topic by topic (the plain pooled ones go in
bulk: :mod:`ferry.plan.balance.program.plain_topics`): its extras and their topic and rack rows, its
pooled extras, the kept replicas of free, pinned and shrinking partitions with their broker rows,
and its rack capacity and rack-room rows. Each adds to a :class:`ProgramState`."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import compress

import numpy as np

from ferry.plan.balance.program.columns import extend_from
from ferry.plan.balance.program.pinned_rows import InRack, pinned_columns, rack_capacity
from ferry.plan.balance.program.pool_groups import PER_RACK
from ferry.plan.balance.program.pools import holders, pool_columns
from ferry.plan.balance.program.rack_room import rack_room_row
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.solvers.slots import KEPT
from ferry.plan.balance.solvers.transport import RACK, TOPIC
from ferry.plan.prepare.demand import TopicDemand


def add_topic(state: ProgramState, t: int, d: TopicDemand, *, pooling: bool) -> None:
    """Topic ``t``'s columns and rows; ``pooling``: its idle brokers pooled per rack
    (:mod:`ferry.plan.balance.program.pools`)."""
    layout = state.layout
    mine, pooled = _extras(state, t, d, pooling)
    on_broker, in_rack, kept_in_rack, room_cols = pinned_columns(state, t, d)
    owing = any(held.cols for held in in_rack.values())  # columns of what is still owed among them
    _shrinking(state, t, d, on_broker, in_rack, kept_in_rack, room_cols)
    free_cols: dict[int, int] = {}
    roomy = d.rack_room and state.room_topics(t)
    counted = {k for k in in_rack if not (d.rack_floor and d.rack_floor[k])}
    implied: list[int] = []
    # A broker holding nothing of the topic keeps nothing of it: only holders need a look.
    for i in compress(range(len(d.held)), d.held):
        base = d.quota.base[i]
        if d.held[i] <= base and not (state.voluntary and d.rack_room and d.free[i]):
            # Cannot exceed its quota: everything it holds of free partitions stays.
            state.constant[t] += d.free[i]
            continue
        if not (roomy or i in on_broker or layout.rack_at[i] in counted):
            implied.append(i)
            continue
        terms = [(c, 1.0) for c in on_broker.get(i, [])]
        if d.free[i]:  # else only pinned partitions keep replicas here: no column for free ones
            f = free_cols[i] = state.column(d.free[i], 1)
            state.free_at[t].append((i, f))
            state.kept.add_one(t, f)
            terms.append((f, 1.0))
        if i in mine:
            terms.append((mine[i], -1.0))
        state.row(terms, -np.inf, base, KEPT, t * len(layout.members) + layout.rack_at[i])
    _imply_kept(state, t, implied, d, mine)
    for k, held in in_rack.items():
        rack_capacity(state, (t, d), k, held, (mine, free_cols, pooled.get(k, [])), owing=owing)
    if d.rack_room:
        for k in range(len(layout.members)):
            if state.wants_room(t, k):
                rack_room_row(
                    state,
                    d,
                    k,
                    (mine, pooled.get(k, [])),
                    free_cols,
                    kept_in_rack.get(k, []),
                    room_cols.get(k, []),
                )


def _extras(
    state: ProgramState, t: int, d: TopicDemand, pooling: bool
) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Columns ``x[t, b]`` per broker position, with the topic's and each rack's extras rows."""
    layout = state.layout
    mine: dict[int, int] = {}
    pooled: dict[int, list[int]] = {}
    if d.quota.extras > 0:
        idle: dict[int, int] = {}
        posed: set[int] = set()
        if pooling and (state.pool_singles or not d.single_replica):
            # Single-replica partitions' leader rows, where posed, count the extras of each broker.
            at, idle, posed = holders(layout, d, state.unpool.get(t, ()), state.loaded or (), state.groups)
        else:
            at = d.quota.extra_positions(layout)
        # In bulk: a cluster of 10,000 topics x 200 brokers has two million of these columns.
        first = len(state.upper)
        mine = {i: first + j for j, i in enumerate(at)}
        state.upper.extend([1] * len(at))
        state.gain.extend([0] * len(at))
        state.size.extend([d.shed[i] for i in at])
        state.extras.add(t, list(mine), list(mine.values()))
        pooled = _by_rack(_pooled(state, t, idle))
        rack_idle = _by_rack({g: [m] for g, m in idle.items()})
        everyone = [*mine.values(), *(c for cols in pooled.values() for c in cols)]
        if _racks_decide(d):
            state.implied.append(len(state.lows))
        state.ones(everyone, d.quota.extras, d.quota.extras, TOPIC)
        by_rack: dict[int, list[int]] = {}
        for i, c in mine.items():
            by_rack.setdefault(layout.rack_at[i], []).append(c)
        for k, (lo_k, hi_k) in enumerate(d.quota.rack_extras):
            cols = by_rack.get(k, [])
            brokers = len(cols) + sum(rack_idle.get(k, ()))
            cols.extend(pooled.get(k, ()))
            if not cols or (lo_k == 0 and hi_k >= brokers):
                continue
            if lo_k == 0 and k in rack_idle and not state.capped(t, k) and k not in posed:
                state.loose.add(t, k, cols, hi_k)
            else:
                state.ones(cols, lo_k, hi_k, RACK)
    return mine, pooled


def _by_rack(per_group: dict[int, list[int]]) -> dict[int, list[int]]:
    """Per rack, the values of its groups of brokers (:mod:`~ferry.plan.balance.program.pool_groups`)
    in ``per_group``, one after the other."""
    out: dict[int, list[int]] = {}
    for g, values in per_group.items():
        out.setdefault(g // PER_RACK, []).extend(values)
    return out


def _pooled(state: ProgramState, t: int, idle: dict[int, int]) -> dict[int, list[int]]:
    """Per group of brokers, ``y[t, group]`` over its ``idle`` brokers, in the columns of
    :func:`~ferry.plan.balance.program.pools.pool_columns`. In bulk: a million of them at 100,000
    topics."""
    if not idle:
        return {}
    # A rack row of most extras may be left out (loose): only the topic's row bounds a pool for sure.
    most = np.full(len(idle), state.demands[t].quota.extras, dtype=np.int64)
    count, upper, fines = pool_columns(np.fromiter(idle.values(), dtype=np.int64, count=len(idle)), most)
    c = len(state.upper)
    out: dict[int, list[int]] = {}
    for g, n in zip(idle, count.tolist(), strict=True):
        out[g] = list(range(c, c + n))
        state.pools.add(t, g, out[g])
        c += n
    cols = np.arange(len(state.upper), c)
    extend_from(state.penalty, np.repeat(cols, fines))
    extend_from(state.upper, upper.astype(np.float64))
    extend_from(state.gain, np.zeros(len(cols)))
    extend_from(state.size, np.zeros(len(cols)))
    return out


def _imply_kept(
    state: ProgramState, t: int, positions: list[int], d: TopicDemand, mine: Mapping[int, int]
) -> None:
    """Keep ``min(free, base + x)`` replicas on each broker of ``positions`` without an ``f``
    column.

    Where no pinned partition or shrinking group keeps a replica on ``b``, no rack-room row is
    posed for the topic and ``b``'s rack has no capacity row counting free replicas
    (:func:`~ferry.plan.balance.program.pinned_rows.rack_capacity`), ``f[t, b]`` appears in its broker row
    only, so ``f = min(free, base + x)`` at every optimum: the column and its row are left out and ``x``
    carries the kept replica. What is left of a plain rebalance is then a transportation
    problem (:mod:`ferry.plan.balance.solvers.transport`).
    """
    state.implied_at[t] = positions
    free, base = d.free, d.quota.base
    state.constant[t] += sum(min(free[i], base[i]) for i in positions)
    for i in positions:
        if i in mine and free[i] > base[i]:
            state.gain[mine[i]] += 1
            state.kept.add_one(t, mine[i])


def _shrinking(
    state: ProgramState,
    t: int,
    d: TopicDemand,
    on_broker: dict[int, list[int]],
    in_rack: dict[int, InRack],
    kept_in_rack: dict[int, list[int]],
    room_cols: dict[int, list[int]],
) -> None:
    """Columns ``g[t, group, b]``: partitions of a group (:mod:`ferry.plan.prepare.shrink_groups`) keeping
    ``b``."""
    layout = state.layout
    for g, group in enumerate(d.shrink_groups):
        m = len(group.members)
        cols = {}
        for b in group.replicas:
            i = layout.position[b]
            k = layout.rack_of[b]
            c = cols[b] = state.shrink_col[t, g, b] = state.column(m, 1)
            state.kept.add_one(t, c)
            on_broker.setdefault(i, []).append(c)
            kept_in_rack.setdefault(k, []).append(c)
            if k in in_rack:
                in_rack[k].cols.append(c)
        most = group.rf * m
        state.ones(list(cols.values()), -np.inf, most)
        if not d.rack_room:
            continue
        for k, (_, hi) in enumerate(layout.bounds(group.rf)):
            if not state.wants_room(t, k):
                continue
            # Open slots the group leaves, within room under rack k's upper bound.
            w = state.column(min(most, hi * m), 0)
            room_cols.setdefault(k, []).append(w)
            state.row([(w, 1.0), *((c, 1.0) for c in cols.values())], -np.inf, most)
            here = [(c, 1.0) for b, c in cols.items() if layout.rack_of[b] == k]
            if here:
                state.row([(w, 1.0), *here], -np.inf, hi * m)


def _racks_decide(d: TopicDemand) -> bool:
    """Whether the topic's rack rows alone fix how many extras it hands out, so that its topic row
    is the sum of them (:attr:`~ferry.plan.balance.program.columns.Columns.implied`): every rack's extras
    exact and adding up to the topic's."""
    racks = d.quota.rack_extras
    return all(lo == hi for lo, hi in racks) and sum(lo for lo, _ in racks) == d.quota.extras
