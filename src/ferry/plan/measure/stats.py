"""Balance statistics of a placement: spreads, rack violations, replicas off target brokers.

Counted with numpy over the placement's flattened replica lists: the report counts a million
partitions twice (before and after), and a plan's partitions have up to as many distinct replica
sets as partitions, so the per-set Python check took seconds of the driver's serial time. Per-topic
and per-rack counts come from sorted (group, broker) cells, not dense tables, so memory stays
linear in the replicas however many topics, brokers or racks there are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from ferry.model.cluster import TopicPartition
from ferry.plan import consecutive as grouped
from ferry.plan.racks import RackLayout

Placement = Sequence[tuple[TopicPartition, Sequence[int]]]


@dataclass(frozen=True)
class _Flat:
    """A placement as arrays: one entry per replica, brokers as indexes into ``ids``."""

    ids: np.ndarray
    """Every broker id seen or targeted, sorted."""
    broker: np.ndarray
    partition: np.ndarray
    """Per replica, its partition's index in the placement."""
    lengths: np.ndarray
    """Per partition, its number of replicas."""
    topic: np.ndarray
    """Per partition, its topic's index (in order of first appearance)."""

    @classmethod
    def of(cls, placement: Placement, targets: Sequence[int]) -> _Flat:
        sets = [reps for _, reps in placement]
        lengths = np.fromiter(map(len, sets), dtype=np.int64, count=len(sets))
        flat = np.fromiter(chain.from_iterable(sets), dtype=np.int64, count=int(lengths.sum()))
        ids = np.unique(np.concatenate([flat, np.asarray(targets, dtype=np.int64)]))
        partition = np.repeat(np.arange(len(sets), dtype=np.int64), lengths)
        codes: dict[str, int] = {}
        topics = (codes.setdefault(tp.topic, len(codes)) for tp, _ in placement)
        topic = np.fromiter(topics, dtype=np.int64, count=len(placement))
        return cls(ids, np.searchsorted(ids, flat), partition, lengths, topic)

    def leaders(self) -> np.ndarray:
        """The broker index of every non-empty partition's first replica."""
        first: np.ndarray = self.broker[grouped.starts(self.lengths)[self.lengths > 0]]
        return first


def balance(placement: Placement, targets: Sequence[int], racks: RackLayout) -> dict[str, int]:
    """Balance figures of ``placement`` over the ``targets`` brokers.

    ``racks`` must cover every broker that appears in the placement (use a layout of all brokers),
    so violations are counted before a plan as well as after it.
    """
    flat = _Flat.of(placement, targets)
    width = len(flat.ids)
    replicas = np.bincount(flat.broker, minlength=width)
    on_target = np.searchsorted(flat.ids, np.array(sorted(set(targets)), dtype=np.int64))
    per_target = replicas[on_target]
    off_target = np.ones(width, dtype=bool)
    off_target[on_target] = False
    cells = _topic_cells(flat, ~off_target[flat.broker], width)
    return {
        "replica_spread": _spread(per_target),
        "topic_replica_spread_max": _topic_spread(cells, width, on_target.size),
        "rack_replica_spread_max": _rack_spread(per_target, flat.ids[on_target], racks),
        "topic_rack_spread_max": _topic_rack_spread(cells, flat, on_target, racks),
        "leader_spread": _spread(np.bincount(flat.leaders(), minlength=width)[on_target]),
        "rack_violations": _violations(flat, racks),
        "replicas_off_target": int(replicas[off_target].sum()),
        "max_replicas_per_broker": int(per_target.max(initial=0)),
        "min_replicas_per_broker": int(per_target.min()) if per_target.size else 0,
    }


def _spread(counts: np.ndarray) -> int:
    return int(counts.max() - counts.min()) if counts.size else 0


def _groups(cells: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """For sorted ``group * width + member`` cells: each cell's group and where each group starts."""
    owner = cells // width
    return owner, np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])


def _topic_cells(flat: _Flat, keep: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted ``topic * width + broker`` cells of the ``keep`` replicas, and the replicas in each
    (the per-topic spreads below read those of the target brokers)."""
    cells = flat.topic[flat.partition[keep]] * width + flat.broker[keep]
    found, counts = np.unique(cells, return_counts=True)
    return found, counts


def _topic_spread(target_cells: tuple[np.ndarray, np.ndarray], width: int, targets: int) -> int:
    """The largest per-topic replica spread over the ``targets`` brokers (a topic's partitions may
    lie apart), from the cells of the target brokers."""
    cells, counts = target_cells
    if not cells.size:
        return 0
    _, starts = _groups(cells, width)
    highs = np.maximum.reduceat(counts, starts)
    # A topic missing from some target broker has 0 there: its low is 0, not its smallest count.
    full = np.diff(np.r_[starts, cells.size]) == targets
    lows = np.where(full, np.minimum.reduceat(counts, starts), 0)
    return int((highs - lows).max())


def _rack_of(ids: np.ndarray, racks: RackLayout) -> np.ndarray:
    """Per broker id, its rack's index in ``racks`` (-1 where it has none there)."""
    return np.array([racks.rack_of.get(int(b), -1) for b in ids], dtype=np.int64)


def _rack_spread(per_target: np.ndarray, ids: np.ndarray, racks: RackLayout) -> int:
    """The largest replica spread among the target brokers of one rack."""
    rack = _rack_of(ids, racks)
    spreads = [_spread(per_target[rack == k]) for k in np.unique(rack).tolist()]
    return max(spreads, default=0)


def _topic_rack_spread(
    target_cells: tuple[np.ndarray, np.ndarray], flat: _Flat, on_target: np.ndarray, racks: RackLayout
) -> int:
    """The largest spread of one topic's replicas among the target brokers of one rack.

    Where the rack rule forces racks of unequal size to carry unequal loads, a topic cannot be even
    over the whole cluster, but it can still be even inside every rack.
    """
    rack_by_index = np.full(len(flat.ids), -1, dtype=np.int64)
    rack_by_index[on_target] = _rack_of(flat.ids[on_target], racks)
    members = np.bincount(rack_by_index[on_target] + 1, minlength=len(racks.names) + 1)[1:]
    width = len(flat.ids)
    # The target brokers in a rack of ``racks``.
    known = rack_by_index[target_cells[0] % width] >= 0
    cells, counts = target_cells[0][known], target_cells[1][known]
    if not cells.size:
        return 0
    racks_n = max(1, len(racks.names))
    group = (cells // width) * racks_n + rack_by_index[cells % width]
    order = np.argsort(group, kind="stable")
    group, counts = group[order], counts[order]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    highs = np.maximum.reduceat(counts, starts)
    # A rack broker without the topic holds 0 of it: the group's low is 0 unless every member has some.
    full = np.diff(np.r_[starts, group.size]) == members[group[starts] % racks_n]
    lows = np.where(full, np.minimum.reduceat(counts, starts), 0)
    return int((highs - lows).max())


def _violations(flat: _Flat, racks: RackLayout) -> int:
    """Partitions holding more replicas in a rack than the rack rule allows (brokers outside
    ``racks`` are not counted, as in :meth:`RackLayout.violations`)."""
    rack = _rack_of(flat.ids, racks)[flat.broker]
    known = rack >= 0
    partition, rack = flat.partition[known], rack[known]
    width = max(1, len(racks.names))
    cells, counts = np.unique(partition * width + rack, return_counts=True)
    if not cells.size:
        return 0
    owner, _ = _groups(cells, width)
    rf = np.bincount(partition, minlength=flat.lengths.size)[owner]
    uppers = np.zeros((int(rf.max()) + 1, width), dtype=np.int64)
    for r in np.unique(rf).tolist():
        uppers[r] = [hi for _, hi in racks.bounds(r)]
    broken = counts > uppers[rf, cells % width]
    return int(np.unique(owner[broken]).size)
