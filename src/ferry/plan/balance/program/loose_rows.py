"""Rows of most extras a pooled program leaves out
(:attr:`~ferry.plan.balance.program.state.ProgramState.loose`): a topic's extras in a rack bounded
from above alone, over its pooled columns and its holders' extras there. An optimum mostly keeps
them without being told; :meth:`LooseRows.broken` tells which it broke, and :meth:`LooseRows.pose`
poses them then. Rows an optimum gains by breaking (:func:`worth_breaking`) are posed from the
start."""

from __future__ import annotations

from array import array
from collections.abc import Collection, Sequence
from typing import overload

import numpy as np

from ferry.plan.balance.program.columns import Columns, extend_from
from ferry.plan.balance.solvers.transport import RACK


@overload
def worth_breaking(keeping: int, most: int) -> bool: ...


@overload
def worth_breaking(keeping: np.ndarray, most: np.ndarray) -> np.ndarray: ...


def worth_breaking(keeping: int | np.ndarray, most: int | np.ndarray) -> bool | np.ndarray:
    """Whether a topic's row of most extras in a rack is posed although an upper bound alone
    (:class:`LooseRows`): ``keeping`` of its extras there would each keep a replica, at least the
    ``most`` the row allows, so an optimum without the row gains a kept replica by breaking it.

    Left out, such rows were what the first optimum broke on the 100k shapes "remove 20 of 200" and
    the skewed start of `benchmarks/plan_quality.py --shapes`; every row left out was then posed
    and the program solved again, a flow several times as slow as the first (a node per row).
    Posed from the start, they are a few of the rows, and the first optimum breaks few or none
    (docs/benchmarks.md, "Rows worth breaking")."""
    return keeping >= most


class LooseRows:
    """Rows of most extras a pooled program leaves out and checks after solving
    (:attr:`ferry.plan.balance.program.state.ProgramState.loose`); in typed arrays: a million of them at
    100,000 topics."""

    def __init__(self) -> None:
        self.topic, self.rack, self.most = array("q"), array("q"), array("q")
        self.owner, self.cols = array("q"), array("q")

    def add(self, t: int, k: int, cols: Sequence[int], most: int) -> None:
        """Topic ``t`` gives at most ``most`` extras to rack ``k``, where ``cols`` are its columns."""
        self.owner.extend([len(self.topic)] * len(cols))
        self.cols.extend(cols)
        self.topic.append(t)
        self.rack.append(k)
        self.most.append(most)

    def extend(
        self, topic: np.ndarray, rack: np.ndarray, most: np.ndarray, owner: np.ndarray, cols: np.ndarray
    ) -> None:
        """Rows in bulk: per row its topic, rack and most extras; per column the row (numbered
        from 0 here) it belongs to."""
        extend_from(self.owner, owner + len(self.topic))
        extend_from(self.cols, cols)
        extend_from(self.topic, topic)
        extend_from(self.rack, rack)
        extend_from(self.most, most)

    def pose(self, program: Columns, topics: Collection[int] | None = None) -> None:
        """The rows left out of ``topics`` (``None``: of every topic), posed now as rack rows of
        ``program``; the others stay left out."""
        if not self.topic:
            return
        topic = np.frombuffer(self.topic, dtype=np.int64)
        owner = np.frombuffer(self.owner, dtype=np.int64)
        cols = np.frombuffer(self.cols, dtype=np.int64)
        if topics is None:
            chosen = np.ones(len(topic), dtype=bool)
        else:
            chosen = np.isin(topic, np.fromiter(topics, dtype=np.int64, count=len(topics)))
        posed = chosen[owner]
        number = np.cumsum(chosen) - 1  # a chosen row's place among those posed, the others' among the rest
        rows = int(chosen.sum())
        extend_from(program.rows, number[owner[posed]] + len(program.lows))
        extend_from(program.cols, cols[posed])
        extend_from(program.vals, np.ones(int(posed.sum())))
        extend_from(program.lows, np.zeros(rows))
        most = np.frombuffer(self.most, dtype=np.int64)
        extend_from(program.highs, most[chosen])
        program.kinds.extend([RACK] * rows)
        rest, rack = ~chosen, np.frombuffer(self.rack, dtype=np.int64)
        left = LooseRows()
        left.extend(topic[rest], rack[rest], most[rest], (np.cumsum(rest) - 1)[owner[~posed]], cols[~posed])
        self.topic, self.rack, self.most, self.owner, self.cols = (
            left.topic,
            left.rack,
            left.most,
            left.owner,
            left.cols,
        )

    def broken(self, solution: np.ndarray) -> set[tuple[int, int]]:
        """The (topic, rack) rows that ``solution`` breaks."""
        if not self.topic:
            return set()
        cols = np.frombuffer(self.cols, dtype=np.int64)
        sums = np.bincount(
            np.frombuffer(self.owner, dtype=np.int64), weights=solution[cols], minlength=len(self.topic)
        )
        over = np.flatnonzero(sums > np.frombuffer(self.most, dtype=np.int64) + 0.5)
        return {(self.topic[r], self.rack[r]) for r in over.tolist()}
