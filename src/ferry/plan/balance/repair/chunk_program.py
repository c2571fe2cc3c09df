"""Solve a chunk of topics again, exactly, each broker's total over the chunk held (see
:mod:`ferry.plan.balance.repair.per_partition`).

Columns, per topic ``t`` of the chunk:

* ``x[t, b]`` in {0, 1}: broker ``b`` takes one of the topic's extras (as in
  :mod:`ferry.plan.balance.program.integer_program`);
* ``k[p, b]`` in {0, 1}: partition ``p`` keeps its replica on ``b``;
* ``u[p, r]``: new replicas of partition ``p`` in rack ``r``.

Rows: the topic hands out exactly its extras, each rack within its (min, max); every partition ends
with its replication factor, each rack within its bounds; a broker keeps at most its quota
(``base + x``); a rack receives exactly what its brokers' quotas leave after the kept replicas; and
per broker ``sum_t x[t, b]`` is what the chunk gave it before, so the broker rows of the whole
program, and every topic outside the chunk, stay as they were. The objective is the one of the
program: replicas kept, then their bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.program.columns import Columns
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout

CHUNK = 20
"""Short topics solved together (with as many partners): enough to trade extras among them, few
enough for HiGHS to branch fast. `benchmarks/exact_pass.py --case "2,000 topics" --chunks 10,20,50`:
all three reach the bound (180 topics short), in 1.0, 1.3 and 1.9 CPU s (2026-11-25); on 20,000
such topics chunks of 20 left fewer replicas short than chunks of 10."""


@dataclass
class _Topic:
    """Where one topic's columns are: extras by broker position, keeps by (partition, position)."""

    extras: dict[int, int]
    keeps: dict[tuple[int, int], int]


def rejoin(
    layout: RackLayout, demands: Sequence[TopicDemand], quotas: Sequence[Sequence[int]]
) -> Balance | None:
    """The chunk ``demands`` (with their current ``quotas``) solved again; ``None`` if the solver
    finds nothing. ``kept`` of the answer counts the replicas its keeps keep."""
    program = Columns()
    topics = [_topic(program, layout, d) for d in demands]
    held = np.sum(np.array(quotas, dtype=np.int64), axis=0)
    for i in range(len(layout.brokers)):
        terms = [(top.extras[i], 1.0) for top in topics if i in top.extras]
        bound = float(held[i] - sum(d.quota.base[i] for d in demands))
        if terms or bound != 0:
            program.row(terms, bound, bound)
    biggest = max((max(d.layouts.size, default=0) for d in demands), default=0) or 1
    # Mostly integral already: HiGHS's branching only where it is not.
    solution = program.optimum(0.5 / (biggest * (len(program.upper) + 1)), relax_first=True)
    if solution is None:
        return None
    return _read(layout, demands, topics, solution)


def _topic(program: Columns, layout: RackLayout, d: TopicDemand) -> _Topic:
    """Columns and rows of one topic (module docstring)."""
    q = d.quota
    extras = {i: program.column(1) for i in q.extra_positions(layout)}
    program.ones(list(extras.values()), q.extras, q.extras)
    for k, (lo, hi) in enumerate(q.rack_extras):
        program.row([(extras[i], 1.0) for i in _in_rack(layout, k) if i in extras], lo, hi)
    keeps: dict[tuple[int, int], int] = {}
    at_broker: dict[int, list[int]] = {}
    new_in: list[list[int]] = [[] for _ in layout.members]
    for j in range(len(d.layouts)):
        rf, held = d.layouts.rf[j], d.layouts.held(j)
        mine = {i: program.column(1, 1, d.layouts.size[j]) for i in held}
        keeps.update({(j, i): c for i, c in mine.items()})
        for i, c in mine.items():
            at_broker.setdefault(i, []).append(c)
        adds = []
        for k, (lo, hi) in enumerate(layout.bounds(rf)):
            here = [(mine[i], 1.0) for i in held if layout.rack_of[layout.brokers[i]] == k]
            if hi > 0:
                u = program.column(hi)
                new_in[k].append(u)
                here.append((u, 1.0))
                adds.append((u, 1.0))
            program.row(here, lo, hi)
        program.row([*((c, 1.0) for c in mine.values()), *adds], rf, rf)
    for i, cols in at_broker.items():
        terms = [(c, 1.0) for c in cols] + ([(extras[i], -1.0)] if i in extras else [])
        program.row(terms, -np.inf, q.base[i])
    for k in range(len(layout.members)):
        # What rack k receives: its brokers' quotas, less what they keep.
        terms = [(u, 1.0) for u in new_in[k]]
        for i in _in_rack(layout, k):
            terms += [(c, 1.0) for c in at_broker.get(i, [])]
            if i in extras:
                terms.append((extras[i], -1.0))
        base = float(sum(q.base[i] for i in _in_rack(layout, k)))
        program.row(terms, base, base)
    return _Topic(extras, keeps)


def _in_rack(layout: RackLayout, k: int) -> list[int]:
    return [layout.position[b] for b in layout.members[k]]


def _read(
    layout: RackLayout, demands: Sequence[TopicDemand], topics: Sequence[_Topic], solution: np.ndarray
) -> Balance:
    quotas, kept, keeps = [], [], []
    for d, top in zip(demands, topics, strict=True):
        quota = list(d.quota.base)
        for i, c in top.extras.items():
            quota[i] += int(np.rint(solution[c]))
        chosen: dict[int, set[int]] = {j: set() for j in range(len(d.layouts))}
        for (j, i), c in top.keeps.items():
            if solution[c] > 0.5:
                chosen[j].add(layout.brokers[i])
        quotas.append(tuple(quota))
        kept.append(sum(len(v) for v in chosen.values()))
        keeps.append({j: frozenset(v) for j, v in chosen.items()})
    return Balance(quotas, kept, keeps)
