"""The partitions of many topics flat, in numpy arrays: what the exact flows
(:mod:`ferry.plan.balance.repair.kept_flow`) and the chunk programs
(:mod:`ferry.plan.balance.repair.chunk_program`) build their networks and programs from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from ferry.plan.prepare.demand import FreeLayouts
from ferry.plan.racks import RackLayout


@dataclass(frozen=True)
class FlatLayouts:
    """The partitions of many topics, flat: per partition its topic and factor, per replica its
    partition and broker position, and the rack bound tables by factor."""

    topic: np.ndarray
    rf: np.ndarray
    count: np.ndarray
    """Replicas each partition has on target brokers."""
    rep_part: np.ndarray
    rep_pos: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    """``lo[rf, rack]``, ``hi[rf, rack]``."""

    @classmethod
    def of(cls, layout: RackLayout, topics: Sequence[FreeLayouts]) -> FlatLayouts:
        # In one pass over all topics: three arrays per topic took most of a second at 100,000.
        parts = np.fromiter(map(len, topics), dtype=np.int64, count=len(topics))
        rf = _flat(t.rf for t in topics)
        count = _flat(t.starts[1:] for t in topics) - _flat(t.starts[:-1] for t in topics)
        rep_pos = _flat(t.replicas for t in topics)
        topic = np.repeat(np.arange(len(topics)), parts)
        top = int(rf.max(initial=0))
        lo = np.zeros((top + 1, len(layout.members)), dtype=np.int64)
        hi = np.zeros_like(lo)
        for factor in range(1, top + 1):
            if factor <= len(layout.brokers):
                lo[factor], hi[factor] = np.array(layout.bounds(factor), dtype=np.int64).T
        rep_part = np.repeat(np.arange(len(count)), count)
        return cls(topic, rf, count, rep_part, rep_pos, lo, hi)


def _flat(parts: Iterable[tuple[int, ...]]) -> np.ndarray:
    return np.fromiter(chain.from_iterable(parts), dtype=np.int64)
