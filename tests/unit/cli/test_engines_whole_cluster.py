"""A goal without per-topic phases (a replace, the byte balance, a drain) never starts Spark: it is
one pass in this process on either engine."""

from __future__ import annotations

import pytest
from support.clusters import balanced, with_new_brokers

from ferry.cli.engines import plan_clusters
from ferry.model import BalanceMode, Goal, PlanJob
from ferry.pipeline import session
from ferry.plan.planner import plan


@pytest.mark.parametrize(
    "goal",
    [
        Goal(replace=((3, 6),)),
        Goal(balance=BalanceMode.BYTES),
        Goal(drain_above=0.7, capacity=dict.fromkeys(range(7), 120_000)),
    ],
    ids=["replace", "bytes", "drain"],
)
def test_a_whole_cluster_goal_on_the_spark_engine_plans_in_process_without_a_session(
    monkeypatch: pytest.MonkeyPatch, goal: Goal
) -> None:
    def no_spark(*_: object, **__: object) -> None:
        raise AssertionError("a Spark session was started for a goal without per-topic phases")

    monkeypatch.setattr(session, "spark_session", no_spark)
    snapshot = with_new_brokers(balanced(6, 3, 3, 10, 3), 1, racks=3)
    planned, stages = plan_clusters([PlanJob("c", "c", snapshot, goal)], engine="spark", master=None)
    assert stages == {}
    assert planned[0].plan.moves == plan(snapshot, goal).moves
    assert len(planned[0].plan.moves) > 0
