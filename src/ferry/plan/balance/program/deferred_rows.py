"""Rows of the balance program held back from a lazy round's solve
(:func:`ferry.plan.balance.assign_extras._solve_lazily`) and checked against its optimum instead.

They are the rows of pinned partitions that owe a rack a replica
(:mod:`ferry.plan.balance.program.pinned_rows`): a *floor* row, what a partition keeps in a rack with a
lower bound plus ``z``, what it still owes there, at least that bound; its row of at most ``rf``
replicas kept or owed; its topic's rack capacity rows, which count ``z``. None is of a network's kind
(:mod:`ferry.plan.balance.solvers.transport`), and where a rack may hold two replicas of a partition
(three replicas over two racks: every partition owes both racks one) they were most of the program:
HiGHS took 150 s on the 100k "skewed rebalance, 2 racks of 20" of `benchmarks/plan_quality.py`, the
network without them seconds.

Left out, the program is a relaxation, as without its rack-room rows: an optimum that meets them is the
optimum. ``z`` is in no other row, so the check sets each to what its floor row asks (``z`` only costs
room) and reads the other rows; a broken one names its (topic, rack), and those topics are solved again
under their rows, every other topic held (:func:`ferry.plan.balance.topics_again.settle`)."""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np


class DeferredRows:
    """Rows as sparse triplets with their bounds, each with its (topic, rack) and, for a floor
    row, its ``z`` column (-1: none)."""

    def __init__(self) -> None:
        self.rows = array("q")
        self.cols = array("q")
        self.vals = array("d")
        self.lows = array("d")
        self.highs = array("d")
        self.topic = array("q")
        self.rack = array("q")
        self.z = array("q")

    def __len__(self) -> int:
        return len(self.lows)

    def add(
        self,
        terms: Sequence[tuple[int, float]],
        bounds: tuple[float, float],
        where: tuple[int, int],
        z: int = -1,
    ) -> None:
        """A row over ``terms`` within ``bounds``, of (topic, rack) ``where``; ``z``: a floor row's
        column of what is still owed."""
        r = len(self.lows)
        self.rows.extend([r] * len(terms))
        self.cols.extend([c for c, _ in terms])
        self.vals.extend([v for _, v in terms])
        self.lows.append(bounds[0])
        self.highs.append(bounds[1])
        self.topic.append(where[0])
        self.rack.append(where[1])
        self.z.append(z)

    def broken(self, solution: np.ndarray) -> set[tuple[int, int]]:
        """The (topic, rack) of every row ``solution`` breaks, each ``z`` set to what its floor row
        asks."""
        if not len(self):
            return set()
        from scipy.sparse import csr_array  # only the driver checks (parts.sparse_rows says why)

        n = len(self.lows)
        at = (np.frombuffer(self.rows, dtype=np.int64), np.frombuffer(self.cols, dtype=np.int64))
        matrix = csr_array((np.frombuffer(self.vals), at), shape=(n, len(solution)))
        x = np.array(solution, dtype=np.float64)
        z = np.frombuffer(self.z, dtype=np.int64)
        floors = z >= 0
        x[z[floors]] = 0.0
        lows, highs = np.frombuffer(self.lows), np.frombuffer(self.highs)
        x[z[floors]] = np.maximum(0.0, lows[floors] - matrix[floors] @ x)
        sums = matrix @ x
        bad = ~floors & ((sums > highs + 0.5) | (sums < lows - 0.5))
        topic, rack = np.frombuffer(self.topic, dtype=np.int64), np.frombuffer(self.rack, dtype=np.int64)
        return set(zip(topic[bad].tolist(), rack[bad].tolist(), strict=True))
