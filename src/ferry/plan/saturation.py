"""Rows that keep pooled optima splittable where a topic's pool fills every idle broker of a rack.

A pool (:mod:`ferry.plan.pools`) stands for the ``n`` brokers of a rack that hold nothing of its
topic; a split gives each of them at most one of its ``y`` extras. When ``y = n`` every one of them
takes one, whatever its own band allows: a broker that must shed load (its ``z[rack, b]`` small)
cannot take one from each of many such full pools, and no split exists. The pooled program does
not see that, so its optimum had to be solved again with a column per broker in the whole rack
("large: unequal 20/20/17 + 0/0/2" of `benchmarks/plan_quality.py`: a thousand full pools against
brokers whose band left them 270 extras).

Here each pool that can fill (its topic and rack rows allow ``n`` extras) gets a column
``s >= y - (n - 1)``, one exactly when the pool is full, and each broker ``b`` of the rack a row
``sum of s over the full pools it is idle for <= z[rack, b]``. Every split meets these rows, so the
optimum is unchanged; they only rule out pooled optima no split can realise. They make the
program more than a network, so a program that is one (:mod:`ferry.plan.flow`) goes without them
and relies on the rounds of :func:`ferry.plan.balance._solve_pooled`.
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from ferry.plan.columns import extend_from
from ferry.plan.flow import OTHER
from ferry.plan.grouped import rank, spans, starts

if TYPE_CHECKING:
    from ferry.plan.program import Program


def saturation_rows(program: Program) -> None:
    """The columns and rows of the module docstring, for the pools of ``program`` that can fill."""
    pools = program.pools
    if not pools.topic or OTHER not in program.kinds:
        return
    topic = np.frombuffer(pools.topic, dtype=np.int64)
    rack = np.frombuffer(pools.rack, dtype=np.int64)
    first = np.frombuffer(pools.first, dtype=np.int64)
    count = np.frombuffer(pools.count, dtype=np.int64)
    upper = np.frombuffer(program.upper, dtype=np.float64)
    idle = np.where(count == 2, 1 + upper[first + count - 1], 1).astype(np.int64)
    del upper  # a view: the program's columns grow below
    full = np.flatnonzero(_most(program)[topic, rack] >= idle)
    if not len(full):
        return
    _fill_columns(program, first[full], count[full], idle[full])
    s = len(program.upper) - len(full) + np.arange(len(full))
    _broker_rows(program, topic[full], rack[full], s)


def _most(program: Program) -> np.ndarray:
    """Per topic and rack, the most extras its topic and rack rows allow there."""
    demands, racks = program.demands, len(program.layout.members)
    hi = np.fromiter(
        chain.from_iterable(chain.from_iterable(d.quota.rack_extras for d in demands)),
        dtype=np.int64,
        count=2 * racks * len(demands),
    ).reshape(len(demands), racks, 2)[:, :, 1]
    extras = np.fromiter((d.quota.extras for d in demands), dtype=np.int64, count=len(demands))
    return np.minimum(hi, extras[:, None])


def _fill_columns(program: Program, first: np.ndarray, count: np.ndarray, idle: np.ndarray) -> None:
    """Per pool a column ``s`` in [0, 1] and its row ``y - s <= n - 1``."""
    m = len(first)
    s = len(program.upper) + np.arange(m)
    extend_from(program.upper, np.ones(m))
    extend_from(program.gain, np.zeros(m))
    extend_from(program.size, np.zeros(m))
    row0 = len(program.lows)
    per = count + 1
    group = np.repeat(np.arange(m), per)
    rows, at = row0 + group, rank(group, per)
    pool_cols = np.repeat(first, per) + at
    last = at == np.repeat(count, per)
    cols = np.where(last, np.repeat(s, per), pool_cols)
    extend_from(program.rows, rows)
    extend_from(program.cols, cols)
    extend_from(program.vals, np.where(last, -1.0, 1.0))
    extend_from(program.lows, np.full(m, -np.inf))
    extend_from(program.highs, (idle - 1).astype(np.float64))
    program.kinds.extend([OTHER] * m)


def _broker_rows(program: Program, topic: np.ndarray, rack: np.ndarray, s: np.ndarray) -> None:
    """Per broker of a rack with full-able pools: the ``s`` of the pools it is idle for, at most its
    ``z[rack, b]``."""
    layout = program.layout
    sizes = np.asarray(layout.sizes, dtype=np.int64)
    members = [
        np.asarray([layout.position[b] for b in layout.members[k]], dtype=np.int64) for k in range(len(sizes))
    ]
    offsets = starts(sizes)
    flat = np.concatenate(members)
    pair_pool = np.repeat(np.arange(len(topic)), sizes[rack])
    pair_pos = flat[spans(offsets[rack], sizes[rack])]
    brokers = len(layout.brokers)
    x_topic, x_pos, _ = program.extras.arrays()
    holding = np.sort(x_topic * brokers + x_pos)
    key = topic[pair_pool] * brokers + pair_pos
    idle = ~np.isin(key, holding, assume_unique=False)
    pair_pool, pair_pos = pair_pool[idle], pair_pos[idle]
    order = np.argsort(pair_pos, kind="stable")
    pair_pool, pair_pos = pair_pool[order], pair_pos[order]
    at = np.flatnonzero(np.r_[True, pair_pos[1:] != pair_pos[:-1]])
    ends = [*at[1:].tolist(), len(pair_pos)]
    for a, b in zip(at.tolist(), ends, strict=True):
        i = int(pair_pos[a])
        z = program.pools.into[int(layout.rack_at[i])][i]
        program.ones(s[pair_pool[a:b]], -np.inf, 0, OTHER, minus=[z])
