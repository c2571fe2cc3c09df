"""The planning job: extract -> pass 1 (workers) -> balance (driver) -> pass 2 (workers) -> finish.

One job plans one cluster or a whole fleet: every cluster's topics share the two Spark passes; the
global phases run on the driver per cluster. Stage times are recorded for the benchmark and the
fleet summary.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession

from ferry.model import Plan
from ferry.pipeline import driver, extract, transforms
from ferry.pipeline.driver import Balanced, ClusterJob
from ferry.pipeline.kernel import ClusterContext, load_demand
from ferry.plan.balance import TopicDemand


@dataclass
class Stages:
    """Wall seconds per stage of one job."""

    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - since
        return now


def buckets_for(spark: SparkSession) -> int:
    """Enough buckets that every core gets several and a slow bucket does not leave one idle."""
    return max(16, 4 * spark.sparkContext.defaultParallelism)


def plan_jobs(
    spark: SparkSession, jobs: Sequence[ClusterJob], stages: Stages | None = None
) -> dict[str, Plan]:
    """Plan every cluster of ``jobs``; returns the plans by cluster name."""
    stages = stages if stages is not None else Stages()
    plans = {job.name: driver.plan_on_driver(job) for job in jobs if not job.distributed}
    spread = [job for job in jobs if job.distributed]
    if not spread:
        return plans
    mark = time.perf_counter()
    buckets = buckets_for(spark)
    spark.conf.set("spark.sql.shuffle.partitions", str(buckets))
    frame = transforms.with_bucket(extract.partitions_frame(spark, spread), buckets)
    contexts = {job.name: job.context for job in spread}
    mark = stages.add("extract", mark)
    balanced = _balance(frame, spread, contexts, stages)
    mark = time.perf_counter()
    decisions = {key: d for b in balanced.values() for key, d in b.decisions.items()}
    shared = spark.sparkContext.broadcast(decisions)
    try:
        rows = transforms.placements(frame, contexts, shared).toArrow()
    finally:
        shared.unpersist()
    mark = stages.add("place", mark)
    names = ("cluster", "topic", "partition", "replicas", "fallbacks", "seconds")
    placed, fallbacks, seconds = driver.placed_rows(
        zip(*(rows.column(n).to_pylist() for n in names), strict=True)
    )
    for job in spread:
        job.seconds += seconds.get(job.name, 0.0)
        bound = balanced[job.name].bound
        plans[job.name] = driver.finish(job, bound, placed.get(job.name, {}), fallbacks.get(job.name, 0))
    stages.add("assemble", mark)
    return plans


def _balance(
    frame: DataFrame,
    jobs: Sequence[ClusterJob],
    contexts: Mapping[str, ClusterContext],
    stages: Stages,
) -> dict[str, Balanced]:
    """Pass 1 on the workers, then each cluster's balance program on the driver."""
    mark = time.perf_counter()
    rows = transforms.demands(frame, contexts).toArrow()
    by_cluster: dict[str, dict[str, TopicDemand]] = {job.name: {} for job in jobs}
    seconds = dict.fromkeys(by_cluster, 0.0)
    cols = (rows.column(n).to_pylist() for n in ("cluster", "topic", "demand", "seconds"))
    for cluster, topic, blob, spent in zip(*cols, strict=True):
        by_cluster[cluster][topic] = load_demand(blob)
        seconds[cluster] += spent
    mark = stages.add("prepare", mark)
    out = {}
    for job in jobs:
        job.seconds += seconds[job.name]
        out[job.name] = driver.balance(job, by_cluster[job.name])
    stages.add("balance", mark)
    return out
