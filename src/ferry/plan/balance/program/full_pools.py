"""Rows that keep a pooled optimum splittable where a topic's pool fills every idle broker of a rack.

A pool (:mod:`ferry.plan.balance.program.pools`) stands for the ``n`` brokers of a rack idle for its
topic; a split gives each of them at most one of its ``y`` extras. When ``y = n`` every one of them
takes one, whatever its own band allows: a broker that must shed load (its ``z[rack, b]`` small)
cannot take one from each of many such full pools, and no split exists ("large: unequal 20/20/17 +
0/0/2" of `benchmarks/plan_quality.py`: many full pools in the rack that gains three new brokers,
against heavily loaded brokers whose band left them fewer extras).

Where a rack failed so (:func:`oversaturated`), each pool of the rack that can fill (its topic
and rack rows allow ``n`` extras) gets a column ``s >= y - (n - 1)``, one exactly when the pool is
full, and each broker ``b`` of the rack a row ``sum of s over the pools it is idle for <= z[rack, b]``
(:func:`saturation_rows`), and the program is solved again at once
(:func:`ferry.plan.balance.program.integer_program.solve`): its rows so far are kept as a matrix,
and only the parts the new rows touch are solved again (:mod:`ferry.plan.balance.solvers.parts` remembers the
others). Every split meets these rows, so the optimum is unchanged; they only rule out pooled optima no split
can realise. Before, such a rack's pools got a column per broker in a second program, built again in
Python and larger to solve (that case: 8.56 s at a06f868, 6.09 s at 5c56dcb, docs/benchmarks.md).
The rows are not posed up front: on a million partitions over three racks of 60 ("huge: unequal
60/60/57 + 0/0/3"), whose pools split anyway, that took 254 s against 90 s without them.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from ferry.plan.balance.program.pools import are_idle, holders_of
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.solvers.transport import OTHER
from ferry.plan.consecutive import rank, runs, spans, starts
from ferry.plan.prepare.demand import extra_bounds


def oversaturated(program: ProgramState, solution: np.ndarray, racks: Collection[int]) -> set[int]:
    """Those of ``racks`` where some broker is idle for more full pools in ``solution`` than its
    ``z`` lets it take; only where the program is no network (the rows would make it one HiGHS
    must solve, and a network's pools are given columns per broker instead)."""
    pools = program.pools
    if not racks or not pools.topic or OTHER not in program.kinds:
        return set()
    topic, rack, _, _, idle = _pools(program)
    full = np.flatnonzero(np.isin(rack, list(racks)) & (pools.units(solution) == idle))
    _, pair_pos = _idle_pairs(program, topic[full], rack[full])
    taken = np.bincount(pair_pos, minlength=len(program.layout.brokers))
    out: set[int] = set()
    for i in np.flatnonzero(taken).tolist():
        k = program.layout.rack_at[i]
        if taken[i] > round(solution[pools.into[k][i]]):
            out.add(k)
    return out


def saturation_rows(program: ProgramState, racks: Collection[int]) -> None:
    """The columns and rows of the module docstring, in ``racks``."""
    if not racks or not program.pools.topic:
        return
    topic, rack, first, count, idle = _pools(program)
    full = np.flatnonzero(np.isin(rack, list(racks)) & (_most(program)[topic, rack] >= idle))
    if not len(full):
        return
    _fill_columns(program, first[full], count[full], idle[full])
    s = len(program.upper) - len(full) + np.arange(len(full))
    pair_pool, pair_pos = _idle_pairs(program, topic[full], rack[full])
    order = np.argsort(pair_pos, kind="stable")
    pair_pool, pair_pos = pair_pool[order], pair_pos[order]
    for a, b in runs(pair_pos):
        i = int(pair_pos[a])
        z = program.pools.into[program.layout.rack_at[i]][i]
        program.ones(s[pair_pool[a:b]], -np.inf, 0, OTHER, minus=[z])


def _pools(program: ProgramState) -> tuple[np.ndarray, ...]:
    """Per pool: topic, rack, first column, columns and idle brokers (copies)."""
    pools = program.pools
    topic, rack, first, count = (
        np.frombuffer(values, dtype=np.int64).copy()
        for values in (pools.topic, pools.rack, pools.first, pools.count)
    )
    # A pool's columns together take up to one extra per idle broker (pools.pool_columns).
    idle = pools.summed(np.frombuffer(program.upper, dtype=np.float64))
    return topic, rack, first, count, idle


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


def _idle_pairs(program: ProgramState, topic: np.ndarray, rack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pool given by ``topic`` and ``rack``, each broker of the rack idle for the topic (none of
    its extras has a column of its own there): (pool index, broker position) pairs."""
    layout = program.layout
    sizes = np.asarray(layout.sizes, dtype=np.int64)
    flat = np.fromiter(
        (layout.position[b] for members in layout.members for b in members),
        dtype=np.int64,
        count=int(sizes.sum()),
    )
    pair_pool = np.repeat(np.arange(len(topic)), sizes[rack])
    pair_pos = flat[spans(starts(sizes)[rack], sizes[rack])]
    brokers = len(layout.brokers)
    idle = are_idle(holders_of(program.extras, brokers), topic[pair_pool] * brokers + pair_pos)
    return pair_pool[idle], pair_pos[idle]
