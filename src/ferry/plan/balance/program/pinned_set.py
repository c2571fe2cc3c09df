"""A topic's pinned partitions as the balance program posed them
(:mod:`ferry.plan.balance.program.pinned_rows`): per replica its ``k[p, b]`` column, partition and
rack, flat, so that what a solution keeps of them and the rack room it leaves are read with a few
array operations per topic rather than a loop per partition."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from ferry.plan.prepare.demand import Pinned
from ferry.plan.racks import RackBounds, RackLayout


@dataclass(frozen=True)
class PinnedSet:
    """Pinned partition ``pin[e]`` keeps broker ``brokers[e]`` (at layout position ``position[e]``, in
    rack ``rack[e]``) through column ``cols[e]`` (entries in the partitions' order, each partition's
    replicas in their order)."""

    pins: tuple[Pinned, ...]
    brokers: np.ndarray
    position: np.ndarray
    cols: np.ndarray
    pin: np.ndarray
    rack: np.ndarray
    rf: np.ndarray
    """Per partition, the factor it must end with."""
    hi: np.ndarray
    """Per partition and rack, the most replicas it may hold there (its factor where unbounded)."""
    bounded: np.ndarray
    """Per partition, whether racks bound it."""
    lo: np.ndarray
    """Per partition and rack, the fewest replicas it must hold there (0 where unbounded)."""

    @classmethod
    def of(cls, pins: Sequence[Pinned], cols: np.ndarray, layout: RackLayout) -> PinnedSet:
        """``pins``: at least one; ``cols``: per replica of the partitions, in order, its column."""
        racks = len(layout.members)
        lens = np.fromiter((len(p.replicas) for p in pins), dtype=np.int64, count=len(pins))
        flat = chain.from_iterable(p.replicas for p in pins)
        brokers = np.fromiter(flat, dtype=np.int64, count=int(lens.sum()))
        where = layout.position
        position = np.fromiter((where[b] for b in brokers.tolist()), dtype=np.int64, count=len(brokers))
        rf = np.fromiter((p.rf for p in pins), dtype=np.int64, count=len(pins))
        # Few distinct bounds (one per factor): a table of them, and per partition its row.
        table: dict[RackBounds | None, int] = {}
        which = [table.setdefault(p.bounds, len(table)) for p in pins]
        unbounded = [(0, -1)] * racks
        table_bounds = np.array([b if b is not None else unbounded for b in table], dtype=np.int64)
        los, hi = (table_bounds[np.asarray(which, dtype=np.int64), :, side] for side in (0, 1))
        bounded = hi[:, 0] >= 0
        return cls(
            tuple(pins),
            brokers,
            position,
            np.asarray(cols, dtype=np.int64),
            np.repeat(np.arange(len(pins)), lens),
            np.asarray(layout.rack_at, dtype=np.int64)[position],
            rf,
            np.where(bounded[:, None], hi, rf[:, None]),
            bounded,
            los,
        )

    def parts(self, pin_count: np.ndarray, cols: np.ndarray) -> list[PinnedSet]:
        """The set of a run of topics (:mod:`ferry.plan.balance.program.pinned_run`) cut into one per
        topic, of ``pin_count`` partitions each, with ``cols`` (per replica) as their columns."""
        pin_at = np.concatenate(([0], np.cumsum(pin_count))).tolist()
        rep_at = np.searchsorted(self.pin, pin_at).tolist()
        return [
            PinnedSet(
                self.pins[a:b],
                self.brokers[r:s],
                self.position[r:s],
                cols[r:s],
                self.pin[r:s] - a,
                self.rack[r:s],
                self.rf[a:b],
                self.hi[a:b],
                self.bounded[a:b],
                self.lo[a:b],
            )
            for a, b, r, s in zip(pin_at[:-1], pin_at[1:], rep_at[:-1], rep_at[1:], strict=True)
        ]

    def counts(self) -> np.ndarray:
        """Per partition and rack, the replicas it holds there."""
        racks = self.hi.shape[1]
        return np.bincount(self.pin * racks + self.rack, minlength=len(self.pins) * racks).reshape(-1, racks)

    def over(self, counts: np.ndarray) -> np.ndarray:
        """Per partition and rack, whether it holds more there (``counts``: :meth:`counts`) than the
        rack's upper bound allows: a pair row each."""
        out: np.ndarray = self.bounded[:, None] & (counts > self.hi)
        return out

    def binding(self, counts: np.ndarray) -> np.ndarray:
        """Per partition, whether its row of at most ``rf`` replicas (kept, or owed to racks with a
        lower bound) can bind: not where keeping the most each rack allows, and owing each rack its
        lower bound, adds up to no more than ``rf``
        (:func:`~ferry.plan.balance.program.pinned_rows._never_binds`)."""
        most = np.maximum(np.minimum(counts, self.hi), self.lo)
        out: np.ndarray = ~self.bounded | (most.sum(axis=1) > self.rf)
        return out

    def kept(self, x: np.ndarray) -> dict[int, frozenset[int]]:
        """Per partition (its index in the topic), the brokers the solution ``x`` keeps it on."""
        used = x[self.cols] > 0.5
        brokers = self.brokers[used].tolist()
        at = np.searchsorted(self.pin[used], np.arange(len(self.pins) + 1)).tolist()
        return {p.index: frozenset(brokers[at[j] : at[j + 1]]) for j, p in enumerate(self.pins)}

    def room(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per rack, the replicas the solution ``x`` keeps there, and the open slots with room under
        the rack's upper bound that the bounded partitions leave."""
        kept, room = self.room_by(x, np.zeros(len(self.pins), dtype=np.int64), 1)
        return kept[0], room[0]

    def room_by(self, x: np.ndarray, group: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`room` per group of partitions (``group``: per partition, one of ``groups``; a run's
        topics), as rows of two arrays."""
        racks = self.hi.shape[1]
        v = x[self.cols]
        key = group[self.pin] * racks + self.rack
        kept = np.bincount(key, weights=v, minlength=groups * racks).reshape(groups, racks)
        n = len(self.pins)
        in_rack = np.bincount(self.pin * racks + self.rack, weights=v, minlength=n * racks).reshape(n, racks)
        open_slots = self.rf - np.bincount(self.pin, weights=v, minlength=n)
        room = np.maximum(0.0, np.minimum(open_slots[:, None], self.hi - in_rack)) * self.bounded[:, None]
        by_group = np.zeros((groups, racks))
        np.add.at(by_group, group, room)
        return kept, by_group
