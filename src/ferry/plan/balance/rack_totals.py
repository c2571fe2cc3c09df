"""Rack totals: how many replicas each rack holds, decided for the whole cluster where racks differ.

Per-topic quotas (:mod:`ferry.plan.prepare.quotas`) spread each topic as evenly as the rack rule lets it,
topic by topic. Where racks have unequal sizes that is not always even for the cluster: RF 3 topics
over racks of 5, 4 and 1 brokers must put one replica of every partition on the lone broker, and RF 2
topics, which could leave that rack alone, still give it its even share. :func:`retarget` then
decides every topic's rack totals at once: the smallest broker spread the rack rule allows
(:mod:`ferry.plan.balance.least_spread`, over groups of topics alike), at rack totals as near the per-topic
ones as that spread allows, shared among a group's topics within one replica per rack. Each topic's
quota then holds exactly its share in each rack, and brokers inside one rack still differ by at most
one. Where the per-topic quotas already reach the smallest spread, nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ferry.plan.balance.least_spread import Kind, least_spread
from ferry.plan.prepare.demand import TopicDemand, base_loads, extra_bounds
from ferry.plan.prepare.quotas import fixed_quota, water_level
from ferry.plan.racks import RackLayout


def rack_ranges(layout: RackLayout, demands: Sequence[TopicDemand]) -> list[tuple[int, int]]:
    """Per rack, the fewest and most replicas its brokers may hold under every topic's quota."""
    racks = len(layout.members)
    if not demands:
        return [(0, 0)] * racks
    first = [layout.position[m[0]] for m in layout.members]
    base = base_loads(len(layout.brokers), demands)[first] * np.asarray(layout.sizes, dtype=np.int64)
    ranges, extras = extra_bounds(demands, racks)
    lows = base + np.minimum(ranges[:, :, 0], extras[:, None]).sum(axis=0)
    highs = base + np.minimum(ranges[:, :, 1], extras[:, None]).sum(axis=0)
    return list(zip(lows.tolist(), highs.tolist(), strict=True))


def rack_loads(layout: RackLayout, demands: Sequence[TopicDemand]) -> list[tuple[int, int, int]]:
    """Per rack, water-filled over racks: (fewest, most) replicas per broker and the rack's total.

    Each rack holds between the replicas its topics must put there and the most they may, and every
    broker of a rack gets the rack's share within one. A rack the rack rule pushes off the common level
    (a small rack under RF = racks) is held at its own total, so its brokers stay within one of each
    other instead of leaving the band altogether.
    """
    ranges = rack_ranges(layout, demands)
    sizes = layout.sizes
    total = sum(d.quota.total for d in demands)
    level = water_level(sizes, [lo for lo, _ in ranges], [hi for _, hi in ranges], total)
    out = []
    for n, (lo, hi) in zip(sizes, ranges, strict=True):
        least, most = max(lo, min(hi, n * level)), max(lo, min(hi, n * (level + 1)))
        out.append((least // n, -(-most // n), least))
    return out


def retarget(layout: RackLayout, demands: Sequence[TopicDemand]) -> list[TopicDemand]:
    """``demands`` with rack totals decided for the whole cluster where that lowers the broker spread
    (module docstring); otherwise ``demands`` as they are.

    A single-replica partition is led by its replica, so a rack takes no more of those than its
    brokers can lead while every broker leads an even share of all partitions.
    """
    if not _uneven(layout, demands):
        return list(demands)
    loads = rack_loads(layout, demands)
    if max(hi for _, hi, _ in loads) - min(lo for lo, _, _ in loads) <= 1:
        return list(demands)
    groups = _limit_groups(demands)
    kinds = _kinds(groups, demands)
    low, extra = divmod(sum(d.partitions for d in demands), len(layout.brokers))
    cap = [n * low + min(n, extra) for n in layout.sizes]
    best = least_spread(layout.sizes, kinds, near=[total for _, _, total in loads], lead_cap=cap)
    if best.spread >= least_spread(layout.sizes, _kinds(_quota_groups(layout, demands), demands)).spread:
        return list(demands)
    out = list(demands)
    for ((each, limits, _), members), totals in zip(groups.items(), best.per_kind, strict=True):
        for t, share in zip(members, shares(totals, len(members), each), strict=True):
            out[t] = replace(demands[t], quota=fixed_quota(layout, share, limits))
    return out


def exact_band(layout: RackLayout, demands: Sequence[TopicDemand]) -> list[tuple[int, int]] | None:
    """Per broker, the (min, max) load at rack totals that reach the smallest spread the quotas
    allow, for racks of unequal size (``None`` otherwise).

    Water-filling over racks (:func:`rack_loads`) takes each rack's range on its own, and lets each
    rack's brokers be one above or below their share: with unequal racks the totals it aims at may
    not add up (a topic's extras are shared among the racks), or may reach a spread two above the
    smallest. These totals add up and reach it, as :mod:`ferry.plan.balance.least_spread` solves them with
    that coupling, as near the water-filled totals as it allows.
    """
    if not _uneven(layout, demands):
        return None
    loads = rack_loads(layout, demands)
    groups = _quota_groups(layout, demands)
    totals = least_spread(layout.sizes, _kinds(groups, demands), near=[total for _, _, total in loads]).totals
    by_rack = [(t // n, -(-t // n)) for t, n in zip(totals, layout.sizes, strict=True)]
    return [by_rack[layout.rack_of[b]] for b in layout.brokers]


Bounds = tuple[tuple[int, int], ...]
Groups = dict[tuple[int, Bounds, bool], list[int]]
"""Topics alike, by (replicas, per-rack bounds, single-replica): their indexes."""


def _uneven(layout: RackLayout, demands: Sequence[TopicDemand]) -> bool:
    return len(set(layout.sizes)) > 1 and bool(demands) and all(d.quota.limits for d in demands)


def _kinds(groups: Groups, demands: Sequence[TopicDemand]) -> list[Kind]:
    return [Kind(each, len(members), bounds, led) for (each, bounds, led), members in groups.items()]


def _limit_groups(demands: Sequence[TopicDemand]) -> Groups:
    """Topics by the rack totals the rack rule allows them (single-replica ones apart)."""
    groups: Groups = {}
    for t, d in enumerate(demands):
        groups.setdefault((d.quota.total, d.quota.limits, d.single_replica), []).append(t)
    return groups


def _quota_groups(layout: RackLayout, demands: Sequence[TopicDemand]) -> Groups:
    """Topics by the rack totals their quotas allow: each rack's bases plus between the fewest and
    most extras it may take."""
    first = [layout.position[m[0]] for m in layout.members]
    groups: Groups = {}
    for t, d in enumerate(demands):
        bounds = tuple(
            (n * d.quota.base[i] + min(lo, d.quota.extras), n * d.quota.base[i] + min(hi, d.quota.extras))
            for n, i, (lo, hi) in zip(layout.sizes, first, d.quota.rack_extras, strict=True)
        )
        groups.setdefault((d.quota.total, bounds, d.single_replica), []).append(t)
    return groups


def shares(totals: Sequence[int], count: int, each: int) -> list[tuple[int, ...]]:
    """Split per-rack ``totals`` among ``count`` items of ``each`` replicas, every item within one of
    ``totals[k] / count`` in every rack: the remainders go round the items in turn, so each item gets
    as many as it lacks to reach ``each``."""
    rows = [[t // count for t in totals] for _ in range(count)]
    turn = 0
    for k, t in enumerate(totals):
        for _ in range(t % count):
            rows[turn][k] += 1
            turn = (turn + 1) % count
    assert all(sum(row) == each for row in rows), "rack totals do not add up to the items' replicas"
    return [tuple(row) for row in rows]
