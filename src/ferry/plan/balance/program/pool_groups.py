"""The brokers a pool stands for: per rack, every broker, or its loaded and its other brokers apart.

A topic's pool (:mod:`ferry.plan.balance.program.pools`) stands for the brokers of a rack idle for it.
In a rack of which at least half the brokers are loaded (:mod:`ferry.plan.balance.program.loaded`),
but not all, every topic pools them apart: one pool over the rack's loaded brokers idle for it, one
over the others. Each group of brokers has its own pool row and its own ``z[group, b]`` into the
band row of each of its brokers. Where fewer are loaded, a topic whose pool would need them gives
each a column of its own (:func:`~ferry.plan.balance.program.pools.holders`): few columns, and exact.
Where most are, those columns cost near a full program (on a cluster grown from 120 to 132 brokers
over six racks all 120 old ones are loaded), while a pool of their own takes what their ``z`` allow,
little on a grown cluster, whose old brokers shed. A few loaded brokers pooled apart, with ``z``
above 0, are idle for too few of the topics that pooled extras there, and the pools cannot be split
(the six-rack skewed start of `benchmarks/plan_quality.py --shapes` failed so in every round); a
rack whose loaded brokers' pools could not be split is not pooled apart again (``together``).

The groups of a rack are a partition of it: a broker's band fixes what its one ``z`` takes. (Groups
that overlap, a topic pooling every broker of a rack where another pools them apart, give a broker
two ``z`` whose shares its band leaves free, and an optimum that puts one group's share on a few
brokers cannot be split.) Groups are numbered ``PER_RACK * rack + kind``, in rack order.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from ferry.plan.racks import RackLayout

PER_RACK = 3
EVERY, OTHERS, LOADED = 0, 1, 2
"""The kinds of group in a rack: all its brokers, those not loaded, the loaded ones."""


@dataclass(frozen=True)
class PoolGroups:
    """Per group (numbered as in the module docstring) its broker positions, in position order."""

    size: np.ndarray
    flat: np.ndarray
    """Every group's positions, group by group."""
    start: np.ndarray
    """Per group, where its positions start in :attr:`flat`."""
    is_loaded: np.ndarray
    """Per broker position, whether it is loaded."""
    apart: np.ndarray
    """Per rack, whether its loaded brokers and the others are pooled apart (module docstring)."""

    @classmethod
    def of(cls, layout: RackLayout, loaded: Collection[int], together: Collection[int] = ()) -> PoolGroups:
        is_loaded = np.zeros(len(layout.brokers), dtype=bool)
        is_loaded[sorted(loaded)] = True
        members: list[np.ndarray] = []
        rack_at = np.asarray(layout.rack_at, dtype=np.int64)
        apart = np.zeros(len(layout.members), dtype=bool)
        for k in range(len(layout.members)):
            every = np.flatnonzero(rack_at == k)
            loaded_here = is_loaded[every]
            many = 2 * int(loaded_here.sum()) >= len(every)
            apart[k] = many and not loaded_here.all() and k not in together
            if apart[k]:
                members += [every[:0], every[~loaded_here], every[loaded_here]]
            else:
                members += [every, every[:0], every[:0]]
        size = np.array([len(m) for m in members], dtype=np.int64)
        start = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
        return cls(size, np.concatenate(members).astype(np.int64), start, is_loaded, apart)

    def members(self, g: int) -> list[int]:
        """Group ``g``'s broker positions."""
        out: list[int] = self.flat[self.start[g] : self.start[g] + self.size[g]].tolist()
        return out


def group(rack: int, kind: int) -> int:
    """The group of ``kind`` in ``rack``."""
    return PER_RACK * rack + kind
