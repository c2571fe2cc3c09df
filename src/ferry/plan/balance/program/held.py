"""The balance program solved again for a few topics, every other topic held where a solution put it.

After a pooled optimum the rows of most extras it left out
(:class:`~ferry.plan.balance.program.pools.LooseRows`) are checked, and the topics that break one
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
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.solvers.parts import optimum


def held_optimum(
    state: ProgramState, solution: np.ndarray, topics: Collection[int], *, relax_first: bool
) -> np.ndarray | None:
    """``solution`` with the columns of ``topics`` (and those without an owner in their rows)
    solved again under every row posed so far, the rest held; ``None`` where that keeps fewer
    replicas than ``solution`` or meets no row (see the module docstring)."""
    matrix = state.posed_matrix()
    owner = _owners(state, matrix.shape[1])
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
    gain = np.frombuffer(state.gain, dtype=np.int64)[free]
    penalty = np.frombuffer(state.penalty, dtype=np.int64)
    implied = np.frombuffer(state.implied, dtype=np.int64)
    grouped = [np.frombuffer(part, dtype=np.int64) for part in state.grouped]
    in_rows = rows[grouped[0]]
    found = optimum(
        matrix=matrix[rows][:, free],
        lows=lows,
        highs=highs,
        kinds=[kind for kind, kept in zip(state.kinds, rows.tolist(), strict=True) if kept],
        upper=np.frombuffer(state.upper, dtype=np.float64)[free],
        gain=gain,
        size=np.frombuffer(state.size, dtype=np.int64)[free],
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


def _owners(state: ProgramState, columns: int) -> np.ndarray:
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
