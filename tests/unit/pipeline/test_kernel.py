"""The pipeline's decomposition of the planner, run in-process: buckets -> driver -> buckets.

No Spark here: the per-bucket functions the workers run are called directly on Arrow tables, with
topics spread over several buckets the way the Spark job spreads them, and the result must be
exactly ``plan()``'s, byte for byte in the reassignment JSON.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import pyarrow as pa
import pytest
from support.clusters import generated
from support.invariants import assert_valid
from support.scenarios import Case, named, random_cases

from ferry.formats import dump_reassignment, dumps_json
from ferry.model import Goal, Plan, PlanJob
from ferry.pipeline import driver
from ferry.pipeline.buckets import from_blobs, partitions_table, split, to_blob, whole_cluster
from ferry.pipeline.kernel import (
    BALANCED_ARROW,
    DEMAND_ARROW,
    PLACED_ARROW,
    Balanced,
    balance_cluster,
    load_balanced,
    load_demand,
    load_plan,
    place_bucket,
    plan_whole,
    prepare_bucket,
)
from ferry.plan.planner import in_scope, plan


def buckets(job: PlanJob, count: int) -> list[pa.Table]:
    """The cluster's partitions cut into ``count`` buckets as the driver cuts them, each through its
    IPC blob as the workers get it, rows reversed (the workers must not rely on the order)."""
    out = []
    for table in split(partitions_table(job), count):
        table = from_blobs([to_blob(table)])
        out.append(table.take(pa.array(list(reversed(range(table.num_rows))), pa.int64())))
    return out


def plan_in_buckets(job: PlanJob, count: int = 3, *, balance_on_worker: bool = False) -> Plan:
    if not driver.is_distributed(job):
        return driver.plan_on_driver(job)
    contexts = {job.name: driver.context_of(job)}
    parts = buckets(job, count)
    demands = pa.concat_tables([prepare_bucket(t, contexts) for t in parts])
    assert demands.schema == DEMAND_ARROW
    topics, blobs = demands.column("topic").to_pylist(), demands.column("demand").to_pylist()
    by_topic = {topic: load_demand(blob) for topic, blob in zip(topics, blobs, strict=True)}
    if balance_on_worker:
        # As a fleet does it: the cluster's demand rows, shuffled, solved by the worker function.
        shuffled = demands.take(pa.array(list(reversed(range(demands.num_rows))), pa.int64()))
        outcome = balance_cluster(shuffled, contexts)
        assert outcome.schema == BALANCED_ARROW and outcome.num_rows == 1
        balanced = load_balanced(outcome.column("outcome")[0].as_py())
        driver.check_balanced(job, balanced)
    else:
        balanced = driver.balance(job, contexts[job.name], by_topic)
    # The decisions travel to the workers pickled (a Spark broadcast): they must survive it.
    decisions = pickle.loads(pickle.dumps(balanced.decisions))
    placed = pa.concat_tables([place_bucket(t, contexts, decisions) for t in parts])
    assert placed.schema == PLACED_ARROW
    names = ("cluster", "topic", "partition", "replicas", "fallbacks", "seconds")
    rows, fallbacks, _ = driver.placed_rows(zip(*(placed.column(n).to_pylist() for n in names), strict=True))
    context = contexts[job.name]
    return driver.finish(job, context, balanced.bound, rows.get(job.name, {}), fallbacks.get(job.name, 0))


@pytest.mark.parametrize("case", named() + random_cases(12), ids=lambda c: c[0])
def test_buckets_plan_exactly_what_the_planner_plans(case: Case) -> None:
    name, snapshot, goal = case
    expected = plan(snapshot, goal)
    got = plan_in_buckets(PlanJob(name, name, snapshot, goal))
    assert dumps_json(dump_reassignment(got)) == dumps_json(dump_reassignment(expected))
    assert got.report == expected.report
    assert_valid(snapshot, goal, got)


@pytest.mark.parametrize("case", [*named()[:3], *random_cases(4, seed=40)], ids=lambda c: c[0])
def test_a_balance_solved_on_a_worker_plans_the_same(case: Case) -> None:
    name, snapshot, goal = case
    got = plan_in_buckets(PlanJob(name, name, snapshot, goal), balance_on_worker=True)
    assert dumps_json(dump_reassignment(got)) == dumps_json(dump_reassignment(plan(snapshot, goal)))


def test_out_of_scope_topics_send_no_demand() -> None:
    name, snapshot, goal = next(c for c in named() if c[0] == "scoped")
    job = PlanJob(name, name, snapshot, goal)
    table = pa.concat_tables(buckets(job, 1))
    demands = prepare_bucket(table, {name: driver.context_of(job)})
    assert demands.column("topic").to_pylist() == ["topic-001"]


def test_a_missing_demand_is_an_error_not_a_smaller_plan() -> None:
    name, snapshot, goal = named()[0]
    job = PlanJob(name, name, snapshot, goal)
    with pytest.raises(RuntimeError, match="no demand came back for topic topic-000"):
        driver.balance(job, driver.context_of(job), {})


def test_a_balance_missing_a_topic_is_refused() -> None:
    name, snapshot, goal = named()[0]
    job = PlanJob(name, name, snapshot, goal)
    with pytest.raises(RuntimeError, match="other topics than the snapshot holds"):
        driver.check_balanced(job, Balanced({(name, "topic-000"): ((), {})}, 0))


def test_pass_two_sends_back_changed_partitions_and_each_topics_first() -> None:
    name, snapshot, goal = named()[0]
    job = PlanJob(name, name, snapshot, goal)
    contexts = {name: driver.context_of(job)}
    table = pa.concat_tables(buckets(job, 1))
    demands = prepare_bucket(table, contexts)
    blobs = zip(demands.column("topic").to_pylist(), demands.column("demand").to_pylist(), strict=True)
    demands = {topic: load_demand(blob) for topic, blob in blobs}
    decisions = driver.balance(job, contexts[name], demands).decisions
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
    jobs = [_job("a", 10), _job("b", 40), _job("c", 30), _job("big", 400), _job("d", 40)]
    # 520 partitions over 2 slots: a cluster of at most 520 / 4 = 130 is one task among enough others.
    assert [job.name for job in driver.whole_clusters(jobs, 2)] == ["b", "d", "c", "a"]
    # Over 8 slots the cap is 32.5: the two 40s and the 400 go through the passes.
    assert [job.name for job in driver.whole_clusters(jobs, 8)] == ["c", "a"]


def test_a_single_cluster_always_goes_through_the_passes() -> None:
    assert driver.whole_clusters([_job("only", 10)], 2) == []
    assert driver.whole_clusters([], 2) == []


def test_a_cluster_planned_whole_is_the_local_engines_plan() -> None:
    """Through the bytes a worker gets and sends back (brokers and partitions as Arrow, the plan
    pickled), for every named scenario: leaders, ISR and sizes unknown or known, racks or none."""
    for name, snapshot, goal in named():
        got_name, blob, seconds = plan_whole(whole_cluster(PlanJob(name, name, snapshot, goal)))
        got, expected = load_plan(blob), plan(snapshot, goal)
        assert got_name == name and seconds > 0
        assert dumps_json(dump_reassignment(got)) == dumps_json(dump_reassignment(expected)), name
        assert got.report == expected.report, name
