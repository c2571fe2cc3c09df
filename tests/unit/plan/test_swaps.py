"""The exact pass's last step: a topic still short swaps one extra with another topic."""

from __future__ import annotations

import itertools
import random

from support.clusters import generated

from ferry.model import Broker, ClusterSnapshot, Goal, PartitionState, TopicPartition
from ferry.plan.balance.repair.kept_flow import kept_exactly
from ferry.plan.balance.repair.swaps import IN_VAIN, _Extras, _moves, _passes, _Swaps, swap_extras
from ferry.plan.planner import in_scope, prepare_topic, target_brokers
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


def _two_topics(
    u_on: tuple[int, int, int] = (1, 3, 5), others: int = 0
) -> tuple[RackLayout, list[TopicDemand]]:
    """Racks r0-r2 of two brokers each (0-1, 2-3, 4-5); one partition each, RF 3. Topic ``t`` sits
    on 0, 1 (one rack: only one of them can stay) and 2; topic ``u`` on ``u_on``; ``others`` more
    topics on 0, 2 and 4."""
    brokers = [Broker(b, f"r{b // 2}") for b in range(6)]
    states = [
        PartitionState(TopicPartition("t", 0), (0, 1, 2), 0, (0, 1, 2), 100),
        PartitionState(TopicPartition("u", 0), u_on, u_on[0], u_on, 100),
        *(PartitionState(TopicPartition(f"w{n}", 0), (0, 2, 4), 0, (0, 2, 4), 100) for n in range(others)),
    ]
    snapshot = ClusterSnapshot.of(brokers, states)
    goal = Goal(replication_factors={s.tp.topic: 3 for s in states})
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    return layout, [prepare_topic(parts, goal, layout)[1] for parts in in_scope(snapshot, goal)]


QUOTAS: tuple[tuple[int, ...], ...] = ((1, 0, 0, 1, 1, 0), (0, 1, 1, 0, 0, 1))
"""Extras as an optimum that counted rack room over the whole topic may give them: t's in r1 on 3,
which it does not hold, u's on 2."""


def test_a_short_topic_swaps_an_extra_with_a_partner_every_broker_keeping_its_total() -> None:
    layout, demands = _two_topics()
    quotas = list(QUOTAS)
    exact = {t: kept_exactly(layout, demands[t], quotas[t]) for t in (0, 1)}
    assert exact == {0: 1, 1: 2}
    keeps: list[dict[int, frozenset[int]]] = [{}, {}]
    before = [sum(q[i] for q in quotas) for i in range(6)]
    swap_extras(layout, demands, [0, 1], [2, 2], quotas, keeps, exact)
    assert exact == {0: 2, 1: 3}  # t reaches its count; u keeps no fewer (here more)
    assert quotas == [(1, 0, 1, 0, 1, 0), (0, 1, 0, 1, 0, 1)]
    assert [sum(q[i] for q in quotas) for i in range(6)] == before
    assert keeps == [{0: frozenset({0, 2})}, {0: frozenset({1, 3, 5})}]
    for t in (0, 1):
        assert kept_exactly(layout, demands[t], quotas[t]) == exact[t]


def test_nothing_changes_where_no_topic_is_short() -> None:
    layout, demands = _two_topics()
    quotas = list(QUOTAS)
    exact = {0: 1, 1: 2}
    keeps: list[dict[int, frozenset[int]]] = [{}, {}]
    swap_extras(layout, demands, [0, 1], [1, 2], quotas, keeps, exact)
    assert quotas == list(QUOTAS) and keeps == [{}, {}]


def test_no_swap_is_taken_where_the_partner_would_keep_fewer() -> None:
    """Here u holds 2 itself: its extra there keeps a replica, which giving it to t would cost."""
    layout, demands = _two_topics(u_on=(1, 2, 5))
    quotas = list(QUOTAS)
    exact = {t: kept_exactly(layout, demands[t], quotas[t]) for t in (0, 1)}
    assert exact == {0: 1, 1: 3}
    keeps: list[dict[int, frozenset[int]]] = [{}, {}]
    swap_extras(layout, demands, [0, 1], [2, 3], quotas, keeps, exact)
    assert quotas == list(QUOTAS) and exact == {0: 1, 1: 3}


def test_moves_from_an_extra_that_keeps_nothing_come_first() -> None:
    """t holds broker 0 and has extras on 0 and 3 (its one in r2, on 4, may not leave that rack): an
    extra on 3 holds a new replica, so moving it away loses nothing kept, and those moves are
    weighed before the ones from 0."""
    layout, demands = _two_topics()
    givers = [a for a, _ in _moves(layout, demands[0], QUOTAS[0])]
    assert set(givers) == {0, 3}
    assert givers == sorted(givers, key=lambda a: a == 0)


def test_a_topic_still_short_is_solved_again_with_the_topics_holding_extras_where_it_needs_them() -> None:
    """The last resort for the few topics the swaps leave short: t with every topic that has an
    extra on a broker where t holds more than its quota (u, on 1 and 2), solved as one chunk."""
    layout, demands = _two_topics()
    quotas = list(QUOTAS)
    exact = {t: kept_exactly(layout, demands[t], quotas[t]) for t in (0, 1)}
    before = [sum(q[i] for q in quotas) for i in range(6)]
    keeps: list[dict[int, frozenset[int]]] = [{}, {}]
    swaps = _Swaps(layout, demands, quotas, keeps, exact, _Extras(demands, [0, 1], quotas))
    assert swaps.gathered(0)
    assert exact[0] == 2 and exact[0] + exact[1] > 3
    assert [sum(q[i] for q in quotas) for i in range(6)] == before
    for t in (0, 1):
        assert kept_exactly(layout, demands[t], quotas[t]) == exact[t]
    assert not swaps.gathered(0)  # at its count now: nothing more to win in that chunk


def test_the_passes_stop_once_topics_in_a_row_find_no_swap() -> None:
    """Topics w0.. hold no extra (no move of one to weigh) and are short of a count no swap can
    reach; t, after them, finds its swap unless :data:`IN_VAIN` of them came first."""
    for before in (IN_VAIN - 1, IN_VAIN):
        layout, demands = _two_topics(others=before)
        quotas = [*QUOTAS, *(d.quota.base for d in demands[2:])]
        exact = {x: kept_exactly(layout, demands[x], quotas[x]) for x in range(len(demands))}
        counted = [2, 2, *(exact[x] + 1 for x in range(2, len(demands)))]
        keeps: list[dict[int, frozenset[int]]] = [{} for _ in demands]
        topics = list(range(len(demands)))
        swaps = _Swaps(layout, demands, quotas, keeps, exact, _Extras(demands, topics, quotas))
        short = _passes(swaps, [*range(2, len(demands)), 0], counted)
        assert (0 in short) == (before == IN_VAIN)
        assert exact[0] == (1 if before == IN_VAIN else 2)


def test_partners_come_in_the_order_that_finds_a_swap_early() -> None:
    """Every (give, take) pair of a skewed cluster of topics of 1 to 6 partitions: the partners
    with an extra on ``give`` and none on ``take`` come those whose extra on ``give`` holds a new
    replica first, then those holding more than their base on ``take``, then the smaller, then by
    topic."""
    layout, demands, quotas = _skewed()
    topics = list(range(len(demands)))
    extras = _Extras(demands, topics, quotas)
    weighed = 0
    for give, take in itertools.permutations(range(len(layout.brokers)), 2):
        rack = layout.rack_at[take]
        found = extras.partners(give, take, rack)
        candidates = [
            u
            for u in topics
            if quotas[u][give] > demands[u].quota.base[give]
            and quotas[u][take] == demands[u].quota.base[take]
            and demands[u].quota.rack_extras[rack][1] > 0
        ]

        keys = {u: _partner_key(demands[u], give, take) for u in candidates}
        assert found == sorted(candidates, key=lambda u: (*keys[u], u))
        weighed += len({keys[u] for u in found}) > 1
    assert weighed, "no pair had partners of different keys: the order is not exercised"


def test_a_gathered_chunk_takes_first_the_partners_whose_extras_hold_new_replicas() -> None:
    """For every set of two brokers a topic wants extras on: the topics with an extra on either,
    those whose extras there hold fewest replicas above their base first, then the smaller, then by
    topic."""
    layout, demands, quotas = _skewed()
    topics = list(range(len(demands)))
    extras = _Extras(demands, topics, quotas)
    for wants in itertools.combinations(range(len(layout.brokers)), 2):
        with_extra = [u for u in topics if any(quotas[u][b] > demands[u].quota.base[b] for b in wants)]

        def key(u: int, wants: tuple[int, ...] = wants) -> tuple[int, int, int]:
            d = demands[u]
            above = [b for b in wants if quotas[u][b] > d.quota.base[b] and d.held[b] > d.quota.base[b]]
            return len(above), len(d.layouts), u

        assert extras.gathering(list(wants)) == sorted(with_extra, key=key)


def _skewed() -> tuple[RackLayout, list[TopicDemand], list[tuple[int, ...]]]:
    """A skewed cluster of 40 topics of 1 to 6 partitions on 9 brokers in 3 racks, with random
    extras on top of each topic's base."""
    full = generated(brokers=9, racks=3, topics=40, partitions=6, rf=3, seed=5, occupied=7, skew=0.6)
    # Topic n keeps its first 1 + n % 6 partitions.
    kept = [s for s in full.partitions if s.tp.partition <= int(s.tp.topic[-3:]) % 6]
    snapshot = ClusterSnapshot.of(full.brokers, kept)
    goal = Goal()
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    demands = [prepare_topic(parts, goal, layout)[1] for parts in in_scope(snapshot, goal)]
    rnd = random.Random(3)
    quotas = [tuple(b + rnd.randint(0, 1) for b in d.quota.base) for d in demands]
    return layout, demands, quotas


def _partner_key(d: TopicDemand, give: int, take: int) -> tuple[bool, bool, int]:
    held, base = d.held, d.quota.base
    return held[give] > base[give], not held[take] > base[take], len(d.layouts)
