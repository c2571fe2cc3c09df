"""Rows that keep a pooled optimum splittable where a topic's pool fills every idle broker of a group.

A pool (:mod:`ferry.plan.balance.program.pools`) stands for the ``n`` brokers of a group (of a rack:
:mod:`ferry.plan.balance.program.pool_groups`) idle for its topic; a split gives each of them at most
one of its ``y`` extras. When ``y = n`` every one of them takes one, whatever its own band allows:
a broker that must shed load (its ``z[group, b]`` small)
cannot take one from each of many such full pools, and no split exists ("large: unequal 20/20/17 +
0/0/2" of `benchmarks/plan_quality.py`: many full pools in the rack that gains three new brokers,
against heavily loaded brokers whose band left them fewer extras).

Where a group failed so (:func:`oversaturated`), each pool of the group that can fill (its topic
and rack rows allow ``n`` extras) gets a column ``s >= y - (n - 1)``, one exactly when the pool is
full, and each broker ``b`` of the group a row ``sum of s over the pools it is idle for <= z[group, b]``
(:func:`saturation_rows`), and the program is solved again at once
(:func:`ferry.plan.balance.program.integer_program.solve`): its rows so far are kept as a matrix,
and only the parts the new rows touch are solved again (:mod:`ferry.plan.balance.solvers.parts` remembers the
others). Every split meets these rows, so the optimum is unchanged; they only rule out pooled optima no split
can realise. Before, such a rack's pools got a column per broker in a second program, built again in
Python and larger to solve (that case: 8.56 s at a06f868, 6.09 s at 5c56dcb, docs/benchmarks.md).

A network program (min-cost flow solves it, its rows of other kinds all implied) is solved again with a
column per idle broker in those groups instead (:mod:`ferry.plan.balance.program.idle_columns`), which
keeps it a network; these rows serve the others, and a network the flow solver could not answer.

The rows are not posed up front: on a million partitions over three racks of 60 ("huge: unequal
60/60/57 + 0/0/3"), whose pools split anyway, that took 254 s against 90 s without them.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from ferry.plan.balance.program.pool_groups import PER_RACK
from ferry.plan.balance.program.pools import are_idle, holders_of
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.solvers.transport import OTHER
from ferry.plan.consecutive import rank, runs, spans
from ferry.plan.prepare.demand import extra_bounds


def oversaturated(program: ProgramState, solution: np.ndarray, groups: Collection[int]) -> set[int]:
    """Those of ``groups`` of brokers where some broker is idle for more full pools in ``solution``
    than its ``z`` lets it take; only where the program has rows of :data:`OTHER` kind, implied or
    not (a program without any is a plain network, whose failed pools get columns per broker in the
    next program: :func:`ferry.plan.balance.program.pools.tight`)."""
    if not groups or not program.pools.topic or OTHER not in program.kinds:
        return set()
    return overfull(program, solution, groups)[0]


def overfull(
    program: ProgramState, solution: np.ndarray, groups: Collection[int]
) -> tuple[set[int], np.ndarray]:
    """Those of ``groups`` where some broker is idle for more full pools in ``solution`` than its
    ``z`` lets it take, and the full pools idle on such a broker (indices into the program's pools,
    ascending)."""
    pools = program.pools
    topic, group, _, _, _ = _pools(program)
    full = full_in(program, solution, groups)
    pair_pool, pair_pos = idle_pairs(program, topic[full], group[full])
    pair_group = group[full][pair_pool]
    over = {
        (g, i)
        for g, i, taken in _per_broker(pair_group, pair_pos)
        if taken > round(solution[pools.into[g][i]])
    }
    brokers = len(program.layout.brokers)
    keys = np.fromiter((g * brokers + i for g, i in over), dtype=np.int64, count=len(over))
    on_over = np.isin(pair_group * brokers + pair_pos, keys)
    return {g for g, _ in over}, np.unique(full[pair_pool[on_over]])


def full_in(
    program: ProgramState, solution: np.ndarray, groups: Collection[int], *, several: bool = False
) -> np.ndarray:
    """The pools of ``groups`` full in ``solution`` (an extra on each idle broker), ascending; with
    ``several``, those of several extras too: with the full ones, every pool a split must give
    distinct brokers (one extra goes to any idle broker)."""
    _, group, _, _, idle = _pools(program)
    units = program.pools.units(solution)
    chosen = (units == idle) | (several & (units > 1))
    out: np.ndarray = np.flatnonzero(np.isin(group, list(groups)) & chosen)
    return out


def with_room(program: ProgramState, solution: np.ndarray, groups: Collection[int]) -> np.ndarray:
    """The topics with a pool in ``groups`` that has room for an extra more in ``solution`` (fewer
    than its idle brokers, and than its topic and rack rows allow), ascending."""
    topic, group, _, _, idle = _pools(program)
    room = program.pools.units(solution) < np.minimum(idle, _most(program)[topic, group // PER_RACK])
    out: np.ndarray = np.unique(topic[np.isin(group, list(groups)) & room])
    return out


def saturation_rows(program: ProgramState, groups: Collection[int]) -> None:
    """The columns and rows of the module docstring, in ``groups`` of brokers."""
    if not groups or not program.pools.topic:
        return
    topic, group, first, count, idle = _pools(program)
    full = np.flatnonzero(np.isin(group, list(groups)) & _fillable(program, topic, group, idle))
    if not len(full):
        return
    _fill_columns(program, first[full], count[full], idle[full])
    s = len(program.upper) - len(full) + np.arange(len(full))
    pair_pool, pair_pos = idle_pairs(program, topic[full], group[full])
    pair_group = group[full][pair_pool]
    order = np.lexsort((pair_pos, pair_group))
    pair_pool, pair_pos, pair_group = pair_pool[order], pair_pos[order], pair_group[order]
    key = pair_group * len(program.layout.brokers) + pair_pos
    for a, b in runs(key):
        z = program.pools.into[int(pair_group[a])][int(pair_pos[a])]
        program.ones(s[pair_pool[a:b]], -np.inf, 0, OTHER, minus=[z])


def _per_broker(group: np.ndarray, pos: np.ndarray) -> list[tuple[int, int, int]]:
    """(group, broker position, how many) of the (group, position) pairs given."""
    pairs, taken = np.unique(np.stack([group, pos]), axis=1, return_counts=True)
    return list(zip(pairs[0].tolist(), pairs[1].tolist(), taken.tolist(), strict=True))


def _pools(program: ProgramState) -> tuple[np.ndarray, ...]:
    """Per pool: topic, group of brokers, first column, columns and idle brokers (copies)."""
    pools = program.pools
    topic, group, first, count = (
        np.frombuffer(values, dtype=np.int64).copy()
        for values in (pools.topic, pools.group, pools.first, pools.count)
    )
    # A pool's columns together take up to one extra per idle broker (pools.pool_columns).
    idle = pools.summed(np.frombuffer(program.upper, dtype=np.float64))
    return topic, group, first, count, idle


def can_fill(program: ProgramState) -> np.ndarray:
    """Per pool, whether its topic and rack rows allow it as many extras as it has idle brokers: only
    such a pool can fill."""
    topic, group, _, _, idle = _pools(program)
    return _fillable(program, topic, group, idle)


def _fillable(program: ProgramState, topic: np.ndarray, group: np.ndarray, idle: np.ndarray) -> np.ndarray:
    """:func:`can_fill`, of the pools' topics, groups and idle brokers (:func:`_pools`)."""
    out: np.ndarray = _most(program)[topic, group // PER_RACK] >= idle
    return out


def _most(program: ProgramState) -> np.ndarray:
    """Per topic and rack, the most extras its topic and rack rows allow there."""
    bounds, extras = extra_bounds(program.demands, len(program.layout.members))
    most: np.ndarray = np.minimum(bounds[:, :, 1], extras[:, None])
    return most


def _fill_columns(program: ProgramState, first: np.ndarray, count: np.ndarray, idle: np.ndarray) -> None:
    """Per pool a column ``s`` in [0, 1] and its row ``y - s <= n - 1``."""
    m = len(first)
    s = program.add_columns(np.ones(m), np.zeros(m), np.zeros(m)) + np.arange(m)
    per = count + 1
    group = np.repeat(np.arange(m), per)
    at = rank(group, per)
    last = at == np.repeat(count, per)
    cols = np.where(last, np.repeat(s, per), np.repeat(first, per) + at)
    entries = (group, cols, np.where(last, -1.0, 1.0))
    program.add_rows(entries, (np.full(m, -np.inf), (idle - 1).astype(np.float64)), [OTHER] * m)


def idle_pairs(program: ProgramState, topic: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pool given by ``topic`` and ``group``, each broker of the group idle for the topic (none
    of its extras has a column of its own there): (pool index, broker position) pairs."""
    groups = program.groups
    sizes = groups.size[group]
    pair_pool = np.repeat(np.arange(len(topic)), sizes)
    pair_pos = groups.flat[spans(groups.start[group], sizes)]
    brokers = len(program.layout.brokers)
    idle = are_idle(holders_of(program.extras, brokers), topic[pair_pool] * brokers + pair_pos)
    return pair_pool[idle], pair_pos[idle]
