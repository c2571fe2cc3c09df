"""The exact pass after the balance program: a topic's best count under its quotas, and the chunks
of short topics solved again so placement reaches the program's bound."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from types import SimpleNamespace
from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.clusters import generated

from ferry.model import Broker, ClusterSnapshot, Goal, PartitionState, TopicPartition
from ferry.plan.balance import assign_extras as balance
from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.repair import per_partition
from ferry.plan.balance.repair.chunk_program import rejoin
from ferry.plan.balance.repair.kept_flow import kept_exactly, kept_per_topic, kept_replicas
from ferry.plan.balance.repair.per_partition import exact_posed
from ferry.plan.balance.setting import Setting
from ferry.plan.balance.solvers import side_by_side as side_by_side_module
from ferry.plan.planner import (
    in_scope,
    lower_bound,
    place_topic,
    planned_replicas,
    prepare_topic,
    target_brokers,
)
from ferry.plan.prepare.demand import FreeLayouts, TopicDemand
from ferry.plan.racks import RackLayout


def _topic(racks: Sequence[int], layouts: Sequence[Sequence[int]], rf: int) -> tuple[RackLayout, TopicDemand]:
    """One topic on brokers 0.. in ``racks`` (rack of each broker), partitions on ``layouts``."""
    brokers = [Broker(b, f"r{k}") for b, k in enumerate(racks)]
    states = [
        PartitionState(TopicPartition("t", p), tuple(r), r[0], tuple(r), 100 * (p + 1))
        for p, r in enumerate(layouts)
    ]
    snapshot = ClusterSnapshot.of(brokers, states)
    goal = Goal(replication_factors={"t": rf})
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    (parts,) = in_scope(snapshot, goal)
    return layout, prepare_topic(parts, goal, layout)[1]


def _allowed(layout: RackLayout, rf: int) -> list[tuple[int, ...]]:
    """Every replica set of ``rf`` brokers within the rack bounds."""
    bounds = layout.bounds(rf)
    out = []
    for chosen in itertools.combinations(layout.brokers, rf):
        counts = layout.counts(chosen)
        if all(lo <= c <= hi for c, (lo, hi) in zip(counts, bounds, strict=True)):
            out.append(chosen)
    return out


def _best(layout: RackLayout, layouts: Sequence[Sequence[int]], rf: int, quota: Sequence[int]) -> int:
    """The most kept replicas over every placement meeting ``quota`` exactly, by enumeration."""
    best = -1
    target = Counter({b: q for b, q in zip(layout.brokers, quota, strict=True) if q})
    for choice in itertools.product(_allowed(layout, rf), repeat=len(layouts)):
        if Counter(b for chosen in choice for b in chosen) == target:
            best = max(best, sum(len(set(c) & set(r)) for c, r in zip(choice, layouts, strict=True)))
    return best


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_flow_keeps_as_many_as_the_best_placement(data: st.DataObject) -> None:
    racks = data.draw(st.lists(st.integers(0, 2), min_size=4, max_size=6))
    rf = data.draw(st.integers(2, 3))
    brokers = list(range(len(racks)))
    parts = data.draw(st.integers(1, 3))
    # Never more replicas than the factor: a partition lowering it is not posed exactly.
    layouts = [
        data.draw(st.lists(st.sampled_from(brokers), min_size=1, max_size=rf, unique=True))
        for _ in range(parts)
    ]
    layout, demand = _topic(racks, layouts, rf)
    final = [data.draw(st.sampled_from(_allowed(layout, rf))) for _ in range(parts)]
    load = Counter(b for chosen in final for b in chosen)
    quota = [load[b] for b in layout.brokers]
    kept = kept_exactly(layout, demand, quota)
    best = _best(layout, layouts, rf, quota)
    assert kept == best
    # A lower bound: -1 where the partitions it keeps in place leave the others no placement.
    assert kept_exactly(layout, demand, quota, fix_settled=True) <= kept
    # A chunk of this topic alone holds each broker's total, so its quotas: it keeps the same.
    if _fits(layout, demand, quota):
        found = rejoin(layout, [demand], [quota])
        assert found is not None and found.kept == [best]
    # The replicas the flow keeps: that many, each where it was, no broker above its quota.
    chosen = kept_replicas(layout, demand.layouts, quota)
    assert chosen is not None and sum(map(len, chosen)) == kept
    assert all(keep <= set(held) for keep, held in zip(chosen, layouts, strict=True))
    per_broker = Counter(b for keep in chosen for b in keep)
    assert all(per_broker[b] <= q for b, q in zip(layout.brokers, quota, strict=True))


def _fits(layout: RackLayout, demand: TopicDemand, quota: Sequence[int]) -> bool:
    """Whether ``quota`` is the topic's base plus one extra on some brokers allowed one, each rack's
    extras within their bounds."""
    extra = [q - b for q, b in zip(quota, demand.quota.base, strict=True)]
    allowed = set(demand.quota.extra_positions(layout))
    per_rack = layout.counts(b for i, b in enumerate(layout.brokers) if extra[i])
    return (
        all(e in (0, 1) and (not e or i in allowed) for i, e in enumerate(extra))
        and sum(extra) == demand.quota.extras
        and all(lo <= n <= hi for n, (lo, hi) in zip(per_rack, demand.quota.rack_extras, strict=True))
    )


def test_the_flow_counts_by_hand() -> None:
    # Racks r0-r3 of two brokers each (0-1, 2-3, 4-5, 6-7); partition 0 on 0 and 2, partition 1 on 1
    # and 4; at most one replica of a partition per rack.
    racks = [0, 0, 1, 1, 2, 2, 3, 3]
    layout, demand = _topic(racks, [[0, 2], [1, 4]], 2)
    assert kept_exactly(layout, demand, [1, 1, 1, 0, 1, 0, 0, 0]) == 4  # as they are
    assert kept_exactly(layout, demand, [2, 0, 1, 0, 1, 0, 0, 0]) == 3  # 1 leaves, both on 0
    assert kept_exactly(layout, demand, [2, 0, 0, 0, 0, 0, 2, 0]) == 1  # only 0 stays
    assert kept_exactly(layout, demand, [0, 0, 2, 2, 0, 0, 0, 0]) == -1  # both in one rack


def test_the_flow_counts_by_hand_where_a_rack_holds_two_replicas_of_a_partition() -> None:
    # RF 3 over racks of three (0-2) and two (3-4): one or two replicas of a partition in each.
    # Brokers 1 and 4 must hold both partitions, so one partition takes 0 or 3 and the other none:
    # one replica of partition 0 stays. Sent to its racks as a whole, the new replicas let
    # partition 0 keep both 0 and 3 and partition 1 take its three from the room of brokers 1 and 4
    # alone, two on one of them.
    layout, demand = _topic([0, 0, 0, 1, 1], [[3, 0], [2]], 3)
    assert kept_exactly(layout, demand, [1, 2, 0, 1, 2]) == 1
    keeps = kept_replicas(layout, demand.layouts, [1, 2, 0, 1, 2])
    assert keeps is not None and sum(map(len, keeps)) == 1 and not keeps[1]
    # Racks of 0-1 and 2-3 at RF 3: both partitions on 0 and 2, one of them on 1, the other on 3. A
    # chunk of this topic alone holds each broker's total: it keeps 4 too, not 5 (partition 1
    # keeping 0, 1 and 3, partition 0 keeping 0 and 2 and taking the room left on 2 beside itself).
    layout, demand = _topic([1, 1, 0, 0], [[0, 2], [0, 3, 1]], 3)
    assert kept_exactly(layout, demand, [2, 1, 2, 1]) == 4
    found = rejoin(layout, [demand], [[2, 1, 2, 1]])
    assert found is not None and found.kept == [4]
    assert sum(map(len, found.keeps[0].values())) == 4


def _phases(snapshot: ClusterSnapshot, goal: Goal) -> tuple[int, int]:
    """Replica moves of the balance pass's placement, and the program's bound, without the exact
    fallback the finish applies to small inputs."""
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    prepared = [prepare_topic(parts, goal, layout) for parts in in_scope(snapshot, goal)]
    demands = [d for _, d in prepared]
    outcome = balance.assign_extras(layout, demands)
    moved = 0
    for (work, _), quota, keeps in zip(prepared, outcome.quotas, outcome.keeps, strict=True):
        place_topic(work, layout, quota, keeps, goal.rack_mode)
        moved += sum(len(set(r) - set(s.replicas)) for s, r in planned_replicas(work))
    return moved, lower_bound(demands, outcome)


WIDE = {"brokers": 30, "racks": 5, "topics": 20, "partitions": 3, "rf": 3, "occupied": 25}
"""Five brokers added to 25 in five racks, topics of three partitions: wide enough that a topic's
quotas admit fewer kept replicas than the program's rack-room rows count (on most of seeds 0-5; which
ones depends on the optimum the solver picks among equals)."""


def test_placement_reaches_the_bound_where_the_rack_room_rows_were_loose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snapshots = [generated(seed=seed, **WIDE) for seed in range(6)]
    bounds = []
    for snapshot in snapshots:
        moved, bound = _phases(snapshot, Goal())
        assert moved == bound
        bounds.append(bound)
    monkeypatch.setattr(balance, "realise_counting", lambda layout, demands, solved: (solved, 0))
    short = [s for s, bound in zip(snapshots, bounds, strict=True) if _phases(s, Goal())[0] > bound]
    assert len(short) >= 2  # the cases need the pass


CROWDED = {"brokers": 10, "racks": 2, "topics": 12, "partitions": 4, "rf": 3, "occupied": 8}
"""Two brokers added to eight in two racks at RF 3: a rack holds one or two replicas of each
partition, so a chunk places a partition's new replicas broker by broker."""


@pytest.mark.parametrize(("shape", "seed"), [(WIDE, 0), (CROWDED, 0), (CROWDED, 1), (CROWDED, 2)])
def test_a_chunk_solved_again_keeps_every_brokers_total_and_the_most_its_quotas_allow(
    shape: dict[str, int], seed: int
) -> None:
    snapshot = generated(seed=seed, **shape)
    goal = Goal()
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    demands = retarget(layout, [prepare_topic(parts, goal, layout)[1] for parts in in_scope(snapshot, goal)])
    outcome: Balance = balance.assign_extras(layout, demands)
    chunk = [t for t, d in enumerate(demands) if exact_posed(d, outcome.quotas[t])]
    before = sum(kept_exactly(layout, demands[t], outcome.quotas[t]) for t in chunk)
    found = rejoin(layout, [demands[t] for t in chunk], [outcome.quotas[t] for t in chunk])
    assert found is not None
    assert sum(found.kept) >= before
    for i in range(len(layout.brokers)):
        assert sum(q[i] for q in found.quotas) == sum(outcome.quotas[t][i] for t in chunk)
    for j, t in enumerate(chunk):
        # Under the quotas it found, each topic keeps what it can at best: the chunk's optimum.
        assert kept_exactly(layout, demands[t], found.quotas[j]) == found.kept[j]
        assert found.keeps[j].keys() == set(range(demands[t].partitions))
        assert sum(map(len, found.keeps[j].values())) == found.kept[j]


def test_partners_above_their_count_come_first_then_extras_on_half_the_brokers_then_the_smaller() -> None:
    layout = RackLayout.of({}, list(range(10)))
    # Per topic: (extras, partitions); only these two are read.
    shapes = [(5, 4), (9, 3), (5, 2), (0, 7), (1, 1), (6, 9), (4, 9), (3, 1)]
    demands = [
        cast(TopicDemand, SimpleNamespace(quota=SimpleNamespace(extras=e), layouts=[None] * n))
        for e, n in shapes
    ]
    counted = [10] * len(shapes)
    exact = {t: 10 for t in range(len(shapes))} | {1: 11, 7: 9}
    order = per_partition.partner_order(layout, demands, range(len(shapes)), counted, exact)
    # 1 keeps more than its count; 3 has no extra to trade and 7 is short itself.
    assert order == [1, 2, 0, 5, 6, 4]


def test_chunks_sharing_no_topic_go_in_one_wave() -> None:
    chunks = [[1, 2], [3, 4], [2, 5], [6], [7, 1]]
    assert per_partition._waves(chunks) == [[[1, 2], [3, 4]], [[2, 5], [6], [7, 1]]]
    assert per_partition._waves([]) == []


def test_chunks_solved_side_by_side_end_as_one_after_the_other(monkeypatch: pytest.MonkeyPatch) -> None:
    # Chunks of one short topic and one partner: many chunks, partners wrapping around between waves.
    monkeypatch.setattr(per_partition, "FIRST", (1, 1, 1))
    monkeypatch.setattr(per_partition, "LATER", (1, 1, 1))
    changed = 0
    for seed in range(3):
        snapshot = generated(seed=seed, **WIDE)
        goal = Goal()
        layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
        demands = retarget(layout, [prepare_topic(p, goal, layout)[1] for p in in_scope(snapshot, goal)])
        with monkeypatch.context() as m:
            m.setattr(balance, "realise_counting", lambda layout, demands, solved: (solved, 0))
            solved = balance.assign_extras(layout, demands)
        with monkeypatch.context() as m:
            m.setattr(per_partition, "side_by_side", lambda work, items: [work(item) for item in items])
            in_turn = per_partition.realise(layout, demands, solved)
        with monkeypatch.context() as m:
            m.setattr(side_by_side_module, "cores", lambda: 4)
            together = per_partition.realise(layout, demands, solved)
        assert together == in_turn
        changed += in_turn != solved
    assert changed >= 1  # the pass had chunks to solve


def test_a_partner_shared_by_chunks_is_solved_with_what_the_earlier_chunk_gave_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Three short topics, one partner: every chunk of one short topic takes that partner, so the
    # chunks must run one after the other. A stand-in for the chunk program gives each topic of a
    # chunk one more on broker 0 than it had, and keeps more than before.
    def rejoin_one_more(
        layout: RackLayout, demands: Sequence[TopicDemand], quotas: Sequence[Sequence[int]]
    ) -> Balance:
        more = [(q[0] + 1,) for q in quotas]
        return Balance(more, [100 + q[0] for q in more], [{} for _ in more])

    monkeypatch.setattr(per_partition, "rejoin", rejoin_one_more)
    monkeypatch.setattr(side_by_side_module, "cores", lambda: 4)
    quotas: list[tuple[int, ...]] = [(0,)] * 4
    keeps: list[dict[int, frozenset[int]]] = [{} for _ in range(4)]
    exact = dict.fromkeys(range(4), 0)
    layout = RackLayout.of({}, [0])
    # One replication factor for all (the chunks read it); the rest only passed through to the stand-in.
    demands = [cast(TopicDemand, SimpleNamespace(layouts=FreeLayouts(), single_replica=False))] * 4
    assert per_partition._round(layout, demands, [0, 1, 2], [3], quotas, keeps, exact, mix=(1, 1, 1))
    assert quotas == [(1,), (1,), (1,), (3,)]


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 999),
    st.integers(1, 3),
    st.sampled_from([0.0, 3.0]),
    st.integers(1, 40),
    st.booleans(),
)
def test_topics_solved_a_run_at_a_time_keep_what_all_at_once_keep(
    seed: int, racks: int, skew: float, run: int, fix_settled: bool
) -> None:
    snapshot = generated(brokers=7, racks=racks, topics=6, partitions=9, rf=3, seed=seed, skew=skew)
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, Goal()))
    demands = retarget(layout, [prepare_topic(p, Goal(), layout)[1] for p in in_scope(snapshot, Goal())])
    quotas = balance.assign_extras(layout, demands).quotas
    whole = kept_per_topic(layout, demands, quotas, fix_settled=fix_settled, run=10**9)
    assert kept_per_topic(layout, demands, quotas, fix_settled=fix_settled, run=run) == whole
    # The program's quotas are met by some placement, so every posed topic finds one.
    assert all(k >= 0 for k, d in zip(whole, demands, strict=True) if d.layouts)


def test_at_most_repaired_exact_topics_have_their_rows_repaired_those_breaking_most_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Beyond REPAIRED topics the exact pass could solve, the first REPAIRED (most broken rows, then
    topic order) are still repaired and the rest left to that pass; a topic that pass cannot solve is
    always repaired."""

    class _Demand:
        def __init__(self, exact: bool) -> None:
            self.exact = exact

    demands = [_Demand(t != 4) for t in range(6)]
    broken = {(0, 0), (1, 0), (1, 1), (2, 0), (3, 0), (3, 2), (4, 0), (5, 0)}
    monkeypatch.setattr(balance, "REPAIRED", 10)
    assert balance._worth_repairing(demands, broken) == broken
    monkeypatch.setattr(balance, "REPAIRED", 3)
    assert balance._worth_repairing(demands, broken) == {(1, 0), (1, 1), (3, 0), (3, 2), (0, 0), (4, 0)}
    monkeypatch.setattr(balance, "REPAIRED", 0)
    assert balance._worth_repairing(demands, broken) == {(4, 0)}
    # A program of more topics than ESCALATED never takes their rows in: none is repaired.
    monkeypatch.setattr(balance, "REPAIRED", 10)
    monkeypatch.setattr(balance, "ESCALATED", 5)
    assert balance._worth_repairing(demands, broken) == {(4, 0)}
    monkeypatch.setattr(balance, "ESCALATED", 6)
    assert balance._worth_repairing(demands, broken) == broken


@pytest.mark.parametrize(("partner_keeps", "swapped"), [(2, False), (1, True)])
def test_the_pass_stops_once_the_topics_together_keep_the_programs_count(
    monkeypatch: pytest.MonkeyPatch, partner_keeps: int, swapped: bool
) -> None:
    # Topic 0 counted 1 and keeps 0; topic 1, its partner, counted 1 and keeps 1. A stand-in chunk
    # program lets the partner keep ``partner_keeps`` (2: the two keep the program's count of 2,
    # topic 0 still short) and marks its quotas with each solve; a stand-in for the swaps marks
    # them too. Only where the count is not reached do the swaps run.
    solves: list[int] = []

    def rejoin(
        layout: RackLayout, demands: Sequence[TopicDemand], quotas: Sequence[Sequence[int]]
    ) -> Balance:
        solves.append(len(solves))
        return Balance([(q[0] + 1,) for q in quotas], [0, partner_keeps], [{}, {}])

    def swaps(*args: object) -> None:
        quotas = cast(list[tuple[int, ...]], args[4])
        quotas[0] = (-1,)

    monkeypatch.setattr(per_partition, "exact_posed", lambda d, quota: True)
    monkeypatch.setattr(per_partition, "_kept", lambda layout, demands, solved, topics: {0: 0, 1: 1})
    monkeypatch.setattr(per_partition, "partner_order", lambda *args: [1])
    monkeypatch.setattr(per_partition, "rejoin", rejoin)
    monkeypatch.setattr(per_partition, "swap_extras", swaps)
    # One replication factor for both (the chunks read it); the rest only passed through to the stand-ins.
    demands = [cast(TopicDemand, SimpleNamespace(layouts=FreeLayouts(), single_replica=False))] * 2
    solved = Balance([(0,), (0,)], [1, 1], [{}, {}])
    found = per_partition.realise(RackLayout.of({}, [0]), demands, solved)
    # One chunk solve either way: with the partner at 1 it keeps no more than before (not taken, and
    # the rounds end), with the partner at 2 the count is reached.
    assert solves == [0]
    assert found.quotas == ([(-1,), (0,)] if swapped else [(1,), (1,)])
    assert found.kept == [1, 1]  # the program's counts: the lower bound on moves is unchanged


def test_single_replica_topics_partner_every_chunk_besides_those_of_its_factor() -> None:
    # Topics 0 and 1 short at RF 2 and 3; partners at RF 2 (2, 3), RF 3 (4) and single-replica (5, 6).
    def topic(rf: int) -> TopicDemand:
        return cast(TopicDemand, SimpleNamespace(layouts=FreeLayouts(rf=(rf,) * 4), single_replica=rf == 1))

    demands = [topic(2), topic(3), topic(2), topic(2), topic(3), topic(1), topic(1)]
    chunks = per_partition._chunks(demands, [0, 1], [5, 2, 4, 3, 6], (1, 1, 2))
    assert chunks == [[0, 2, 5, 6], [1, 4, 5, 6]]
    # Without partners of its factor a chunk takes the others, never a single-replica topic twice.
    assert per_partition._chunks(demands, [1], [2, 5], (1, 2, 2)) == [[1, 2, 5]]


def test_single_replica_topics_trade_only_where_the_leaders_they_pin_still_fit_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Topic 0 has single-replica partitions: its quotas are the leaders it pins per broker. The
    # stand-in exact pass trades them onto broker 0 where single-replica topics may trade.
    demands = [cast(TopicDemand, SimpleNamespace(single_replica=single)) for single in (True, False)]
    solved = Balance([(1, 1), (1, 1)], [2, 2], [{}, {}])
    traded = Balance([(2, 0), (0, 2)], [2, 2], [{}, {}])
    calls: list[bool] = []

    def counting(
        layout: RackLayout, demands: Sequence[TopicDemand], solved: Balance, *, singles: bool = True
    ) -> tuple[Balance, int]:
        calls.append(singles)
        return (traded if singles else solved), 0

    monkeypatch.setattr(balance, "realise_counting", counting)
    layout = RackLayout.of({}, [0, 1])
    # At most one leader of them per broker: the trade breaks it, so the pass runs again without them.
    assert balance._counted(layout, demands, Setting([(0, 4)] * 2, 0, (1, 0), False), solved) == (solved, 0)
    assert calls == [True, False]
    # One broker may lead two: the trade fits.
    calls.clear()
    assert balance._counted(layout, demands, Setting([(0, 4)] * 2, 0, (1, 1), False), solved) == (traded, 0)
    assert calls == [True]
