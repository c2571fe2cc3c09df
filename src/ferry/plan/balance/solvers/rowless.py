"""Columns of a network's program that sit in no row: each takes its own optimum, the network the rest.

A network's program leaves out the rows its other rows imply and no arc can carry
(:func:`ferry.plan.balance.solvers.parts.optimum`): a pinned partition's row of at most ``rf`` replicas
where its rack rows already say as much. A column can then be in no row at all: the kept replica of
a pinned partition alone in its rack, on a broker that holds no more of the topic than its base
(what stays there needs no extra, so it has no holder row: :mod:`ferry.plan.balance.solvers.slots`).
Nothing bounds such a column but its own bound, so it keeps its replica at every optimum.

A min-cost flow has no arc for a column without ends, and such programs went to HiGHS whole. Topics
with a base of one replica per broker make them: 150 replicas over 132 brokers. On the skewed start
over six racks of 22 brokers of `benchmarks/shapes.py` (100k partitions, seed 7), thousands of
such columns among half a million sent the first program to HiGHS, and the plan took 714.95 s;
without them the rest is a network, and it took 9.81 s (docs/benchmarks.md, "Columns in no row").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ferry.plan.balance.solvers.transport import QUANTA, Transport, Unsolved, size_steps

if TYPE_CHECKING:
    from scipy.sparse import csr_array


def rowless(matrix: csr_array) -> np.ndarray:
    """Per column, whether it has no entry in any row of ``matrix`` (CSR already, or made so)."""
    out: np.ndarray = np.bincount(matrix.tocsr().indices, minlength=matrix.shape[1]) == 0
    return out


@dataclass(frozen=True)
class WithRowless:
    """A network (``network``) of the columns in some row, and the ``alone`` columns (in no row,
    per column of the program) with their ``upper`` bounds."""

    network: Transport
    alone: np.ndarray
    upper: np.ndarray

    def solve(
        self, gain: np.ndarray, size: np.ndarray, fines: np.ndarray | None = None
    ) -> np.ndarray | Unsolved | None:
        """As :meth:`Transport.solve`, per column of the whole program: the network's columns
        from its flow, each column alone at its bound where that gains (a kept replica, or bytes
        worth more than its fines, as the flow's costs weigh them) and at zero elsewhere."""
        rest = ~self.alone
        found = self.network.solve(gain[rest], size[rest], None if fines is None else fines[rest])
        if not isinstance(found, np.ndarray):
            return found
        fined = np.zeros(len(gain), dtype=np.int64) if fines is None else fines
        gains = (gain > 0) | (size_steps(size) > fined * (QUANTA // 2))
        out = np.where(gains, self.upper, 0.0)
        out[rest] = found
        return out
