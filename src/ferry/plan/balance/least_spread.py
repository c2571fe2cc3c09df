"""The smallest broker spread the strict rack rule allows, and the rack totals that reach it.

With racks of unequal size the rack rule fixes how many replicas each rack holds, or at least bounds
it: with RF 3 over three racks every rack holds one replica of every partition, so a rack of two
brokers carries half again what each broker of a rack of three carries, whatever the plan. Brokers
inside one rack can still differ by at most one replica, so the broker spread of a plan whose rack
totals are ``T`` is ``max_k ceil(T_k / n_k) - min_k floor(T_k / n_k)``, and the forced spread is the
smallest of that over every rack-legal ``T``.

Which ``T`` are rack-legal: a partition of replication factor ``r`` puts between ``lo_k(r)`` and
``hi_k(r)`` replicas in rack ``k`` (:func:`ferry.plan.racks.rack_bounds`), ``r`` in all. The rack
totals of ``N`` such partitions are exactly the integer vectors with ``N lo_k <= T_k <= N hi_k`` and
``sum T = N r`` (a box cut by a plane has the integer decomposition property), and partitions of
different replication factors add up: so the totals form a small transportation polytope, one row
per replication factor and one column per rack, whatever the number of partitions. A tiny integer
program over it finds the smallest spread, then, at that spread, the totals nearest to a wish
(the totals the per-topic quotas would give, so that as few replicas as possible change rack).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ferry.plan.balance.solvers import highs as solver
from ferry.plan.racks import RackLayout


@dataclass(frozen=True, slots=True)
class RackTotals:
    """The forced spread and rack totals that reach it.

    Attributes:
        spread: the smallest broker spread any rack-legal placement has.
        low: the fewest replicas a broker holds at that spread.
        totals: per rack (layout order), replicas it holds at an optimum.
    """

    spread: int
    low: int
    totals: tuple[int, ...]
    per_kind: tuple[tuple[int, ...], ...] = ()
    """Per kind of :func:`least_spread`, its replicas per rack."""


def forced_spread(
    layout: RackLayout, factors: Mapping[int, int], near: Sequence[int] | None = None
) -> RackTotals:
    """The smallest broker spread for partitions counted by replication factor (``{rf: count}``).

    Args:
        near: per rack, totals to stay as close to as the smallest spread allows (sum of absolute
            differences); ``None``: any optimum.
    """
    sizes = layout.sizes
    kinds = sorted(rf for rf, n in factors.items() if n > 0 and rf > 0)
    if not kinds or not sizes:
        return RackTotals(0, 0, (0,) * len(sizes))
    return least_spread(sizes, [Kind(rf, factors[rf], layout.bounds(rf)) for rf in kinds], near)


@dataclass(frozen=True, slots=True)
class Kind:
    """``count`` items alike: each puts ``each`` replicas in all, between ``bounds[k]`` in rack ``k``."""

    each: int
    count: int
    bounds: Sequence[tuple[int, int]]
    led: bool = False
    """Every replica leads its partition (single-replica partitions): counts against ``lead_cap``."""


def least_spread(
    sizes: Sequence[int],
    kinds: Sequence[Kind],
    near: Sequence[int] | None = None,
    lead_cap: Sequence[int] | None = None,
) -> RackTotals:
    """:func:`forced_spread` for any kinds of items, with :attr:`RackTotals.per_kind` filled in.

    Args:
        lead_cap: per rack, the most replicas of ``led`` kinds it may hold (so that its brokers can
            still lead an even share of the partitions); ``None``: no such limit.
    """
    program = _Program(sizes, kinds, lead_cap)
    spread = program.smallest_spread()
    totals, low, per_kind = program.nearest(spread, near)
    return RackTotals(spread, low, totals, per_kind)


class _Program:
    """Columns: ``y[rf, k]`` (replicas of rf-``rf`` partitions in rack ``k``), then ``a`` (the
    lowest broker load) and ``d`` (the spread); for :meth:`nearest` also ``e+[k]`` and ``e-[k]``."""

    def __init__(self, sizes: Sequence[int], kinds: Sequence[Kind], lead_cap: Sequence[int] | None = None):
        self.sizes = list(sizes)
        self.lead_cap = lead_cap
        self.kinds = kinds
        self.racks = len(sizes)
        self.ys = len(kinds) * self.racks
        self.total = sum(kind.each * kind.count for kind in kinds)

    def _rows(self, extra: int) -> tuple[Any, np.ndarray, np.ndarray]:
        """The transportation rows and the per-rack load rows, sparse (a cluster may have thousands of
        kinds of topics); ``extra`` more columns at the end."""
        from scipy.sparse import coo_array

        width = self.ys + 2 + extra
        a, d = self.ys, self.ys + 1
        kinds, racks = len(self.kinds), self.racks
        cells = np.arange(self.ys)
        # Kind j's row sums its racks' columns; rack k's two rows (T_k - n_k a >= 0 and
        # T_k - n_k a - n_k d <= 0) sum its kinds' columns.
        rows = [cells // racks, kinds + 2 * (cells % racks), kinds + 2 * (cells % racks) + 1]
        cols = [cells, cells, cells]
        vals = [np.ones(self.ys)] * 3
        sizes = np.asarray(self.sizes, dtype=np.float64)
        at = kinds + 2 * np.arange(racks)
        rows += [at, at + 1, at + 1]
        cols += [np.full(racks, a), np.full(racks, a), np.full(racks, d)]
        vals += [-sizes, -sizes, -sizes]
        matrix = coo_array(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(kinds + 2 * racks, width),
        ).tocsr()
        each = np.array([kind.each * kind.count for kind in self.kinds], dtype=np.float64)
        lows = np.concatenate([each, np.tile([0.0, -np.inf], racks)])
        highs = np.concatenate([each, np.tile([np.inf, 0.0], racks)])
        led = [j for j, kind in enumerate(self.kinds) if kind.led]
        if self.lead_cap is None or not led:
            return matrix, lows, highs
        from scipy.sparse import vstack

        cells = (np.asarray(led)[:, None] * racks + np.arange(racks)).ravel()
        caps = coo_array((np.ones(cells.size), (cells % racks, cells)), shape=(racks, width)).tocsr()
        cap = np.asarray(self.lead_cap, dtype=np.float64)
        return vstack([matrix, caps]).tocsr(), np.r_[lows, np.full(racks, -np.inf)], np.r_[highs, cap]

    def _bounds(self, extra: int) -> tuple[np.ndarray, np.ndarray]:
        lower, upper = [], []
        for kind in self.kinds:
            for lo, hi in kind.bounds:
                lower.append(kind.count * lo)
                upper.append(kind.count * hi)
        lower += [0, 0] + [0] * extra
        upper += [self.total, self.total] + [self.total] * extra
        return np.array(lower, dtype=np.float64), np.array(upper, dtype=np.float64)

    def smallest_spread(self) -> int:
        cost = np.zeros(self.ys + 2)
        cost[self.ys + 1] = 1
        matrix, lows, highs = self._rows(0)
        lower, upper = self._bounds(0)
        return int(_solve(cost, matrix, lows, highs, lower, upper)[self.ys + 1])

    def nearest(
        self, spread: int, near: Sequence[int] | None
    ) -> tuple[tuple[int, ...], int, tuple[tuple[int, ...], ...]]:
        """Rack totals at ``spread`` nearest to ``near`` (sum of ``e+[k] + e-[k]`` with
        ``T_k - e+[k] + e-[k] = near_k``), and the lowest broker load they give."""
        extra = 2 * self.racks if near is not None else 0
        matrix, lows, highs = self._rows(extra)
        lower, upper = self._bounds(extra)
        lower[self.ys + 1] = upper[self.ys + 1] = spread
        cost = np.r_[np.zeros(self.ys + 2), np.ones(extra)]
        if near is not None:
            from scipy.sparse import lil_array, vstack

            rows = lil_array((self.racks, matrix.shape[1]))
            for k in range(self.racks):
                rows[k, k : self.ys : self.racks] = 1
                rows[k, self.ys + 2 + k] = -1
                rows[k, self.ys + 2 + self.racks + k] = 1
            wants = np.asarray(near, dtype=np.float64)
            matrix = vstack([matrix, rows.tocsr()]).tocsr()
            lows, highs = np.r_[lows, wants], np.r_[highs, wants]
        x = _solve(cost, matrix, lows, highs, lower, upper)
        totals = tuple(int(x[k : self.ys : self.racks].sum()) for k in range(self.racks))
        per_kind = tuple(
            tuple(int(v) for v in x[j * self.racks : (j + 1) * self.racks]) for j in range(len(self.kinds))
        )
        return totals, int(x[self.ys]), per_kind


def _solve(
    cost: np.ndarray,
    matrix: Any,
    lows: np.ndarray,
    highs: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
) -> np.ndarray:
    result = solver.solve(solver.Problem(matrix, lows, highs, upper, cost, lower), integral=True)
    if result.x is None:
        raise RuntimeError("forced spread: the rack totals admit no placement")
    solution: np.ndarray = np.rint(result.x)
    return solution
