"""Loaded brokers: those whose own extras fill their band, given columns of their own or pooled
apart where a topic's pool would need them.

A pool (:mod:`ferry.plan.balance.program.pools`) stands for the brokers of a rack idle for its
topic, as if any of them could take its extras. On a skewed start a few brokers of each rack hold
so many topics above their base that the extras of those topics (each keeps a replica) fill all the
room their band leaves: they take no pooled extra at all (``z[rack, b]`` is 0), while the pools of
the topics they hold nothing of count them among their idle brokers. A big topic's pool that must
place nearly one extra per idle broker then cannot be split over the rest, and a whole pooled
program was solved for nothing: on the skewed 100k shape of `benchmarks/plan_quality.py --shapes`
every rack failed so.

Which brokers are loaded is read before solving: broker ``b`` is when the topics holding more of
it than their base number at least its room, ``band_hi + slack - base load``
(:func:`loaded_brokers`). The pooled optimum gives a broker about ``room - those topics`` pooled
extras, as each of those topics keeps a replica by taking an extra there: the test picks out the
brokers it leaves none. Where a topic may give a rack more extras (``min(extras, most in the
rack)``) than the rack's idle brokers that are not loaded number (:func:`needs_loaded`), each loaded
broker idle for it gets a column ``x[t, b]`` of its own, and the topic's row of most extras in the
rack is posed; elsewhere the others can take all the pool may hold. In a rack at least half loaded
such columns for most topics would bring the program near the full one (on a cluster grown from 120
to 132 brokers over six racks all old brokers are loaded): there every topic pools the loaded
brokers apart from the others instead (:mod:`ferry.plan.balance.program.pool_groups`), and their
pool takes what their own ``z`` allow. A pooled program with columns of their own for some idle
brokers, or with pools of two kinds, is still a relaxation of the full program whose every split
is a solution of it: the optimum is the same.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter

import numpy as np

from ferry.plan.prepare.demand import TopicDemand, distinct_bases
from ferry.plan.racks import RackLayout

CHUNK = 8192
"""Topics whose holdings are read at once (a chunk x brokers array)."""


def loaded_brokers(brokers: int, demands: Sequence[TopicDemand], room: np.ndarray) -> frozenset[int]:
    """Broker positions where the topics with extras that hold more than their base number at
    least ``room`` (per broker position, the extras its band lets it take)."""
    giving = [d for d in demands if d.quota.extras > 0]
    above = np.zeros(brokers, dtype=np.int64)
    if not giving:
        return frozenset()
    distinct, rows = distinct_bases(giving)
    for start in range(0, len(giving), CHUNK):
        part = giving[start : start + CHUNK]
        held = np.fromiter(
            chain.from_iterable(d.held for d in part), dtype=np.int64, count=len(part) * brokers
        ).reshape(len(part), brokers)
        above += (held > distinct[rows[start : start + len(part)]]).sum(axis=0)
    return frozenset(np.flatnonzero(above >= room).tolist())


@dataclass(frozen=True)
class LoadedPools:
    """Of a run of topics: per topic and rack, whether its loaded brokers pose its row of most extras
    (``posed``); per holder entry, whether it is a loaded broker given a column of its own
    (``take``); and the loaded brokers holding nothing of a topic that get one (``topic``,
    ``pos``)."""

    posed: np.ndarray
    take: np.ndarray
    topic: np.ndarray
    pos: np.ndarray


def loaded_pools(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    loaded: Collection[int],
    entries: tuple[np.ndarray, np.ndarray, np.ndarray],
    limits: tuple[np.ndarray, np.ndarray],
) -> LoadedPools:
    """:class:`LoadedPools` of ``demands``, whose holders are ``entries`` (per entry its topic, broker
    position and whether it has an extra of its own). ``limits``: per topic and rack the most extras
    it may give the rack (0 where the rack takes none), and per rack whether its loaded brokers are
    pooled apart (:mod:`~ferry.plan.balance.program.pool_groups`; columns of their own elsewhere)."""
    topic, pos, above = entries
    most, apart = limits
    racks = len(layout.members)
    rack_at = np.asarray(layout.rack_at, dtype=np.int64)
    is_loaded = np.zeros(len(layout.brokers), dtype=bool)
    is_loaded[sorted(loaded)] = True
    key = topic * racks + rack_at[pos]

    def per_pool(mask: np.ndarray) -> np.ndarray:
        return np.bincount(key[mask], minlength=most.size).reshape(most.shape)

    opened = most > 0
    idle = np.where(opened, np.asarray(layout.sizes, dtype=np.int64)[None, :] - per_pool(above), 0)
    in_rack = np.bincount(rack_at[is_loaded], minlength=racks)
    idle_loaded = np.where(opened, in_rack[None, :] - per_pool(above & is_loaded[pos]), 0)
    posed = needs_loaded(most, idle, idle_loaded)
    own = posed & ~apart[None, :]
    take = is_loaded[pos] & ~above & own[topic, rack_at[pos]]
    single = [i for i in loaded if not apart[rack_at[i]]]
    if not single:
        return LoadedPools(posed, take, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    new_topic, new_pos = _holding_nothing(demands, single)
    chosen = own[new_topic, rack_at[new_pos]]
    return LoadedPools(posed, take, new_topic[chosen], new_pos[chosen])


def _holding_nothing(
    demands: Sequence[TopicDemand], loaded: Collection[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Each (topic index, broker position) where a ``loaded`` broker holds nothing of a topic of
    ``demands``, by topic, then position."""
    at = np.array(sorted(loaded), dtype=np.int64)
    pick = itemgetter(*at.tolist())
    held = np.fromiter(
        chain.from_iterable(_as_sequence(pick(d.held)) for d in demands),
        dtype=np.int64,
        count=len(demands) * len(at),
    ).reshape(len(demands), len(at))
    topic, j = np.nonzero(held == 0)
    return topic, at[j]


def _as_sequence(picked: int | tuple[int, ...]) -> Sequence[int]:
    """What ``itemgetter`` of one position or several gave, as a sequence."""
    return picked if isinstance(picked, tuple) else (picked,)


def needs_loaded(most: np.ndarray, idle: np.ndarray, loaded: np.ndarray) -> np.ndarray:
    """Per pool of ``idle`` brokers, ``loaded`` of them, whose topic may give its rack up to
    ``most`` extras: whether the others may not take all the pool holds, and the topic's row of most
    extras in the rack is posed (module docstring)."""
    out: np.ndarray = (loaded > 0) & (most > idle - loaded)
    return out


def loaded_idle(
    layout: RackLayout,
    d: TopicDemand,
    held: Collection[int],
    idle: Mapping[int, int],
    loaded: Collection[int],
) -> tuple[dict[int, list[int]], set[int]]:
    """Per rack of ``idle`` (per open rack, its brokers idle for the topic: not in ``held``), its
    ``loaded`` brokers idle for the topic; and the racks where they pose the topic's row of most
    extras (:func:`needs_loaded`)."""
    taken = set(held)
    by_rack: dict[int, list[int]] = {}
    for i in sorted(loaded):
        if layout.rack_at[i] in idle and i not in taken:
            by_rack.setdefault(layout.rack_at[i], []).append(i)
    racks = list(by_rack)
    most = np.array([min(d.quota.extras, d.quota.rack_extras[k][1]) for k in racks])
    count = np.array([len(by_rack[k]) for k in racks])
    needs = needs_loaded(most, np.array([idle[k] for k in racks]), count)
    return by_rack, {k for k, need in zip(racks, needs.tolist(), strict=True) if need}
