"""Rows of most extras a pooled program leaves out and checks after solving
(:attr:`ferry.plan.balance.program.state.ProgramState.loose`): a topic's rack row where only an upper
bound, of 10 partitions' one replica per rack where 20 brokers could take extras, which the optimum
mostly keeps without being told."""

from __future__ import annotations

from array import array
from collections.abc import Collection, Sequence

import numpy as np

from ferry.plan.balance.program.columns import Columns, extend_from
from ferry.plan.balance.solvers.transport import RACK


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
        topic, owner = np.frombuffer(self.topic, dtype=np.int64), np.frombuffer(self.owner, dtype=np.int64)
        chosen = np.ones(len(topic), dtype=bool) if topics is None else np.isin(topic, list(topics))
        cols, most = np.frombuffer(self.cols, dtype=np.int64), np.frombuffer(self.most, dtype=np.int64)
        mine, rows = chosen[owner], int(chosen.sum())
        extend_from(program.rows, (np.cumsum(chosen) - 1)[owner[mine]] + len(program.lows))
        extend_from(program.cols, cols[mine])
        extend_from(program.vals, np.ones(int(mine.sum())))
        extend_from(program.lows, np.zeros(rows))
        extend_from(program.highs, most[chosen])
        program.kinds.extend([RACK] * rows)
        rest = ~chosen
        left = (topic[rest], np.frombuffer(self.rack, dtype=np.int64)[rest], most[rest])
        owned = ((np.cumsum(rest) - 1)[owner[~mine]], cols[~mine])
        self.topic, self.rack, self.most = array("q"), array("q"), array("q")
        self.owner, self.cols = array("q"), array("q")
        self.extend(*left, *owned)

    def broken(self, solution: np.ndarray) -> set[tuple[int, int]]:
        """The (topic, rack) rows that ``solution`` breaks."""
        topic, rack, spare = self.spare(solution)
        over = np.flatnonzero(spare < -0.5)
        return {(int(topic[r]), int(rack[r])) for r in over.tolist()}

    def spare(self, solution: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: its topic, its rack, and how many extras under its most ``solution`` gives
        (negative where it breaks the row)."""
        topic, rack = np.frombuffer(self.topic, dtype=np.int64), np.frombuffer(self.rack, dtype=np.int64)
        if not len(topic):
            return topic, rack, np.zeros(0)
        cols = np.frombuffer(self.cols, dtype=np.int64)
        sums = np.bincount(
            np.frombuffer(self.owner, dtype=np.int64), weights=solution[cols], minlength=len(topic)
        )
        spare: np.ndarray = np.frombuffer(self.most, dtype=np.int64) - sums
        return topic, rack, spare
