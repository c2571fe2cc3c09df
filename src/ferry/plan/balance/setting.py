"""How the balance program is posed: how strictly (:class:`Setting`), what topics held outside it
take of each broker (:class:`Outside`), and the weight of its size terms (:func:`size_scale`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


@dataclass(frozen=True, slots=True)
class Setting:
    """How strictly the program is posed: one rung of :func:`ferry.plan.balance.assign_extras.assign_extras`'s
    ladder."""

    band: list[tuple[int, int]]
    """Per broker, the (min, max) total load (:func:`ferry.plan.balance.bands.broker_band`)."""
    slack: int | None
    """How far loads may leave the band; ``None``: no band rows."""
    cap: tuple[int, int] | None
    """(low, extra) leader counts single-replica partitions must fit; ``None``: no leader rows."""
    voluntary: bool
    """Whether a free replica may leave a broker that is not over its quota."""
    pool_singles: bool = False
    """Whether topics with single-replica partitions are pooled like the others: only where no
    leader cap is posed, whose rows count each broker's extras of those topics."""
    deferral: Deferral | None = None
    """Whether the lazy rounds hold back rows (:class:`Deferral`); ``None``: they never do."""


@dataclass(slots=True)
class Deferral:
    """Whether the lazy rounds hold back the rows of pinned partitions owing racks a replica
    (:mod:`ferry.plan.balance.program.deferred_rows`). One per balance pass, shared by the settings of
    its ladder: once holding them back lost kept replicas (the relaxation was loose there), every
    later program poses them from the start, not only the one that found out."""

    on: bool = True


@dataclass(frozen=True, slots=True)
class Outside:
    """Per broker, what topics held fixed outside a program take of its balance rows."""

    load: tuple[int, ...]
    """Replicas (their final quotas)."""
    single: tuple[int, ...]
    """The part of ``load`` from single-replica topics (each such replica leads its partition)."""

    @classmethod
    def none(cls, brokers: int) -> Outside:
        return cls((0,) * brokers, (0,) * brokers)

    @classmethod
    def of(cls, brokers: int, demands: Sequence[TopicDemand], quotas: Sequence[Sequence[int]]) -> Outside:
        """What every topic takes with the given per-topic quotas (layout order)."""
        if not demands:
            return cls.none(brokers)
        table = np.array(quotas, dtype=np.int64).reshape(len(demands), brokers)
        singles = np.array([d.single_replica for d in demands], dtype=bool)
        load, single = table.sum(axis=0), table[singles].sum(axis=0)
        return cls(tuple(load.tolist()), tuple(single.tolist()))

    def shifted(self, quota: Sequence[int], *, single: bool, sign: int) -> Outside:
        """With one topic's ``quota`` added (``sign`` 1) or taken out (``sign`` -1)."""
        load = tuple(n + sign * q for n, q in zip(self.load, quota, strict=True))
        if not single:
            return Outside(load, self.single)
        return Outside(load, tuple(n + sign * q for n, q in zip(self.single, quota, strict=True)))


def size_scale(layout: RackLayout, demands: Sequence[TopicDemand]) -> float:
    """Weight per byte of the size terms that break ties among equally many kept replicas.

    Each column carries at most one size term (an extra's shed replica, a pinned replica), so with
    ``0.5 / (biggest * columns)`` they stay below 0.5 in total and never outweigh one kept replica.
    Bounded by the columns that carry them, not by every replica: far smaller terms sit below the
    solver's tolerances (1e-7), and HiGHS then spent three times as long on the same optimum.
    """
    biggest = max((max((*d.shed, *d.sizes), default=0) for d in demands), default=0) or 1
    extras = sum(len(layout.brokers) for d in demands if d.quota.extras > 0)
    pinned = sum(len(pin.replicas) for d in demands for pin in d.pinned)
    return 0.5 / (biggest * (extras + pinned + 1))
