"""Per-topic replica quotas: how many replicas of a topic each target broker may hold.

A topic's quota gives every broker a ``base`` load and lets some brokers take one ``extra`` replica.
Which brokers get the extras is decided later, across all topics at once, by
:mod:`ferry.plan.balance.assign_extras` so that cluster-wide balance holds too.

The base comes from water-filling under the rack rule: each rack ``k`` holds between ``L_k`` and
``U_k`` replicas of the topic (the sums of the per-partition bounds of :mod:`ferry.plan.racks`), and
every broker should carry the same load ``m``. Where a rack's bounds make that impossible (a small
rack must carry one replica of every partition; a big rack may carry only one per partition) the rack
is clamped and its brokers carry its fixed total as evenly as possible: that is the smallest spread
the rack rule allows, and brokers within one rack still differ by at most one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ferry.model.goal import RackMode
from ferry.plan.racks import RackLayout


@dataclass(frozen=True, slots=True)
class TopicQuota:
    """Quota of one topic over the target brokers of a :class:`RackLayout`.

    Attributes:
        base: per broker (layout order) the replicas it holds at least.
        extras: how many brokers get one replica above their base.
        rack_extras: per rack, (min, max) number of its brokers that get an extra.
    """

    base: tuple[int, ...]
    extras: int
    rack_extras: tuple[tuple[int, int], ...]
    limits: tuple[tuple[int, int], ...] = ()
    """Per rack, the fewest and most of the topic's replicas the rack rule lets it hold (strict mode;
    empty where racks do not bound loads)."""

    @property
    def total(self) -> int:
        return sum(self.base) + self.extras

    def extra_positions(self, layout: RackLayout) -> list[int]:
        """Positions (layout order) of the brokers that may take one of the extras: those in racks
        allowed any; none when there are no extras."""
        if self.extras <= 0:
            return []
        open_racks = [hi > 0 for _, hi in self.rack_extras]
        return [i for i, b in enumerate(layout.brokers) if open_racks[layout.rack_of[b]]]


def topic_quota(layout: RackLayout, rfs: Sequence[int], mode: RackMode) -> TopicQuota:
    """Water-fill a topic whose partitions have replication factors ``rfs`` over ``layout``; once
    per layout and mix of factors (:attr:`RackLayout.memo`), which is all the quota depends on."""
    key = ("quota", mode, tuple(sorted(Counter(rfs).items())))
    found: TopicQuota | None = layout.memo.get(key)
    if found is None:
        found = layout.memo[key] = _water_fill(layout, rfs, mode)
    return found


def _water_fill(layout: RackLayout, rfs: Sequence[int], mode: RackMode) -> TopicQuota:
    total = sum(rfs)
    sizes = layout.sizes
    partitions = len(rfs)
    limits: tuple[tuple[int, int], ...] = ()
    if mode is RackMode.EVEN:
        # Racks do not constrain loads: one pseudo-rack spanning every broker.
        lows, highs = [0] * len(sizes), [n * partitions for n in sizes]
    else:
        lows, highs = _rack_totals(layout, rfs)
        limits = tuple(zip(lows, highs, strict=True))
    level = water_level(sizes, lows, highs, total)
    base_by_rack: list[int] = []
    rack_extras: list[tuple[int, int]] = []
    for n, lo_k, hi_k in zip(sizes, lows, highs, strict=True):
        at = _clamp(n * level, lo_k, hi_k)
        above = _clamp(n * (level + 1), lo_k, hi_k)
        if n * level <= at and above <= n * (level + 1):
            base_by_rack.append(level)
            rack_extras.append((at - n * level, above - n * level))
        else:
            # Clamped away from the common level: the rack's total is fixed.
            base_by_rack.append(at // n)
            rack_extras.append((at % n, at % n))
    base = tuple(base_by_rack[layout.rack_of[b]] for b in layout.brokers)
    return TopicQuota(base, total - sum(base), tuple(rack_extras), limits)


def fixed_quota(layout: RackLayout, totals: Sequence[int], limits: tuple[tuple[int, int], ...]) -> TopicQuota:
    """The quota that puts exactly ``totals[k]`` replicas in rack ``k``, as evenly as its brokers allow."""
    shares = [divmod(t, n) for t, n in zip(totals, layout.sizes, strict=True)]
    base = tuple(shares[layout.rack_of[b]][0] for b in layout.brokers)
    return TopicQuota(base, sum(r for _, r in shares), tuple((r, r) for _, r in shares), limits)


def _rack_totals(layout: RackLayout, rfs: Sequence[int]) -> tuple[list[int], list[int]]:
    lows = [0] * len(layout.members)
    highs = [0] * len(layout.members)
    for rf in rfs:
        for k, (lo, hi) in enumerate(layout.bounds(rf)):
            lows[k] += lo
            highs[k] += hi
    return lows, highs


def _clamp(value: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, value))


def _filled(sizes: Sequence[int], lows: Sequence[int], highs: Sequence[int], level: int) -> int:
    return sum(_clamp(n * level, lo, hi) for n, lo, hi in zip(sizes, lows, highs, strict=True))


def water_level(sizes: Sequence[int], lows: Sequence[int], highs: Sequence[int], total: int) -> int:
    """The common per-broker level ``m``: the smallest with ``filled(m + 1) > total``.

    If even the fullest racks cannot exceed ``total`` (every rack at its upper bound), the smallest
    level that reaches ``total`` is used instead.
    """
    top = max((hi // n + 1 for n, hi in zip(sizes, highs, strict=True)), default=0)
    lo, hi = 0, top
    if _filled(sizes, lows, highs, top) <= total:
        # Saturated: find the smallest level whose fill already equals the total.
        while lo < hi:
            mid = (lo + hi) // 2
            if _filled(sizes, lows, highs, mid) >= total:
                hi = mid
            else:
                lo = mid + 1
        return lo
    while lo < hi:
        mid = (lo + hi) // 2
        if _filled(sizes, lows, highs, mid + 1) > total:
            hi = mid
        else:
            lo = mid + 1
    return lo
