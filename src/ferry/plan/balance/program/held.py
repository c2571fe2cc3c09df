"""The balance program solved again for a few topics, every other topic held where a solution put it.

After a pooled optimum the rows of most extras it left out
(:class:`~ferry.plan.balance.program.loose_rows.LooseRows`) are checked, and the topics that break one
have those rows posed and the program solved again
(:func:`~ferry.plan.balance.program.integer_program._posed_again`). Solved whole, that second solve
cost as much as the first: on the skewed start of `benchmarks/plan_quality.py --shapes` a min-cost
flow of over half a million arcs, again, for the few hundred topics that broke a row.

Here only those topics' columns change: every column another topic owns (its extras, pooled extras
and kept replicas) keeps its value, each row moves by what those columns add to it, and what is
left is a program of the chosen topics, of the columns without an owner in their rows (what the
pools pass on to brokers, the rows' helper columns), and of the rows those columns are in. A pool
row then carries what the held topics pooled as a constant: in the min-cost flow, a supply at the
pool (:mod:`ferry.plan.balance.solvers.transport`).

Posing rows cannot raise the optimum, so the whole program keeps at most what ``solution`` keeps.
Where the held program keeps as many, its solution is an optimum of the whole program with the
new rows; otherwise :func:`held_optimum` answers ``None`` and the whole program is solved again.

A topic that broke its row of most extras in a rack must give extras there up to another rack;
every broker's band holds, so other topics must take as many into that rack. With every other
topic held there is nobody to: on unequal racks, where the broken topics all crowd the same
racks, the held program had no solution and the whole one was solved again (a second flow as
large as the first). So :func:`partners` frees some topics with room under their own row in those
racks beside them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from ferry.plan.balance.program.loose_rows import LooseRows
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.solvers.parts import optimum
from ferry.plan.consecutive import distinct

PARTNERS = 5
"""Topics freed per broken one (:func:`partners`)."""


@dataclass(frozen=True)
class HeldColumns:
    """The columns a held solve chooses among: the posed rows' ``matrix`` over them, their bounds,
    gains and sizes, and per column the topic it belongs to (-1: none). The posed program's own
    (:func:`posed_columns`), or those with columns added for one solve that are posed nowhere
    (:mod:`ferry.plan.balance.program.idle_columns`)."""

    matrix: Any
    upper: np.ndarray
    gain: np.ndarray
    size: np.ndarray
    owner: np.ndarray


def posed_columns(state: ProgramState) -> HeldColumns:
    """:class:`HeldColumns` of ``state``'s program as posed."""
    matrix = state.posed_matrix()
    return HeldColumns(
        matrix,
        np.frombuffer(state.upper, dtype=np.float64),
        np.frombuffer(state.gain, dtype=np.int64),
        np.frombuffer(state.size, dtype=np.int64),
        column_owners(state, matrix.shape[1]),
    )


def held_optimum(
    state: ProgramState,
    solution: np.ndarray,
    topics: Collection[int],
    *,
    relax_first: bool,
    columns: HeldColumns | None = None,
) -> np.ndarray | None:
    """``solution`` with the columns of ``topics`` (and those without an owner in their rows)
    solved again under every row posed so far, the rest held; ``None`` where that keeps fewer
    replicas than ``solution`` or meets no row (see the module docstring). ``columns``: those of
    the program to solve (the posed program's where not given), ``solution`` over them."""
    held = columns or posed_columns(state)
    matrix, owner, gain_all = held.matrix, held.owner, held.gain
    chosen = np.zeros(len(state.demands) + 1, dtype=bool)
    chosen[np.fromiter(topics, dtype=np.int64, count=len(topics))] = True
    mine = chosen[owner]  # owner -1 reads the last entry: False
    links = abs(matrix)
    touched = links @ mine.astype(np.float64) > 0
    free = mine | ((owner < 0) & (links.T @ touched.astype(np.float64) > 0))
    rows = links @ free.astype(np.float64) > 0
    shift = matrix @ np.where(free, 0.0, solution)
    number = np.cumsum(rows) - 1
    column = np.cumsum(free) - 1
    lows = np.frombuffer(state.lows, dtype=np.float64)[rows] - shift[rows]
    highs = np.frombuffer(state.highs, dtype=np.float64)[rows] - shift[rows]
    gain = gain_all[free]
    penalty = np.frombuffer(state.penalty, dtype=np.int64)
    implied = np.frombuffer(state.implied, dtype=np.int64)
    grouped = [np.frombuffer(part, dtype=np.int64) for part in state.grouped]
    in_rows = rows[grouped[0]]
    found = optimum(
        matrix=matrix[rows][:, free],
        lows=lows,
        highs=highs,
        kinds=[kind for kind, kept in zip(state.kinds, rows.tolist(), strict=True) if kept],
        upper=held.upper[free],
        gain=gain,
        size=held.size[free],
        scale=state.scale,
        relax_first=relax_first,
        penalty=column[penalty[free[penalty]]],
        implied=number[implied[rows[implied]]],
        groups=(number[grouped[0][in_rows]], grouped[1][in_rows]),
    )
    if found is None or gain @ found < gain @ solution[free] - 0.5:
        return None
    out = solution.copy()
    out[free] = found
    return out


def column_owners(state: ProgramState, columns: int) -> np.ndarray:
    """Per column, the topic whose extra, pooled extras or kept replicas it is (-1: none)."""
    owner = np.full(columns, -1, dtype=np.int64)
    for registry in (state.extras, state.kept):
        topic, _, col = registry.arrays()
        owner[col] = topic
    pools = state.pools
    count = np.frombuffer(pools.count, dtype=np.int64)
    cols, _ = pools.columns()
    owner[cols] = np.repeat(np.frombuffer(pools.topic, dtype=np.int64), count)
    return owner


def partners(loose: LooseRows, solution: np.ndarray, broken: Collection[tuple[int, int]]) -> set[int]:
    """Up to :data:`PARTNERS` topics per topic of the ``broken`` (topic, rack) rows, none of them,
    each with room for an extra more under its own row of most extras in one of those racks (as
    ``solution`` has it, among the rows still left out: ``loose``); spread evenly over all such
    topics in topic order, so that no run of similar topics (created at the same time, of the same
    shape) makes up the whole."""
    topic, rack, spare = loose.spare(solution)
    crowded = np.unique(np.fromiter((k for _, k in broken), dtype=np.int64))
    breaking = np.unique(np.fromiter((t for t, _ in broken), dtype=np.int64))
    able = distinct(topic[np.isin(rack, crowded) & (spare > 0.5) & ~np.isin(topic, breaking)])
    return set(evenly(able, PARTNERS * len(breaking)).tolist())


def evenly(items: np.ndarray, count: int) -> np.ndarray:
    """Up to ``count`` of ``items``, spread evenly over them in their order: no run of similar
    ones (topics created at the same time, of the same shape) makes up the whole."""
    count = min(len(items), count)
    if count == 0:
        return items[:0]
    picked: np.ndarray = items[np.unique(np.rint(np.linspace(0, len(items) - 1, count)).astype(np.int64))]
    return picked
