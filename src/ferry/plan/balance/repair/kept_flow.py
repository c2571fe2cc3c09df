"""The most replicas each topic can keep under its quotas, exactly: one small min-cost flow per topic
(:mod:`ferry.plan.balance.repair.per_partition` reads it). Per topic::

    partition --[rack bounds]--> (partition, rack) --[keep: 1]--> broker --[quota]--> rack
              --[rack bounds: new replicas in a rack it has none in]----------------> rack
    (partition, rack) --[new replicas beside the ones it has there]-----------------> rack
    rack --[exactly the rack's quotas]--> sink

Exact where a rack holds at most one replica of a partition (the usual strict layout): a rack's new
replicas then go to any of its brokers with room. A topic whose partitions a rack may hold two of
is posed broker by broker instead (:mod:`ferry.plan.balance.repair.broker_arcs`), exact as well.

The networks of all topics are built at once with numpy and solved one topic at a time: OR-Tools'
cost scaling was many times slower on one network of every topic than on the topics one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ferry.plan import forked
from ferry.plan.balance.repair.broker_arcs import broker_arcs, crowding
from ferry.plan.balance.repair.flat_layouts import FlatLayouts
from ferry.plan.consecutive import rank
from ferry.plan.prepare.demand import FreeLayouts, TopicDemand
from ferry.plan.racks import RackLayout


def kept_exactly(
    layout: RackLayout, d: TopicDemand, quota: Sequence[int], *, fix_settled: bool = False
) -> int:
    """One topic's :func:`kept_per_topic`."""
    return kept_per_topic(layout, [d], [quota], fix_settled=fix_settled)[0]


RUN = 1 << 16
"""Most partitions per run of topics whose networks are built at once: every topic's of a
1M-partition skewed start at once held about two GB over the rest of the plan, the plan's peak."""

RUNS_PER_CORE = 4
"""Runs per core where the runs themselves are spread over forked processes: several, so that runs
of unequal weight still split about evenly."""


def kept_per_topic(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    quotas: Sequence[Sequence[int]],
    *,
    fix_settled: bool,
    run: int = RUN,
) -> list[int]:
    """Per topic, the most replicas kept (module docstring); -1 where no placement meets the quotas.
    Built and solved a run of topics of at most ``run`` partitions at a time (each topic's network is
    its own, so the answers are the same).

    Where there are cores for it the runs, each built and solved whole, are spread over forked
    processes (:func:`~ferry.plan.forked.forked_map`): building the networks is about a third of
    the work, and one fork for all the runs costs less than one per run.

    Args:
        fix_settled: keep the partitions that need nothing (complete, within their rack bounds, on no
            broker above its quota) where they are, outside the flow: a lower bound then, in a
            fraction of the time.
    """
    sizes = [len(d.layouts) for d in demands]
    total, cores = sum(sizes), forked.cores()
    spread = cores > 1 and total >= forked.SPREAD_FROM
    if spread:
        run = min(run, max(1, -(-total // (RUNS_PER_CORE * cores))))
    bounds = _cut(sizes, run)

    def solved(i: int) -> list[int]:
        first, stop = bounds[i]
        return _kept_run(layout, demands[first:stop], quotas[first:stop], fix_settled)

    weights = [sum(sizes[first:stop]) for first, stop in bounds]
    runs = forked.forked_map(solved, weights) if spread else [solved(i) for i in range(len(bounds))]
    return [kept for found in runs for kept in found]


def _cut(sizes: Sequence[int], run: int) -> list[tuple[int, int]]:
    """Consecutive (first, stop) runs of topics, each closed at the topic that brings it to ``run``
    partitions (or at the last)."""
    out: list[tuple[int, int]] = []
    first, size = 0, 0
    for t, partitions in enumerate(sizes):
        size += partitions
        if size >= run or t == len(sizes) - 1:
            out.append((first, t + 1))
            first, size = t + 1, 0
    return out


def _kept_run(
    layout: RackLayout, demands: Sequence[TopicDemand], quotas: Sequence[Sequence[int]], fix_settled: bool
) -> list[int]:
    """:func:`kept_per_topic` of one run of topics."""
    flat = FlatLayouts.of(layout, [d.layouts for d in demands])
    brokers, racks = len(layout.brokers), len(layout.members)
    # Per topic and broker only the quotas: a million topics x brokers in int32, and no other array
    # that size (on the driver, fresh memory is much of the cost of this pass).
    left = np.array(quotas, dtype=np.int32).reshape(len(demands), brokers)
    rack_at = np.asarray(layout.rack_at, dtype=np.int64)
    rep_topic = flat.topic[flat.rep_part]
    key = rep_topic * brokers + flat.rep_pos
    if fix_settled:
        _, where, held = np.unique(key, return_inverse=True, return_counts=True)
        over = held[where] > left.ravel()[key]
        settled = _settled(flat, rack_at, over, racks)
    else:
        settled = np.zeros(len(flat.rf), bool)
    fixed_reps = settled[flat.rep_part]
    fixed = np.bincount(rep_topic[fixed_reps], minlength=len(demands))
    np.subtract.at(left.ravel(), key[fixed_reps], 1)
    total = _rack_totals(left, layout)
    graph = _Graph.of(flat, ~settled, left, total, rack_at)
    # A topic with nothing left to place needs no flow: its racks must then expect nothing either.
    placing = np.bincount(flat.topic[~settled], minlength=len(demands))
    done: list[int] = np.where(np.any(total != 0, axis=1), -1, fixed).tolist()

    out = []
    for t in range(len(demands)):
        if not placing[t]:
            out.append(done[t])
            continue
        found = graph.solve(t)
        out.append(int(fixed[t]) + found if found >= 0 else -1)
    return out


def kept_replicas(
    layout: RackLayout, topic: FreeLayouts, quota: Sequence[int]
) -> list[frozenset[int]] | None:
    """Per partition of one topic, the brokers (ids) whose replicas stay in a placement under
    ``quota`` that keeps the most (module docstring); ``None`` where none meets the quotas."""
    flat = FlatLayouts.of(layout, [topic])
    left = np.array([quota], dtype=np.int32)
    rack_at = np.asarray(layout.rack_at, dtype=np.int64)
    graph = _Graph.of(flat, np.ones(len(flat.rf), dtype=bool), left, _rack_totals(left, layout), rack_at)
    kept = graph.kept(0)
    if kept is None:
        return None
    out: list[set[int]] = [set() for _ in range(len(topic))]
    for part, pos in zip(flat.rep_part[kept].tolist(), flat.rep_pos[kept].tolist(), strict=True):
        out[part].add(layout.brokers[pos])
    return [frozenset(s) for s in out]


def _rack_totals(left: np.ndarray, layout: RackLayout) -> np.ndarray:
    """Per topic and rack, what ``left`` leaves its brokers there."""
    total = np.zeros((len(left), len(layout.members)), dtype=np.int64)
    for k, members in enumerate(layout.members):
        total[:, k] = left[:, [layout.position[b] for b in members]].sum(axis=1)
    return total


def _settled(flat: FlatLayouts, rack_at: np.ndarray, over: np.ndarray, racks: int) -> np.ndarray:
    """Per partition: complete, within its rack bounds, and on no broker above its quota (``over``:
    per replica, whether its broker holds more of the topic than its quota)."""
    parts = len(flat.rf)
    touches = np.bincount(flat.rep_part, weights=over.astype(np.float64), minlength=parts)
    pairs, counts = np.unique(flat.rep_part * racks + rack_at[flat.rep_pos], return_counts=True)
    part, rack = pairs // racks, pairs % racks
    rf = flat.rf[part]
    above = np.bincount(part, weights=(counts > flat.hi[rf, rack]).astype(np.float64), minlength=parts)
    # Lower bounds: what the racks it holds cover of the sum of its factor's lower bounds.
    covered = np.bincount(part, weights=np.minimum(counts, flat.lo[rf, rack]), minlength=parts)
    short = flat.lo.sum(axis=1)[flat.rf] - covered
    settled: np.ndarray = (flat.count == flat.rf) & (touches == 0) & (above == 0) & (short <= 0)
    return settled


@dataclass(frozen=True)
class _Graph:
    """Every topic's network, arcs grouped by topic, with local node numbers: racks ``0..R-1``, the
    sink ``R``, then its partitions, its (partition, rack) pairs and its brokers."""

    tails: np.ndarray
    heads: np.ndarray
    caps: np.ndarray
    costs: np.ndarray
    arc_start: np.ndarray
    supply: np.ndarray
    node_start: np.ndarray
    replica: np.ndarray
    """Per arc, the replica (index into the flat replicas) it keeps in place, -1 for other arcs."""

    @classmethod
    def of(
        cls, flat: FlatLayouts, moving: np.ndarray, left: np.ndarray, total: np.ndarray, rack_at: np.ndarray
    ) -> _Graph:
        """The network of the ``moving`` partitions of every topic: the rack-level one of the module
        docstring, or for a topic whose partitions a rack may hold two of, the broker-level one of
        :mod:`ferry.plan.balance.repair.broker_arcs`."""
        topics = len(left)
        racks = total.shape[1]
        part = np.flatnonzero(moving)
        ptopic = flat.topic[part]
        n_parts = np.bincount(ptopic, minlength=topics)
        part_node = racks + 1 + rank(ptopic, n_parts)
        crowded = crowding(flat, part, topics)
        by_broker = crowded[ptopic]
        kinds, inner, replica = _rack_level(
            flat,
            part[~by_broker],
            part_node[~by_broker],
            n_parts,
            left,
            np.where(crowded[:, None], 0, total),
            rack_at,
        )
        more, added, kept_by = broker_arcs(
            flat, part[by_broker], part_node[by_broker], racks + 1 + n_parts, left, rack_at
        )
        replica += kept_by
        prf = flat.rf[part]
        return cls._assemble(
            kinds + more, topics, racks, n_parts + inner + added, ptopic, part_node, prf, replica
        )

    @classmethod
    def _assemble(
        cls,
        kinds: list[tuple[Any, ...]],
        topics: int,
        racks: int,
        inner: np.ndarray,
        ptopic: np.ndarray,
        part_node: np.ndarray,
        prf: np.ndarray,
        replica: list[np.ndarray],
    ) -> _Graph:
        topic = np.concatenate([np.asarray(k[0], dtype=np.int64) for k in kinds])
        order = np.argsort(topic, kind="stable")
        tails, heads, lows, highs = (
            np.concatenate([np.asarray(k[i], dtype=np.int64) for k in kinds])[order] for i in range(1, 5)
        )
        costs = np.concatenate([np.broadcast_to(k[5], len(k[0])) for k in kinds]).astype(np.int64)[order]
        node_start = np.r_[0, np.cumsum(racks + 1 + inner)]
        supply = np.zeros(int(node_start[-1]), dtype=np.int64)
        supply[node_start[ptopic] + part_node] = prf
        supply[node_start[:-1] + racks] = -np.bincount(ptopic, weights=prf, minlength=topics).astype(np.int64)
        # A lower bound is flow that must pass: it leaves the tail's supply and joins the head's.
        base = node_start[topic[order]]
        np.subtract.at(supply, base + tails, lows)
        np.add.at(supply, base + heads, lows)
        arc_start = np.r_[0, np.cumsum(np.bincount(topic, minlength=topics))]
        return cls(
            tails, heads, highs - lows, costs, arc_start, supply, node_start, np.concatenate(replica)[order]
        )

    def solve(self, t: int) -> int:
        """Replicas kept by topic ``t``'s flow at its optimum, -1 when none meets the bounds."""
        flow = self._solved(t)
        return -1 if flow is None else -int(flow.optimal_cost())

    def kept(self, t: int) -> np.ndarray | None:
        """The replicas (flat indices) topic ``t``'s flow keeps at its optimum, ``None`` when no flow
        meets the bounds."""
        flow = self._solved(t)
        if flow is None:
            return None
        arcs = slice(self.arc_start[t], self.arc_start[t + 1])
        replica = self.replica[arcs]
        used = flow.flows(np.arange(len(replica))) > 0
        out: np.ndarray = replica[used & (replica >= 0)]
        return out

    def _solved(self, t: int) -> Any:
        from ortools.graph.python import min_cost_flow

        arcs = slice(self.arc_start[t], self.arc_start[t + 1])
        nodes = slice(self.node_start[t], self.node_start[t + 1])
        flow = min_cost_flow.SimpleMinCostFlow()
        flow.add_arcs_with_capacity_and_unit_cost(
            self.tails[arcs], self.heads[arcs], self.caps[arcs], self.costs[arcs]
        )
        supply = self.supply[nodes]
        flow.set_nodes_supplies(np.arange(len(supply)), supply)
        return flow if flow.solve() == flow.OPTIMAL else None


def _rack_level(
    flat: FlatLayouts,
    part: np.ndarray,
    part_node: np.ndarray,
    n_parts: np.ndarray,
    left: np.ndarray,
    total: np.ndarray,
    rack_at: np.ndarray,
) -> tuple[list[tuple[Any, ...]], np.ndarray, list[np.ndarray]]:
    """The rack-level arcs of the ``part`` partitions (at local nodes ``part_node``; ``n_parts``
    per topic in all), with the nodes each topic's pairs and held brokers add, and per arc the
    replica it keeps (-1 for others)."""
    topics, brokers = left.shape
    racks = total.shape[1]
    ptopic = flat.topic[part]
    node_of_part = np.full(len(flat.rf), -1, dtype=np.int64)
    node_of_part[part] = part_node
    keep = np.zeros(len(flat.rf), dtype=bool)
    keep[part] = True
    keep = keep[flat.rep_part]
    rp, rpos = flat.rep_part[keep], flat.rep_pos[keep]
    rtopic, rrack = flat.topic[rp], rack_at[rpos]
    pairs, pair_of_rep = np.unique(rp * racks + rrack, return_inverse=True)
    pair_part, pair_rack = pairs // racks, pairs % racks
    pair_topic = flat.topic[pair_part]
    n_pairs = np.bincount(pair_topic, minlength=topics)
    pair_node = racks + 1 + n_parts[pair_topic] + rank(pair_topic, n_pairs)
    held, broker_of_rep = np.unique(rtopic * brokers + rpos, return_inverse=True)
    held_topic, held_pos = held // brokers, held % brokers
    n_held = np.bincount(held_topic, minlength=topics)
    held_node = racks + 1 + n_parts[held_topic] + n_pairs[held_topic] + rank(held_topic, n_held)
    rf = flat.rf[pair_part]
    lo_p, hi_p = flat.lo[rf, pair_rack], flat.hi[rf, pair_rack]
    kinds = [
        # topic, tail, head, low, high, cost
        _rack_arcs(total),
        (pair_topic, node_of_part[pair_part], pair_node, lo_p, hi_p, 0),
        (pair_topic, pair_node, pair_rack, np.zeros_like(hi_p), hi_p, 0),
        (held_topic, held_node, rack_at[held_pos], np.zeros_like(held_pos), left[held_topic, held_pos], 0),
        (rtopic, pair_node[pair_of_rep], held_node[broker_of_rep], np.zeros_like(rp), np.ones_like(rp), -1),
        _open_arcs(flat, part, ptopic, part_node, pair_part, pair_rack, racks),
    ]
    replica = [np.full(len(k[0]), -1, dtype=np.int64) for k in kinds]
    replica[4] = np.flatnonzero(keep)
    return kinds, n_pairs + n_held, replica


def _rack_arcs(total: np.ndarray) -> tuple[Any, ...]:
    """Per topic and rack: exactly the rack's quotas (``total``) to the sink."""
    topics, racks = total.shape
    tails = np.tile(np.arange(racks), topics)
    return (
        np.repeat(np.arange(topics), racks),
        tails,
        np.full(len(tails), racks),
        total.ravel(),
        total.ravel(),
        0,
    )


def _open_arcs(
    flat: FlatLayouts,
    part: np.ndarray,
    ptopic: np.ndarray,
    part_node: np.ndarray,
    pair_part: np.ndarray,
    pair_rack: np.ndarray,
    racks: int,
) -> tuple[Any, ...]:
    """New replicas of a partition in racks it holds nothing in, within their bounds."""
    has = np.zeros((len(part), racks), dtype=bool)
    has[np.searchsorted(part, pair_part), pair_rack] = True
    prf = flat.rf[part]
    rows, cols = np.nonzero(~has & (flat.hi[prf] > 0))
    return (ptopic[rows], part_node[rows], cols, flat.lo[prf[rows], cols], flat.hi[prf[rows], cols], 0)
