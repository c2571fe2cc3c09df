"""The pipeline's decomposition of the planner, run in-process: driver -> buckets -> driver.

No Spark here: the driver's demands and balance program, then the per-bucket function the workers
run, called directly on Arrow tables, with topics spread over several buckets the way the Spark job
spreads them; the result must be exactly ``plan()``'s, byte for byte in the reassignment JSON.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from dataclasses import replace

import pyarrow as pa
import pytest
from support.clusters import balanced, generated
from support.invariants import assert_valid
from support.scenarios import Case, named, random_cases

from ferry.formats import dump_reassignment, dumps_json
from ferry.model import BalanceMode, ClusterSnapshot, Goal, Plan, PlanJob
from ferry.pipeline import driver
from ferry.pipeline.buckets import empty_bucket, from_blobs, partitions_table, split, to_blob
from ferry.pipeline.kernel import PLACED_ARROW, place_bucket, solve, topics_of
from ferry.plan.planner import in_scope, plan


def buckets(job: PlanJob, count: int) -> list[pa.Table]:
    """The cluster's partitions cut into ``count`` buckets as the driver cuts them, each through its
    IPC blob as the workers get it, rows reversed (the workers must not rely on the order)."""
    out = []
    for table in split(partitions_table(job), count):
        table = from_blobs([to_blob(table)])
        out.append(table.take(pa.array(list(reversed(range(table.num_rows))), pa.int64())))
    return out


def plan_in_buckets(job: PlanJob, count: int = 3) -> Plan:
    if not driver.is_distributed(job):
        return driver.plan_on_driver(job)
    contexts = {job.name: driver.context_of(job)}
    balanced = solve(job.name, contexts[job.name].layout, *driver.demands(job, contexts[job.name]))
    parts = buckets(job, count)
    # The decisions travel to the workers pickled (a Spark broadcast): they must survive it.
    decisions = pickle.loads(pickle.dumps(balanced.decisions))
    placed = pa.concat_tables([place_bucket(t, contexts, decisions) for t in parts])
    assert placed.schema == PLACED_ARROW
    names = ("cluster", "topic", "partition", "replicas", "fallbacks", "seconds")
    rows, fallbacks, _ = driver.placed_rows(zip(*(placed.column(n).to_pylist() for n in names), strict=True))
    context = contexts[job.name]
    # The report's figures before the plan are counted apart, as the Spark job counts them while
    # the workers place.
    before = driver.balance_before(job, context)
    return driver.finish(
        job, context, balanced.bound, rows.get(job.name, {}), fallbacks.get(job.name, 0), before
    )


@pytest.mark.parametrize("case", named() + random_cases(12), ids=lambda c: c[0])
def test_buckets_plan_exactly_what_the_planner_plans(case: Case) -> None:
    name, snapshot, goal = case
    expected = plan(snapshot, goal)
    got = plan_in_buckets(PlanJob(name, name, snapshot, goal))
    assert dumps_json(dump_reassignment(got)) == dumps_json(dump_reassignment(expected))
    assert got.report == expected.report
    assert_valid(snapshot, goal, got)


@pytest.mark.parametrize("budget", [{"max_moves": 5}, {"max_bytes": 10**9}], ids=["moves", "bytes"])
def test_a_budgeted_step_planned_in_buckets_reports_what_the_planner_reports(budget: dict[str, int]) -> None:
    name, snapshot, goal = named()[0]
    goal = replace(goal, **budget)
    expected = plan(snapshot, goal)
    got = plan_in_buckets(PlanJob(name, name, snapshot, goal))
    assert expected.report.budget is not None and got.report == expected.report
    assert dumps_json(dump_reassignment(got)) == dumps_json(dump_reassignment(expected))


def test_the_buckets_carry_no_isr_and_plan_what_the_planner_plans_where_it_decides() -> None:
    # A lower factor with a replica out of sync: the ISR decides which replicas stay. The driver's
    # demands read it; the workers, whose buckets do not carry it, must only apply that decision.
    base = balanced(6, 3, 2, 12, 3)
    lagging = [replace(p, isr=p.replicas[1:]) if p.tp.topic == "topic-001" else p for p in base.partitions]
    snapshot = ClusterSnapshot.of(base.brokers, lagging)
    goal = Goal(replication_factors={"topic-001": 2})
    expected = plan(snapshot, goal)
    assert dumps_json(dump_reassignment(expected)) != dumps_json(dump_reassignment(plan(base, goal)))
    got = plan_in_buckets(PlanJob("lagging", "lagging", snapshot, goal))
    assert dumps_json(dump_reassignment(got)) == dumps_json(dump_reassignment(expected))


def test_a_bucket_of_two_clusters_gives_each_topic_once_with_its_partitions_in_order() -> None:
    # Rows shuffled; the same topic name in both clusters, one run after the other once sorted.
    rows = [("b", "t", 1), ("b", "u", 0), ("a", "t", 2), ("b", "t", 0), ("a", "t", 0), ("a", "t", 1)]
    table = pa.table(
        {
            "cluster": [c for c, _, _ in rows],
            "topic": [t for _, t, _ in rows],
            "partition": pa.array([p for _, _, p in rows], pa.int32()),
            "replicas": pa.array([[1, 2]] * len(rows), pa.list_(pa.int32())),
            "leader": pa.array([1] * len(rows), pa.int32()),
            "size_bytes": pa.array([10] * len(rows), pa.int64()),
        }
    )
    contexts = {
        name: driver.context_of(PlanJob(name, name, balanced(3, 0, 1, 1, 2), Goal())) for name in "ab"
    }
    got = [
        (ctx.name, [(s.tp.topic, s.tp.partition) for s in parts]) for ctx, parts in topics_of(table, contexts)
    ]
    assert got == [
        ("a", [("t", 0), ("t", 1), ("t", 2)]),
        ("b", [("t", 0), ("t", 1)]),
        ("b", [("u", 0)]),
    ]
    assert list(topics_of(table.slice(0, 0), contexts)) == []


def test_out_of_scope_topics_have_no_demand() -> None:
    name, snapshot, goal = next(c for c in named() if c[0] == "scoped")
    job = PlanJob(name, name, snapshot, goal)
    topics, demands = driver.demands(job, driver.context_of(job))
    assert topics == ["topic-001"] and len(demands) == 1


def test_the_placing_pass_sends_back_changed_partitions_and_each_topics_first() -> None:
    name, snapshot, goal = named()[0]
    job = PlanJob(name, name, snapshot, goal)
    contexts = {name: driver.context_of(job)}
    table = pa.concat_tables(buckets(job, 1))
    decisions = solve(name, contexts[name].layout, *driver.demands(job, contexts[name])).decisions
    placed = place_bucket(table, contexts, decisions)
    names = ("topic", "partition", "replicas")
    sent = {(t, p): tuple(r) for t, p, r in zip(*(placed.column(n).to_pylist() for n in names), strict=True)}
    current = {(s.tp.topic, s.tp.partition): s.replicas for s in snapshot.partitions}
    firsts = {(parts[0].tp.topic, parts[0].tp.partition) for parts in in_scope(snapshot, goal)}
    moved = {
        (m.tp.topic, m.tp.partition) for m in plan(snapshot, goal).moves if set(m.target) != set(m.original)
    }
    assert moved and moved <= set(sent) and firsts <= set(sent)
    assert all(sent[key] != current[key] for key in set(sent) - firsts)
    assert len(sent) < len(snapshot.partitions)


def test_an_empty_bucket_places_nothing() -> None:
    # What the session's start runs in every worker to warm it (ferry.pipeline.transforms.warm_workers).
    placed = place_bucket(empty_bucket(), {}, {})
    assert placed.num_rows == 0 and placed.schema == PLACED_ARROW


def test_a_topic_missing_from_pass_two_is_an_error_not_an_unchanged_topic() -> None:
    name, snapshot, goal = named()[0]
    job = PlanJob(name, name, snapshot, goal)
    with pytest.raises(RuntimeError, match="no placement came back for topic topic-000"):
        driver.finish(job, driver.context_of(job), 0, {}, 0)


def test_the_worker_side_of_the_kernel_does_not_load_the_solvers() -> None:
    # Spark starts fresh Python workers that import the kernel; scipy and OR-Tools take about a second
    # to load there, and only the driver solves the balance program.
    code = "import sys, ferry.pipeline.kernel; print(sorted({'scipy', 'ortools'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def _job(name: str, partitions: int) -> PlanJob:
    snapshot = generated(brokers=4, racks=0, topics=1, partitions=partitions, rf=2, seed=1)
    return PlanJob(name, name, snapshot, Goal())


def test_a_fleets_small_clusters_are_planned_whole_biggest_first() -> None:
    sizes = {"a": 10, "b": 40, "c": 30, "big": 400, "d": 40}
    # 520 partitions over 2 slots: a cluster of at most 520 / 4 = 130 is one task among enough others.
    assert driver.whole_by_size(sizes, (), 2) == ["b", "d", "c", "a"]
    # Over 8 slots the cap is 32.5: the two 40s and the 400 go through the passes.
    assert driver.whole_by_size(sizes, (), 8) == ["c", "a"]
    # A cluster without per-topic passes is planned whole whatever its size.
    assert driver.whole_by_size(sizes, {"big"}, 8) == ["big", "c", "a"]


def test_a_single_cluster_always_goes_through_the_passes() -> None:
    assert driver.whole_by_size({"only": 10}, (), 2) == []
    assert driver.whole_by_size({}, (), 2) == []


def test_only_goals_with_per_topic_phases_are_spread() -> None:
    snapshot = generated(brokers=4, racks=0, topics=1, partitions=10, rf=2, seed=1)
    goals = [
        (Goal(), True),
        (Goal(replace=((1, 4),)), False),
        (Goal(balance=BalanceMode.BYTES), False),
        (Goal(drain_above=0.8, capacity=dict.fromkeys(range(1, 5), 10**9)), False),
    ]
    for goal, spread in goals:
        assert driver.is_distributed(PlanJob("c", "c", snapshot, goal)) is spread, goal
