"""The integer program of the global balance pass (:mod:`ferry.plan.balance` poses and solves it).

Columns and rows, solved by HiGHS (:mod:`ferry.plan.highs`):

* ``x[t, b]`` in {0, 1}: broker ``b`` takes one extra replica of topic ``t``. Each topic hands out
  exactly its extras, within each rack's (min, max); each broker's total load stays in the band that
  global water-filling allows, so the cluster-wide spread is at most one wherever racks permit.
* pooled (:mod:`ferry.plan.pools`), for topics without single-replica partitions:
  ``y[t, rack]`` instead of the ``x[t, b]`` of the rack's brokers idle for ``t`` (holding no
  more of it than their base quota: an extra gains them nothing), and
  ``z[rack, b]`` in each broker's band row, what the rack's pool passes on to ``b``; where an
  optimum's pools filled more idle brokers than one of them could take, rows against that
  (:mod:`ferry.plan.saturation`);
* ``f[t, b]``: replicas of ``t`` that stay on ``b``, of partitions free to keep any of their replicas;
  left out where it follows from ``x[t, b]`` (:meth:`Program._imply_kept`).
* ``k[p, b]`` in {0, 1}: partition ``p`` keeps its replica on ``b``, for the few *pinned* partitions
  that cannot keep them all (a lowered replication factor, two replicas in one rack, or a rack
  below its lower bound: ``z[p, rack]`` counts the replicas that rack still needs).
* ``g[t, group, b]``: partitions of a group that only sheds replicas (:mod:`ferry.plan.shrink`) that
  keep their replica on ``b``; at most ``rf`` per partition of the group.
* per broker: ``f[t, b] + sum_p k[p, b] + sum_group g[t, group, b] <= base[t, b] + x[t, b]``.
* per rack: the replicas a rack must receive (its quota minus what stays in it) fit into the open
  slots of partitions with room under the rack's upper bound. A replica dropped from broker ``b``
  opens a slot that may go to rack ``k`` only if its partition has room there, so at most
  ``y[t, b, k] = min(drops at b, partitions at b with room in k)`` of them count; pinned partitions
  count ``w[p, k] = min(open slots, room in k)``. Without these rows the program could hand an extra
  to a rack that the partitions losing replicas are already full in, and no placement could realise
  it with the moves the optimum promises.
* leaders: a single-replica partition is led by its only replica, so per broker the single-replica
  partitions fit the leader counts (``low`` each, ``low + 1`` on at most ``extra`` brokers, for
  ``P = low * B + extra`` partitions). Dropped again if no assignment meets it.
* maximise the replicas kept; a tiny size term makes the smaller replicas move among equals.

The rack-room rows may be left out for some (topic, rack) pairs (:attr:`Program.room_rows`): that is
a relaxation, and :func:`ferry.plan.room.room_violations` tells which left-out rows a solution breaks. Topics
held fixed outside the program (:class:`Outside`) still count in the broker and leader rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import compress

import numpy as np

from ferry.plan.brokerrows import band_rows, leader_rows
from ferry.plan.columns import Columns, TopicColumns
from ferry.plan.flow import RACK, TOPIC
from ferry.plan.pinrows import InRack, pinned_columns, rack_capacity
from ferry.plan.plaintopics import PLAIN_CHUNK, PlainRun, add_plain, batched, is_plain
from ferry.plan.pools import LooseRows, Pools, Refinements, holders, split, tight
from ferry.plan.racks import RackLayout
from ferry.plan.room import rack_room_row
from ferry.plan.saturation import oversaturated, saturation_rows
from ferry.plan.shrink import Group, realise
from ferry.plan.terms import Balance, Outside, Pinned, Setting, TopicDemand, size_scale


class Program(Columns):
    """The integer program: columns are added as the rows that use them are built."""

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
        refined: Refinements | None = None,
    ) -> None:
        super().__init__()
        self.voluntary = voluntary
        self.pool = pool
        """Pool the brokers idle for a topic (:mod:`ferry.plan.pools`); see :attr:`broke`."""
        self.refined = refined or Refinements()
        """How to pose pools and rows where earlier pooled optima broke them (:attr:`broke`)."""
        self.unpool: dict[int, set[int]] = {}
        for t, k in self.refined.unpool:
            self.unpool.setdefault(t, set()).add(k)
        self.pools = Pools.empty(len(demands))
        self.broke = Refinements()
        """The pools of the optimum that could not be split over brokers, and the rows left out
        (:attr:`loose`) that it broke: :meth:`solve` then answered ``None``, and the program is to
        be solved again with these refined (:attr:`refined`)."""
        self.loose = LooseRows()
        """Rack rows of pooled topics left out: an upper bound alone, of 10 partitions' one replica
        per rack where 20 brokers could take extras, which the optimum mostly keeps without being
        told (checked after solving)."""
        self._pooling = False
        self.bulk = True
        """Build runs of plain topics in bulk (:attr:`plain`); ``False``: each on its own."""
        self._room_topics: set[int] | None = None
        self.plain: list[PlainRun] = []
        self.outside = outside or Outside.none(len(layout.brokers))
        self.room_rows = room_rows
        """(topic, rack) pairs that get a rack-room row; ``None``: all of them."""
        self.solution: np.ndarray = np.zeros(0)
        self.extras = TopicColumns()
        """Every topic's extras: (broker position, column)."""
        self.free_at: list[list[tuple[int, int]]] = [[] for _ in demands]
        """Per topic, (broker position, column) of its ``f`` columns."""
        self.implied_at: list[list[int]] = [[] for _ in demands]
        """Per topic, broker positions whose kept free replicas follow from ``x`` (:meth:`_imply_kept`)."""
        self.shrink_col: dict[tuple[int, int, int], int] = {}
        self.pinned_cols: list[list[tuple[Pinned, dict[int, int]]]] = [[] for _ in demands]
        self.layout = layout
        self.demands = demands
        self.kept = TopicColumns()
        """Every topic's columns counting kept replicas (position -1)."""
        self.constant = [0] * len(demands)
        self.scale = scale if scale is not None else size_scale(layout, demands)

    @property
    def unpooled(self) -> bool:
        """The pooled optimum could not be split: see :attr:`broke`."""
        return bool(self.broke)

    def solve(self, setting: Setting) -> Balance | None:
        self.build(setting)
        n = len(self.upper)
        if n == 0:
            return self._read(np.zeros(0))
        solution = self._optimum()
        if solution is not None and self.pools.into:
            solution = self._split(solution)
        self.let_go()
        if solution is None or self.broke:
            return None
        self.solution = solution
        return self._read(solution)

    def _optimum(self) -> np.ndarray | None:
        # Without rack-room rows the relaxation mostly has an integer optimum already.
        relax = self.room_rows is not None and not self.room_rows
        return self.optimum(self.scale, relax_first=relax, keep=bool(self.pools.into))

    def _split(self, solution: np.ndarray) -> np.ndarray | None:
        """Split the pools of ``solution`` (:attr:`Pools.split`), or say why not (:attr:`broke`).
        Where full pools no broker could take are why, rows rule them out and the program is
        solved again first (:mod:`ferry.plan.saturation`): only its parts with those rows are."""
        found, failed, taken = split(self.layout, self.extras, self.pools, solution)
        fresh = oversaturated(self, solution, set(failed) - self.refined.saturate)
        if fresh:
            saturation_rows(self, fresh)
            again = self._optimum()
            if again is None:
                return None
            solution = again
            found, failed, taken = split(self.layout, self.extras, self.pools, solution)
        self.broke.unpool = tight(taken, failed, {k for _, k in self.refined.unpool})
        self.broke.capped = self.loose.broken(solution)
        if self.broke:
            self.broke.saturate = fresh  # the next program poses them from the start
        else:
            self.pools.split = found
        return solution

    def build(self, setting: Setting) -> None:
        """Every column and row of the program under ``setting``."""
        # Pools feed the broker band rows: without them there is nothing to pool for.
        self._pooling = self.pool and setting.slack is not None
        self._topics()
        if setting.slack is not None:
            band_rows(self, setting.band, setting.slack)
        if setting.cap is not None:
            leader_rows(self, *setting.cap)

    def _topics(self) -> None:
        """Every topic's columns and rows: the plain ones (:mod:`ferry.plan.plaintopics`) first, in
        bulk, then the others, each in topic order. Plain topics come interleaved with the others
        (three racks at three replicas, a start that breaks the rack rule on some partitions of
        most topics), and runs of one or two cost numpy more than they save."""
        plain = [self._pooling and is_plain(self, t, d) for t, d in enumerate(self.demands)]
        chosen = list(compress(range(len(plain)), plain))
        if self.bulk:
            for chunk in batched(chosen, PLAIN_CHUNK):
                add_plain(self, list(chunk))
        else:
            for t in chosen:
                self._topic(t, self.demands[t])
        for t in compress(range(len(plain)), (not p for p in plain)):
            self._topic(t, self.demands[t])

    def room_topics(self, t: int) -> bool:
        """Whether topic ``t`` gets any rack-room row."""
        if self._room_topics is None:
            self._room_topics = {u for u, _ in self.room_rows or ()}
        return self.room_rows is None or t in self._room_topics

    def _extras(self, t: int, d: TopicDemand) -> tuple[dict[int, int], dict[int, list[int]]]:
        """Columns ``x[t, b]`` per broker position, with the topic's and each rack's extras rows."""
        layout = self.layout
        mine: dict[int, int] = {}
        pooled: dict[int, list[int]] = {}
        if d.quota.extras > 0:
            idle: dict[int, int] = {}
            if self._pooling and not d.single_replica:
                # Single-replica partitions' leader rows count the extras of each broker.
                at, idle = holders(layout, d, self.unpool.get(t, ()))
            else:
                at = d.quota.extra_positions(layout)
            # In bulk: a cluster of 10,000 topics x 200 brokers has two million of these columns.
            first = len(self.upper)
            mine = {i: first + j for j, i in enumerate(at)}
            self.upper.extend([1] * len(at))
            self.gain.extend([0] * len(at))
            self.size.extend([d.shed[i] for i in at])
            self.extras.add(t, list(mine), list(mine.values()))
            pooled = self._pooled(t, idle)
            everyone = [*mine.values(), *(c for cols in pooled.values() for c in cols)]
            if _racks_decide(d):
                self.implied.append(len(self.lows))
            self.ones(everyone, d.quota.extras, d.quota.extras, TOPIC)
            by_rack: dict[int, list[int]] = {}
            for i, c in mine.items():
                by_rack.setdefault(layout.rack_at[i], []).append(c)
            for k, (lo_k, hi_k) in enumerate(d.quota.rack_extras):
                cols = by_rack.get(k, [])
                brokers = len(cols) + idle.get(k, 0)
                cols.extend(pooled.get(k, ()))
                if not cols or (lo_k == 0 and hi_k >= brokers):
                    continue
                if lo_k == 0 and k in idle and not self._capped(t, k):
                    self.loose.add(t, k, cols, hi_k)
                else:
                    self.ones(cols, lo_k, hi_k, RACK)
        return mine, pooled

    def _capped(self, t: int, k: int) -> bool:
        """Whether topic ``t``'s row of most extras in rack ``k`` is posed although loose."""
        return self.refined.every_cap or (t, k) in self.refined.capped

    def _pooled(self, t: int, idle: dict[int, int]) -> dict[int, list[int]]:
        """Per rack, ``y[t, rack]`` over its ``idle`` brokers: a first unit, and the rest at a
        penalty each, so the optimum spreads pooled extras over many topics where it can: a broker
        takes at most one of each topic's (:func:`ferry.plan.pools.split`). In bulk: a million of
        them at 100,000 topics."""
        out: dict[int, list[int]] = {}
        uppers: list[int] = []
        c = len(self.upper)
        for k, n in idle.items():
            if n == 1:
                out[k] = [c]
                uppers.append(1)
            else:
                out[k] = [c, c + 1]
                uppers += (1, n - 1)
                self.penalty.append(c + 1)
            self.pools.add(t, k, out[k])
            c += len(out[k])
        self.upper.extend(uppers)
        self.gain.extend([0] * len(uppers))
        self.size.extend([0] * len(uppers))
        return out

    def _topic(self, t: int, d: TopicDemand) -> None:
        layout = self.layout
        mine, pooled = self._extras(t, d)
        on_broker, in_rack, kept_in_rack, room_cols = pinned_columns(self, t, d)
        self._shrinking(t, d, on_broker, in_rack, kept_in_rack, room_cols)
        free_cols: dict[int, int] = {}
        roomy = d.rack_room and self.room_topics(t)
        counted = {k for k in in_rack if not (d.rack_floor and d.rack_floor[k])}
        implied: list[int] = []
        # A broker holding nothing of the topic keeps nothing of it: only holders need a look.
        for i in compress(range(len(d.held)), d.held):
            base = d.quota.base[i]
            if d.held[i] <= base and not (self.voluntary and d.rack_room and d.free[i]):
                # Cannot exceed its quota: everything it holds of free partitions stays.
                self.constant[t] += d.free[i]
                continue
            if not (roomy or i in on_broker or layout.rack_at[i] in counted):
                implied.append(i)
                continue
            terms = [(c, 1.0) for c in on_broker.get(i, [])]
            if d.free[i]:  # else only pinned partitions keep replicas here: no column for free ones
                f = free_cols[i] = self.column(d.free[i], 1)
                self.free_at[t].append((i, f))
                self.kept.add_one(t, f)
                terms.append((f, 1.0))
            if i in mine:
                terms.append((mine[i], -1.0))
            self.row(terms, -np.inf, base)
        self._imply_kept(t, implied, d, mine)
        for k, held in in_rack.items():
            rack_capacity(self, d, k, held, (mine, free_cols, pooled.get(k, [])))
        if d.rack_room:
            for k in range(len(layout.members)):
                if self.wants_room(t, k):
                    rack_room_row(
                        self,
                        d,
                        k,
                        (mine, pooled.get(k, [])),
                        free_cols,
                        kept_in_rack.get(k, []),
                        room_cols.get(k, []),
                    )

    def _imply_kept(self, t: int, positions: list[int], d: TopicDemand, mine: Mapping[int, int]) -> None:
        """Keep ``min(free, base + x)`` replicas on each broker of ``positions`` without an ``f``
        column.

        Where no pinned partition or shrinking group keeps a replica on ``b``, no rack-room row is
        posed for the topic and ``b``'s rack has no capacity row counting free replicas
        (:func:`~ferry.plan.pinrows.rack_capacity`), ``f[t, b]`` appears in its broker row only, so
        ``f = min(free, base + x)`` at every optimum: the column and its row are left out and ``x``
        carries the kept replica. What is left of a plain rebalance is then a transportation
        problem (:mod:`ferry.plan.flow`).
        """
        self.implied_at[t] = positions
        free, base = d.free, d.quota.base
        self.constant[t] += sum(min(free[i], base[i]) for i in positions)
        for i in positions:
            if i in mine and free[i] > base[i]:
                self.gain[mine[i]] += 1
                self.kept.add_one(t, mine[i])

    def _shrinking(
        self,
        t: int,
        d: TopicDemand,
        on_broker: dict[int, list[int]],
        in_rack: dict[int, InRack],
        kept_in_rack: dict[int, list[int]],
        room_cols: dict[int, list[int]],
    ) -> None:
        """Columns ``g[t, group, b]``: partitions of a group (:mod:`ferry.plan.shrink`) keeping ``b``."""
        layout = self.layout
        for g, group in enumerate(d.shrink_groups):
            m = len(group.members)
            cols = {}
            for b in group.replicas:
                i = layout.position[b]
                k = layout.rack_of[b]
                c = cols[b] = self.shrink_col[t, g, b] = self.column(m, 1)
                self.kept.add_one(t, c)
                on_broker.setdefault(i, []).append(c)
                kept_in_rack.setdefault(k, []).append(c)
                if k in in_rack:
                    in_rack[k].cols.append(c)
            most = group.rf * m
            self.ones(list(cols.values()), -np.inf, most)
            if not d.rack_room:
                continue
            for k, (_, hi) in enumerate(layout.bounds(group.rf)):
                if not self.wants_room(t, k):
                    continue
                # Open slots the group leaves, within room under rack k's upper bound.
                w = self.column(min(most, hi * m), 0)
                room_cols.setdefault(k, []).append(w)
                self.row([(w, 1.0), *((c, 1.0) for c in cols.values())], -np.inf, most)
                here = [(c, 1.0) for b, c in cols.items() if layout.rack_of[b] == k]
                if here:
                    self.row([(w, 1.0), *here], -np.inf, hi * m)

    def group_counts(self, t: int, g: int, group: Group) -> dict[int, int]:
        """Per replica of a shrink group, how many of its partitions keep it in the solution."""
        x = self.solution
        return {b: int(x[self.shrink_col[t, g, b]]) for b in group.replicas}

    def wants_room(self, t: int, k: int) -> bool:
        return self.room_rows is None or (t, k) in self.room_rows

    def _read(self, x: np.ndarray) -> Balance:
        topics = len(self.demands)
        quotas = [list(d.quota.base) for d in self.demands]
        topic, pos, col = self.extras.arrays()
        chosen = x[col] > 0.5
        for t, i in zip(topic[chosen].tolist(), pos[chosen].tolist(), strict=True):
            quotas[t][i] += 1
        for t, at in enumerate(self.pools.split if self.pools.into else ()):
            for i in at:
                quotas[t][i] += 1
        topic, _, col = self.kept.arrays()
        kept = np.bincount(topic, weights=x[col], minlength=topics).round().astype(np.int64) + self.constant
        decided = [
            {pin.index: frozenset(b for b, c in cols.items() if x[c] > 0.5) for pin, cols in pinned}
            for pinned in self.pinned_cols
        ]
        for t, d in enumerate(self.demands):
            for g, group in enumerate(d.shrink_groups):
                decided[t].update(realise(group, self.group_counts(t, g, group)))
        return Balance([tuple(q) for q in quotas], kept.tolist(), decided)


def _racks_decide(d: TopicDemand) -> bool:
    """Whether the topic's rack rows alone fix how many extras it hands out, so that its topic row
    is the sum of them (:attr:`~ferry.plan.columns.Columns.implied`): every rack's extras exact and
    adding up to the topic's."""
    racks = d.quota.rack_extras
    return all(lo == hi for lo, hi in racks) and sum(lo for lo, _ in racks) == d.quota.extras
