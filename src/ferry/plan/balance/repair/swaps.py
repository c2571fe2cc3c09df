"""Win back the last short topics of the exact pass by swapping one extra with another topic.

After the chunk rounds (:mod:`ferry.plan.balance.repair.per_partition`) a few topics can still keep
fewer replicas than the balance program counted: a chunk's partners, taken in turn from the topics
at their count, rarely hold an extra where the short topic needs one. Here each such topic ``t``
looks for one itself. It moves an extra from a broker ``a`` where it has one to a broker ``b``
where it holds more replicas than its quota lets it keep; a partner that has an extra on ``b`` and
none on ``a`` moves its extra the other way. Every broker's total stays as it was, so every row of
the program over brokers holds, and so does the lower bound on moves. A swap is tried only where
the exact flows (:mod:`ferry.plan.balance.repair.kept_flow`) say that ``t`` then keeps more and the
partner no fewer; the pair is then solved again together
(:func:`~ferry.plan.balance.repair.chunk_program.rejoin`, which holds each broker's total over the
two and gives every partition's keeps), and taken where it keeps more than before.

The few topics the swaps leave short are then each solved again in a chunk with every topic that
has an extra where they need one (:meth:`_Swaps.gathered`), until :data:`GIVE_UP` such chunks in a
row win nothing.

Moves and partners are tried in an order that finds one early: first the moves from a broker
where the topic holds no more than its base (the extra there holds a new replica: moving it keeps
as many), then partners whose extra on ``b`` holds a new replica, then those that hold more on
``a`` than their base, then the smaller. On the 100k-partition draws of "racks of 30 to 6" in
`benchmarks/plan_quality.py --shapes` every topic the rounds leave short reaches its count
(docs/benchmarks.md, "Swaps of extras after the chunk rounds", and "The exact pass's chunks built
in bulk").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np

from ferry.plan.balance.repair.chunk_program import rejoin
from ferry.plan.balance.repair.kept_flow import kept_per_topic
from ferry.plan.prepare.demand import TopicDemand, distinct_bases
from ferry.plan.racks import RackLayout

PASSES = 3
"""Passes over the topics still short while the last took a swap: a swap taken for one topic
changes its partner's quotas, which can open a swap for a topic tried before."""

_ROWS = 1 << 14
"""Topics whose quotas are turned into the extras table at a time (a million-partition cluster
has about 100,000 topics over 200 brokers)."""


MOVES = 64
"""Moves of one of the short topic's extras weighed per search, all in one batch of exact flows."""
TRIED = 8
"""Moves that let the short topic keep more for which partners are weighed, the first first."""
PARTNERS = 16
"""Partners weighed per such move, in one batch of exact flows, in the order of :meth:`_Extras.partners`."""
REJOINS = 4
"""Pairs solved again per search that did not keep more, before it gives up.

The four caps bound a search. On the 100k draws of "racks of 30 to 6" in
`benchmarks/plan_quality.py --shapes` every short topic found its swap within them (one of seed
11 only once the moves that keep as many came first); on the skewed start (34 and 44 short
topics, which the placement wins back anyway: it plans at its bound) none is found, and the
searches cost it about a tenth of its time (half that before the moves were ordered)."""


IN_VAIN = 8
"""Short topics in a row whose search finds no swap before the passes stop (the topics still short
then go on to :meth:`_Swaps.gathered`). A search weighs up to 64 moves and 128 partners in exact
flows. Seen outside the benchmark scripts (qualitative): on the skewed starts of
`benchmarks/plan_quality.py --shapes` and `--huge` no search finds one (the placement wins those
topics back: both plan at their bound), and the 1M start has hundreds of them; on the racks of 30
to 6 and "remove 20 of 200" nearly every search finds one, the 1M racks of 30 missing a few
apart, never a long run of them in the part looked at."""


GIVE_UP = 2
"""Chunks of a topic still short after the passes (:meth:`_Swaps.gathered`) that win nothing, one
after the other, before the pass stops solving them: each is a chunk program, and on the skewed
start, whose tens of short topics the placement wins back, the first two win nothing."""
GATHERED = 39
"""Partners in such a chunk: as many topics as a chunk of the later rounds holds
(:data:`~ferry.plan.balance.repair.per_partition.LATER`), less the short one."""


class _Extras:
    """Per topic and broker position whether the topic has an extra there, for the topics the pass
    may trade with, kept up to date as swaps are taken; and what orders them as partners."""

    def __init__(
        self, demands: Sequence[TopicDemand], topics: Sequence[int], quotas: Sequence[Sequence[int]]
    ) -> None:
        self.row = {t: j for j, t in enumerate(topics)}
        self.topics = np.asarray(topics, dtype=np.int64)
        # Column-major: a search reads a broker's (or rack's) column of every topic, a swap writes a
        # topic's row of a few hundred brokers.
        # Topics of one shape share their base: its rows once each, not a row per topic.
        distinct, row = distinct_bases(demands[t] for t in topics)
        bases = (distinct.astype(np.int32), row)
        self.at = np.asfortranarray(np.concatenate(_above_base(topics, quotas, bases)))
        self.over = np.asfortranarray(np.concatenate(_above_base(topics, [d.held for d in demands], bases)))
        """Per topic and broker position whether the topic holds more there than its base."""
        self.size = np.fromiter((len(demands[t].layouts) for t in topics), dtype=np.int64, count=len(topics))
        opened = [[hi > 0 for _, hi in demands[t].quota.rack_extras] for t in topics]
        self.open = np.asfortranarray(np.array(opened, dtype=bool))

    def update(self, demand: TopicDemand, t: int, quota: Sequence[int]) -> None:
        self.at[self.row[t]] = np.asarray(quota) > np.asarray(demand.quota.base)

    def partners(self, give: int, take: int, rack: int) -> list[int]:
        """The topics with an extra on ``give`` and none on ``take``, which is in ``rack``, open to
        their extras; those whose extra on ``give`` holds a new replica first, then those holding
        more than their base on ``take``, then the smaller, then by topic. Sorted in numpy: a
        million-partition skewed start weighs thousands of partners for each of hundreds of moves."""
        rows = np.flatnonzero(self.at[:, give] & ~self.at[:, take] & self.open[:, rack])
        topics = self.topics[rows]
        order = np.lexsort((topics, self.size[rows], ~self.over[rows, take], self.over[rows, give]))
        found: list[int] = topics[order].tolist()
        return found

    def gathering(self, wants: Sequence[int]) -> list[int]:
        """The topics with an extra on any of the ``wants`` positions; those whose extras there
        hold fewest replicas they keep (more than their base) first, as giving one up keeps as
        many, then the smaller, then by topic."""
        cols = np.asarray(wants, dtype=np.int64)
        rows = np.flatnonzero(self.at[:, cols].any(axis=1))
        where = np.ix_(rows, cols)
        holding = (self.at[where] & self.over[where]).sum(axis=1)
        topics = self.topics[rows]
        found: list[int] = topics[np.lexsort((topics, self.size[rows], holding))].tolist()
        return found


def _above_base(
    topics: Sequence[int], counts: Sequence[Sequence[int]], bases: tuple[np.ndarray, np.ndarray]
) -> list[np.ndarray]:
    """Per topic and broker position whether ``counts`` (per topic) is above the topic's base, in
    parts of :data:`_ROWS` topics. ``bases``: the distinct bases and, per entry of ``topics``, its
    row (:func:`~ferry.plan.prepare.demand.distinct_bases`)."""
    distinct, row = bases
    return [
        np.array([counts[t] for t in topics[i : i + _ROWS]], dtype=np.int32) > distinct[row[i : i + _ROWS]]
        for i in range(0, len(topics), _ROWS)
    ]


@dataclass
class _Swaps:
    """The pass's state: what it reads and the quotas, keeps and exact counts it updates."""

    layout: RackLayout
    demands: Sequence[TopicDemand]
    quotas: list[tuple[int, ...]]
    keeps: list[dict[int, frozenset[int]]]
    exact: dict[int, int]
    extras: _Extras

    def one(self, t: int) -> bool:
        """One swap that lets ``t`` keep more, taken; whether one was found (module docstring)."""
        layout, demands, quotas, exact = self.layout, self.demands, self.quotas, self.exact
        d, rejoins = demands[t], REJOINS
        moves = list(islice(_moves(layout, d, quotas[t]), MOVES))
        gains = _kept(layout, [d] * len(moves), [_moved(quotas[t], a, b) for a, b in moves])
        better = [move for move, kept in zip(moves, gains, strict=True) if kept > exact[t]]
        for a, b in better[:TRIED]:
            candidates = self.extras.partners(b, a, layout.rack_at[a])
            partners = list(
                islice(
                    (u for u in candidates if u != t and _rack_allows(layout, demands[u], quotas[u], b, a)),
                    PARTNERS,
                )
            )
            kept = _kept(layout, [demands[u] for u in partners], [_moved(quotas[u], b, a) for u in partners])
            for u, count in zip(partners, kept, strict=True):
                if count < exact[u]:
                    continue
                if self._rejoined(t, u):
                    return True
                rejoins -= 1
                if rejoins == 0:
                    return False
        return False

    def gathered(self, t: int) -> bool:
        """``t`` solved again in a chunk with the topics that have an extra on a broker where it
        holds more than its quota (:data:`GATHERED` of them at most), taken where the chunk keeps
        more; whether it did. A swap trades one extra with one partner; a chunk lets several
        partners trade at once, which is what the last topics left short by the swaps need."""
        d, quota = self.demands[t], self.quotas[t]
        wants = [i for i, q in enumerate(quota) if d.held[i] > q]
        found = [u for u in self.extras.gathering(wants) if u != t]
        if not found:
            return False
        return self._rejoined(t, *found[:GATHERED])

    def _rejoined(self, *chunk: int) -> bool:
        """The topics of ``chunk`` solved again together, taken where they keep more."""
        found = rejoin(self.layout, [self.demands[x] for x in chunk], [self.quotas[x] for x in chunk])
        if found is None or sum(found.kept) <= sum(self.exact[x] for x in chunk):
            return False
        for j, x in enumerate(chunk):
            self.quotas[x], self.keeps[x] = found.quotas[j], dict(found.keeps[j])
            self.exact[x] = found.kept[j]
            self.extras.update(self.demands[x], x, found.quotas[j])
        return True


def swap_extras(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    topics: Sequence[int],
    counted: Sequence[int],
    quotas: list[tuple[int, ...]],
    keeps: list[dict[int, frozenset[int]]],
    exact: dict[int, int],
) -> None:
    """Swap extras for the ``topics`` whose ``exact`` count is under their program count
    (``counted``), updating ``quotas``, ``keeps`` and ``exact`` in place (module docstring)."""
    short = [t for t in topics if exact[t] < counted[t]]
    if not short:
        return
    swaps = _Swaps(layout, demands, quotas, keeps, exact, _Extras(demands, topics, quotas))
    short = _passes(swaps, short, counted)
    missed = 0
    for t in short:
        while missed < GIVE_UP and exact[t] < counted[t]:
            if not swaps.gathered(t):
                missed += 1
                break
            missed = 0


def _passes(swaps: _Swaps, short: list[int], counted: Sequence[int]) -> list[int]:
    """Up to :data:`PASSES` passes of swaps over the ``short`` topics, until :data:`IN_VAIN` topics
    in a row find none; the topics still short after them."""
    exact, in_vain = swaps.exact, 0
    for _ in range(PASSES):
        taken = False
        for t in short:
            if exact[t] >= counted[t]:
                continue  # raised as another topic's partner
            found = False
            # Each swap taken raises the pair's count: this ends.
            while exact[t] < counted[t] and swaps.one(t):
                found = taken = True
            in_vain = 0 if found else in_vain + 1
            if in_vain == IN_VAIN:
                break
        short = [t for t in short if exact[t] < counted[t]]
        if not short or not taken or in_vain == IN_VAIN:
            break
    return short


def _moves(layout: RackLayout, d: TopicDemand, quota: Sequence[int]) -> Iterator[tuple[int, int]]:
    """(a, b): an extra of the topic from position ``a`` to ``b``, where ``b`` holds more of it
    than its quota and takes no extra yet, within the topic's extras per rack."""
    base, held = d.quota.base, d.held
    # An extra where the topic holds no more than its base keeps nothing there: moving it away
    # loses no kept replica, so those moves come first.
    gives = sorted((i for i, q in enumerate(quota) if q > base[i]), key=lambda i: (held[i] > base[i], i))
    wants = [
        i
        for i, q in enumerate(quota)
        if q == base[i] and held[i] > q and d.quota.rack_extras[layout.rack_at[i]][1] > 0
    ]
    return ((a, b) for a in gives for b in wants if _rack_allows(layout, d, quota, a, b))


def _rack_allows(layout: RackLayout, d: TopicDemand, quota: Sequence[int], a: int, b: int) -> bool:
    """Whether moving an extra from ``a`` to ``b`` keeps the topic's extras per rack in bounds."""
    ra, rb = layout.rack_at[a], layout.rack_at[b]
    if ra == rb:
        return True
    base = d.quota.base
    in_a = sum(1 for i, q in enumerate(quota) if q > base[i] and layout.rack_at[i] == ra)
    in_b = sum(1 for i, q in enumerate(quota) if q > base[i] and layout.rack_at[i] == rb)
    return in_a - 1 >= d.quota.rack_extras[ra][0] and in_b + 1 <= d.quota.rack_extras[rb][1]


def _kept(layout: RackLayout, demands: Sequence[TopicDemand], quotas: Sequence[Sequence[int]]) -> list[int]:
    """Each quota's exact count, the flows built in one batch (a topic's own flow per quota)."""
    return kept_per_topic(layout, demands, quotas, fix_settled=False) if demands else []


def _moved(quota: Sequence[int], a: int, b: int) -> list[int]:
    moved = list(quota)
    moved[a] -= 1
    moved[b] += 1
    return moved
