"""The planning job: extract -> pass 1 (workers) -> balance -> pass 2 (workers) -> finish (driver).

One job plans one cluster or a whole fleet: every cluster's topics share the two Spark passes. A
single cluster's balance program runs on the driver; a fleet's programs are independent of each
other and run on the workers, one per cluster, in parallel. A fleet's small clusters are planned
whole instead, one task each (:func:`ferry.pipeline.driver.whole_clusters` says which). Stage
times are recorded for the benchmark and the fleet summary.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ferry.model import Plan, PlanJob
from ferry.pipeline import driver, extract, transforms
from ferry.pipeline.kernel import Balanced, ClusterContext, load_balanced, load_demand
from ferry.pipeline.schemas import BALANCED, DEMANDS, PLACED
from ferry.plan.planner import TopicQuota

T = TypeVar("T")


@dataclass
class Stages:
    """Wall seconds per stage of one job, and per cluster: its driver phases plus its topics' time
    in the workers (the fleet summary's ``seconds``)."""

    seconds: dict[str, float] = field(default_factory=dict)
    clusters: dict[str, float] = field(default_factory=dict)

    def add(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - since
        return now

    def charge(self, cluster: str, seconds: float) -> None:
        self.clusters[cluster] = self.clusters.get(cluster, 0.0) + seconds

    def timed(self, cluster: str, work: Callable[[], T]) -> T:
        """``work()``, its wall time charged to ``cluster``."""
        start = time.perf_counter()
        try:
            return work()
        finally:
            self.charge(cluster, time.perf_counter() - start)


def buckets_for(spark: SparkSession) -> int:
    """Enough buckets that every core gets several and a slow bucket does not leave one idle."""
    return max(16, 4 * spark.sparkContext.defaultParallelism)


Chooser = Callable[[Sequence[PlanJob], int], Sequence[PlanJob]]
"""Which clusters of a fleet to plan whole, one task each, given the number of task slots."""


def plan_jobs(
    spark: SparkSession,
    jobs: Sequence[PlanJob],
    stages: Stages | None = None,
    *,
    whole: Chooser = driver.whole_clusters,
) -> dict[str, Plan]:
    """Plan every cluster of ``jobs``; returns the plans by cluster name."""
    stages = stages if stages is not None else Stages()
    plans = {
        job.name: stages.timed(job.name, partial(driver.plan_on_driver, job))
        for job in jobs
        if not driver.is_distributed(job)
    }
    distributed = [job for job in jobs if driver.is_distributed(job)]
    alone = whole(distributed, spark.sparkContext.defaultParallelism)
    if alone:
        plans.update(_plan_whole(spark, alone, stages))
    planned = {job.name for job in alone}
    spread = [job for job in distributed if job.name not in planned]
    if not spread:
        return plans
    mark = time.perf_counter()
    buckets = buckets_for(spark)
    spark.conf.set("spark.sql.shuffle.partitions", str(buckets))
    frame = extract.bucket_frame(spark, spread, transforms.bucket_keys(spark, buckets))
    contexts = {job.name: driver.context_of(job) for job in spread}
    stages.add("extract", mark)
    balanced = _balance(frame, spread, contexts, stages)
    mark = time.perf_counter()
    decisions = {key: d for b in balanced.values() for key, d in b.decisions.items()}
    shared = spark.sparkContext.broadcast(decisions)
    try:
        rows = transforms.placements(frame, contexts, shared).toArrow()
    finally:
        shared.unpersist()
    mark = stages.add("place", mark)
    placed, fallbacks, seconds = driver.placed_rows(_rows(rows, PLACED.fieldNames()))
    for job in spread:
        stages.charge(job.name, seconds.get(job.name, 0.0))
        finish = partial(
            driver.finish,
            job,
            contexts[job.name],
            balanced[job.name].bound,
            placed.get(job.name, {}),
            fallbacks.get(job.name, 0),
        )
        plans[job.name] = stages.timed(job.name, finish)
    stages.add("assemble", mark)
    return plans


def _plan_whole(spark: SparkSession, jobs: Sequence[PlanJob], stages: Stages) -> dict[str, Plan]:
    mark = time.perf_counter()
    by_name = {job.name: job for job in jobs}
    plans = {}
    for name, result, seconds in transforms.whole_plans(spark, jobs):
        stages.charge(name, seconds)
        plans[name] = result
    missing = sorted(set(by_name) - set(plans))
    if missing:
        raise RuntimeError(f"{missing[0]}: no plan came back")
    stages.add("whole", mark)
    return plans


def _rows(table: pa.Table, names: Sequence[str]) -> zip[tuple[Any, ...]]:
    """The columns ``names`` of a collected table as row tuples (typed by the schema, not by mypy)."""
    return zip(*(table.column(n).to_pylist() for n in names), strict=True)


def _balance(
    frame: DataFrame,
    jobs: Sequence[PlanJob],
    contexts: Mapping[str, ClusterContext],
    stages: Stages,
) -> dict[str, Balanced]:
    """Pass 1 on the workers, then each cluster's balance program."""
    mark = time.perf_counter()
    demands = transforms.demands(frame, contexts)
    if len(jobs) == 1:
        job = jobs[0]
        return {job.name: _balance_on_driver(job, contexts[job.name], demands.toArrow(), stages, mark)}
    # Cached: the per-cluster worker seconds and the balance pass both read pass 1's output.
    demands = demands.cache()
    try:
        spent = demands.groupBy("cluster").agg(F.sum("seconds").alias("seconds")).collect()
        mark = stages.add("prepare", mark)
        by_name = {job.name: job for job in jobs}
        for row in spent:
            stages.charge(row["cluster"], row["seconds"])
        out = {}
        for name, blob, seconds in _rows(
            transforms.balances(demands, contexts).toArrow(), BALANCED.fieldNames()
        ):
            assert isinstance(name, str) and isinstance(blob, bytes) and isinstance(seconds, float)
            out[name] = load_balanced(blob)
            driver.check_balanced(by_name[name], out[name])
            stages.charge(name, seconds)
        missing = sorted(set(by_name) - set(out))
        if missing:
            raise RuntimeError(f"{missing[0]}: no balance outcome came back")
        stages.add("balance", mark)
        return out
    finally:
        demands.unpersist()


def _balance_on_driver(
    job: PlanJob, context: ClusterContext, rows: pa.Table, stages: Stages, mark: float
) -> Balanced:
    by_topic = {}
    shared: dict[TopicQuota, TopicQuota] = {}
    for _, topic, blob, seconds in _rows(rows, DEMANDS.fieldNames()):
        by_topic[topic] = load_demand(blob, shared)
        stages.charge(job.name, seconds)
    mark = stages.add("prepare", mark)
    result = stages.timed(job.name, partial(driver.balance, job, context, by_topic))
    stages.add("balance", mark)
    return result
