"""The planning job: demands and balance (driver) -> extract -> place (workers) -> finish (driver).

``ferry plan`` runs one cluster through it (and a fleet its clusters too big for one task, one
after the other: :mod:`ferry.cli.fleet`). Given several, the driver works out each cluster's
demands and solves its balance program in turn, and their topics share the Spark pass that places
them. A job without per-topic passes (a replace, the byte balance, a drain:
:func:`ferry.pipeline.driver.is_distributed`) is planned on the driver. Stage times are recorded
for the benchmark and the fleet summary.

The driver's own thread needs no Spark before the placing pass, so the session's start (seconds:
a JVM, its Python workers) runs beside its work (:mod:`ferry.pipeline.early_session`); a thread
of its own waits for the session and cuts the partitions into buckets while the balance programs
are solved (:func:`_extract`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from ferry.model import Plan, PlanJob
from ferry.pipeline import driver, extract, transforms
from ferry.pipeline.buckets import unpack
from ferry.pipeline.early_session import behind_the_driver
from ferry.pipeline.kernel import PLACED_ARROW, Balanced, ClusterContext, solve

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


def plan_jobs(
    session: Callable[[], SparkSession],
    jobs: Sequence[PlanJob],
    stages: Stages | None = None,
    slots: int | None = None,
) -> dict[str, Plan]:
    """Plan every cluster of ``jobs``; returns the plans by cluster name. ``session``: the Spark
    session, asked for once the driver needs it (module docstring); ``slots``: the task slots it
    will have, where known before it is up (:func:`ferry.pipeline.session.expected_slots`)."""
    stages = stages if stages is not None else Stages()
    plans = {
        job.name: stages.timed(job.name, partial(driver.plan_on_driver, job))
        for job in jobs
        if not driver.is_distributed(job)
    }
    spread = [job for job in jobs if driver.is_distributed(job)]
    if not spread:
        return plans
    contexts = {job.name: driver.context_of(job) for job in spread}
    with ThreadPoolExecutor(1, thread_name_prefix="spark-extract") as aside:
        extracted = aside.submit(_extract, session, spread, slots)
        try:
            balanced = _balance(spread, contexts, stages)
        except BaseException:
            extracted.cancel()
            raise
        mark = time.perf_counter()
        spark, frame = extracted.result()
    mark = stages.add("extract", mark)
    with ThreadPoolExecutor(1, thread_name_prefix="report-before") as aside:
        # The driver waits while the workers place; a thread counts the report's figures before the
        # plan meanwhile (they read the snapshot alone), off the serial finish below.
        before = {job.name: aside.submit(driver.balance_before, job, contexts[job.name]) for job in spread}
        rows = _placed(spark, frame, contexts, balanced)
    mark = stages.add("place", mark)
    placed, fallbacks, seconds = driver.placed_rows(_rows(rows, PLACED_ARROW.names))
    for job in spread:
        stages.charge(job.name, seconds.get(job.name, 0.0))
        finish = partial(
            driver.finish,
            job,
            contexts[job.name],
            balanced[job.name].bound,
            placed.get(job.name, {}),
            fallbacks.get(job.name, 0),
            before[job.name].result(),
        )
        plans[job.name] = stages.timed(job.name, finish)
    stages.add("assemble", mark)
    return plans


def _placed(
    spark: SparkSession,
    frame: DataFrame,
    contexts: Mapping[str, ClusterContext],
    balanced: Mapping[str, Balanced],
) -> pa.Table:
    """The placing pass over every bucket, the balance programs' decisions shipped to the workers
    once; the rows that came back."""
    decisions = {key: d for b in balanced.values() for key, d in b.decisions.items()}
    shared = spark.sparkContext.broadcast(decisions)
    try:
        return unpack(transforms.placements(frame, contexts, shared).toArrow())
    finally:
        shared.unpersist()


def _extract(
    session: Callable[[], SparkSession], jobs: Sequence[PlanJob], slots: int | None
) -> tuple[SparkSession, DataFrame]:
    """The session, once it is up, and the jobs' partitions cut into its buckets
    (:func:`ferry.pipeline.extract.bucket_frame_once_up`): run beside the balance programs, behind
    the driver (:func:`~ferry.pipeline.early_session.behind_the_driver`), so that reading the
    snapshots again and cutting them (most of a second for a million partitions, the driver's alone
    before the placing pass) waits on no one. A session that failed to start raises here, and so
    where the caller takes the result."""
    behind_the_driver()
    return extract.bucket_frame_once_up(session, jobs, slots)


def _rows(table: pa.Table, names: Sequence[str]) -> zip[tuple[Any, ...]]:
    """The columns ``names`` of a collected table as row tuples (typed by the schema, not by mypy)."""
    return zip(*(table.column(n).to_pylist() for n in names), strict=True)


def _balance(
    jobs: Sequence[PlanJob], contexts: Mapping[str, ClusterContext], stages: Stages
) -> dict[str, Balanced]:
    """Each cluster's demands, then its balance program, on the driver, one cluster after the other
    (a cluster's demands are let go once its program is solved)."""
    out = {}
    for job in jobs:
        context = contexts[job.name]
        mark = time.perf_counter()
        topics, demands = stages.timed(job.name, partial(driver.demands, job, context))
        mark = stages.add("prepare", mark)
        out[job.name] = stages.timed(job.name, partial(solve, job.name, context.layout, topics, demands))
        del demands
        stages.add("balance", mark)
    return out
