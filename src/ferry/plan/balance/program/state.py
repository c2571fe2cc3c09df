"""The balance program's state: its columns and rows as built so far (:class:`Columns`), the topic
data they are built from, and what the solve found. The row builders of this package add to it, and
:func:`~ferry.plan.balance.program.integer_program.solve` builds, solves and reads it; none of them
is imported here.

The columns and rows themselves are described in :mod:`ferry.plan.balance.program.integer_program`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ferry.plan.balance.program.columns import Columns, TopicColumns
from ferry.plan.balance.program.deferred_rows import DeferredRows
from ferry.plan.balance.program.loose_rows import LooseRows
from ferry.plan.balance.program.pinned_set import PinnedSet
from ferry.plan.balance.program.pool_groups import PoolGroups
from ferry.plan.balance.program.pools import Pools, Refinements
from ferry.plan.balance.setting import Outside, size_scale
from ferry.plan.prepare.demand import TopicDemand, singles_with_extras
from ferry.plan.prepare.shrink_groups import Group
from ferry.plan.racks import RackLayout


@dataclass(frozen=True)
class PlainRun:
    """A run of plain topics, or of topics with pinned partitions
    (:mod:`ferry.plan.balance.program.pinned_run`), as built, for checking their rack-room rows after
    solving (:mod:`ferry.plan.balance.program.plain_rack_room`): per holder entry its topic (index into
    ``topics``), broker position, free and base counts, extra's column (-1: none), whether all its free
    replicas stay whatever the extra, and the ``f`` column counting what it keeps (-1: none); and the
    run's pinned partitions, flat, with each one's topic in the run."""

    topics: np.ndarray
    topic: np.ndarray
    pos: np.ndarray
    free: np.ndarray
    base: np.ndarray
    x_col: np.ndarray
    fixed: np.ndarray
    f_col: np.ndarray | None = None
    pinned: tuple[PinnedSet, np.ndarray] | None = None


def singles_apart(demands: Sequence[TopicDemand], *, pooled: bool) -> bool:
    """Whether topics with single-replica partitions have extras in a column per broker (not
    ``pooled`` with the others'), which can fill the room of brokers that pools needed
    (:func:`ferry.plan.balance.program.pools.tight`)."""
    return not pooled and singles_with_extras(demands)


class ProgramState(Columns):
    """The program's columns and rows, and per topic the columns that count what it keeps."""

    need: int | None = None
    """Replicas a solution must keep to be of use (``None``: any optimum is): the solver may give
    up once it knows none keeps that many (:func:`~ferry.plan.balance.program.integer_program.cutoff`)."""

    def __init__(
        self,
        layout: RackLayout,
        demands: Sequence[TopicDemand],
        *,
        voluntary: bool = False,
        room_rows: set[tuple[int, int]] | None = None,
        outside: Outside | None = None,
        scale: float | None = None,
        pool: bool = False,
        pool_singles: bool = False,
        refined: Refinements | None = None,
        loaded: frozenset[int] | None = None,
        defer: bool = False,
    ) -> None:
        super().__init__()
        self.voluntary, self.pool, self.pool_singles = voluntary, pool, pool_singles
        """``pool``: pool a topic's idle brokers (:mod:`ferry.plan.balance.program.pools`, :attr:`broke`);
        ``pool_singles``: for single-replica topics too (their leader rows are then not posed)."""
        self.refined = refined or Refinements()
        """How to pose pools and rows where earlier pooled optima broke them (:attr:`broke`)."""
        self.unpool = self.refined.unpooled()
        self.pools = Pools.empty(len(demands))
        self.loaded = loaded
        """Broker positions whose own extras fill their band: where a topic's pool would need them,
        they are pooled apart (:mod:`ferry.plan.balance.program.loaded`); ``None``: read from the band
        when the pooled program is built."""
        self.broke = Refinements()
        """The pools of the optimum that could not be split over brokers, and the rows left out
        (:attr:`loose`) that it broke: :func:`~ferry.plan.balance.program.integer_program.solve` then
        answered ``None``, and the program is to be solved again with these refined (:attr:`refined`)."""
        self.loose = LooseRows()
        """Rack rows of pooled topics left out: an upper bound alone, of 10 partitions' one replica per
        rack where 20 brokers could take extras, which the optimum mostly keeps (checked after solving)."""
        self.bulk = True
        """Build runs of plain topics in bulk (:attr:`plain`); ``False``: each on its own."""
        self._room_topics: set[int] | None = None
        self.plain: list[PlainRun] = []
        self.outside = outside or Outside.none(len(layout.brokers))
        self.room_rows = room_rows
        """(topic, rack) pairs that get a rack-room row; ``None``: all of them."""
        self.defer, self.deferred = defer and room_rows is not None, DeferredRows()
        """Rows held back (:mod:`~ferry.plan.balance.program.deferred_rows`) where :attr:`defer`."""
        self.solution: np.ndarray = np.zeros(0)
        self.extras = TopicColumns()
        """Every topic's extras: (broker position, column)."""
        self.free_at: list[list[tuple[int, int]]] = [[] for _ in demands]
        """Per topic, (broker position, column) of its ``f`` columns."""
        self.implied_at: list[list[int]] = [[] for _ in demands]
        """Per topic, broker positions whose kept free replicas follow from ``x``
        (:func:`~ferry.plan.balance.program.topic_rows._imply_kept`)."""
        self.shrink_col: dict[tuple[int, int, int], int] = {}
        self.pinned: list[PinnedSet | None] = [None] * len(demands)
        """Per topic with pinned partitions, their columns."""
        self.layout = layout
        self.demands = demands
        self.kept = TopicColumns()
        """Every topic's columns counting kept replicas (position -1)."""
        self.constant = [0] * len(demands)
        self.scale = scale if scale is not None else size_scale(layout, demands)

    @cached_property
    def groups(self) -> PoolGroups:
        """The groups of brokers pools stand for (:mod:`~ferry.plan.balance.program.pool_groups`),
        read once :attr:`loaded` is known (when the program is built)."""
        return PoolGroups.of(self.layout, self.loaded or (), self.refined.together)

    def singles_apart(self) -> bool:
        """:func:`singles_apart` of this program."""
        return singles_apart(self.demands, pooled=self.pool_singles)

    @property
    def unpooled(self) -> bool:
        """The pooled optimum could not be split: see :attr:`broke`."""
        return bool(self.broke)

    def room_topics(self, t: int) -> bool:
        """Whether topic ``t`` gets any rack-room row."""
        if self._room_topics is None:
            self._room_topics = {u for u, _ in self.room_rows or ()}
        return self.room_rows is None or t in self._room_topics

    def capped(self, t: int, k: int) -> bool:
        """Whether topic ``t``'s row of most extras in rack ``k`` is posed although loose."""
        return self.refined.every_cap or (t, k) in self.refined.capped

    def group_counts(self, t: int, g: int, group: Group) -> dict[int, int]:
        """Per replica of a shrink group, how many of its partitions keep it in the solution."""
        x = self.solution
        return {b: int(x[self.shrink_col[t, g, b]]) for b in group.replicas}

    def owing_row(
        self,
        terms: Sequence[tuple[int, float]],
        bounds: tuple[float, float],
        where: tuple[int, int],
        z: int = -1,
    ) -> None:
        """A row of a pinned partition owing a rack, or of its topic's rack capacity, for (topic,
        rack) ``where``; held back (:attr:`deferred`) where topic ``where[0]`` has no rack-room row
        and the program defers. ``z``: a floor row's column of what is still owed."""
        if self.defers(where[0]):
            self.deferred.add(terms, bounds, where, z)
        else:
            self.row(terms, *bounds)

    def defers(self, t: int) -> bool:
        """Whether topic ``t``'s rows of pinned partitions owing racks are held back."""
        return self.defer and not self.room_topics(t)

    def wants_room(self, t: int, k: int) -> bool:
        """Whether topic ``t`` gets a rack-room row for rack ``k``."""
        return self.room_rows is None or (t, k) in self.room_rows
