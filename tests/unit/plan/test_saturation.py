"""Rows for full pools (ferry.plan.saturation): a pooled optimum that fills every idle broker of a
rack for many topics is ruled out up front when a broker cannot take one of each, so the first
pooled program splits, and the optimum is the full program's."""

from __future__ import annotations

import pytest
from support.clusters import generated

from ferry.model import Goal
from ferry.plan import brokerrows
from ferry.plan.balance import broker_band
from ferry.plan.planner import in_scope, prepare_topic, target_brokers
from ferry.plan.program import Program
from ferry.plan.racks import RackLayout
from ferry.plan.racktotals import retarget
from ferry.plan.terms import Setting, TopicDemand


def _posed(seed: int, partitions: int, skew: float) -> tuple[RackLayout, list[TopicDemand], Setting]:
    # Three racks of three brokers, the last broker of each new; replicas placed without regard
    # to racks, so partitions are pinned and the program is no network.
    snapshot = generated(
        brokers=9, racks=3, topics=10, partitions=partitions, rf=3, seed=seed, occupied=6, skew=skew
    )
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, Goal()))
    demands = retarget(layout, [prepare_topic(p, Goal(), layout)[1] for p in in_scope(snapshot, Goal())])
    return layout, demands, Setting(broker_band(layout, demands), 0, None, False)


CASES = [(2, 5, 0.0), (5, 5, 0.5), (4, 5, 2.0), (0, 8, 0.0), (1, 8, 2.0)]


@pytest.mark.parametrize(("seed", "partitions", "skew"), CASES)
def test_full_pools_no_broker_can_take_are_ruled_out_in_the_first_program(
    seed: int, partitions: int, skew: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout, demands, setting = _posed(seed, partitions, skew)
    full = Program(layout, demands, room_rows=set()).solve(setting)
    pooled = Program(layout, demands, room_rows=set(), pool=True)
    found = pooled.solve(setting)
    assert not pooled.unpooled and found is not None and full is not None
    assert sum(found.kept) == sum(full.kept)
    monkeypatch.setattr(brokerrows, "saturation_rows", lambda program: None)
    without = Program(layout, demands, room_rows=set(), pool=True)
    assert without.solve(setting) is None and without.unpooled
