"""The two planning engines behind ``ferry plan``: Spark (the default) and local (one process).

Both run the same kernel and give byte-identical plans. ``local`` never imports pyspark, so it
answers in well under a second on small clusters; ``spark`` starts a local Spark session (or joins
``--spark-master``) and is the one that scales to large clusters and fleets.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ferry.model import Plan, PlanJob

if TYPE_CHECKING:
    from ferry.pipeline.early_session import SparkStart

ENGINES = ("spark", "local")


@dataclass(frozen=True)
class Planned:
    """A cluster's plan and the seconds spent on it (its driver phases plus its topics' time in
    the Spark workers, or the whole plan in this process)."""

    cluster: PlanJob
    plan: Plan
    seconds: float


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="spark",
        help="spark (default): plan on Apache Spark, local mode unless --spark-master or the "
        "usual Spark settings (SPARK_MASTER, spark-defaults.conf) say otherwise; local: plan in "
        "this process without Spark. Both give the same plan. --replace, --balance bytes and "
        "--drain-above plan the whole cluster in one pass, in this process on either engine",
    )
    parser.add_argument(
        "--spark-master",
        metavar="URL",
        help="Spark master for --engine spark, e.g. spark://host:7077 or local[4] (default: "
        "SPARK_MASTER, else spark.master of spark-defaults.conf, else local[2])",
    )


EARLY_FROM_BYTES = 4 << 20
"""Snapshots from this size on are read while the JVM starts
(:class:`~ferry.pipeline.early_session.SparkStart`): reading a smaller one takes a fraction of a
second, and a bad one then fails before any JVM starts."""


def worth_starting_early(path: Path | None) -> bool:
    """Whether the snapshot at ``path`` (a JSON file or a Parquet folder) takes long enough to read
    that Spark should start meanwhile."""
    if path is None or not path.exists():
        return False
    files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
    return sum(f.stat().st_size for f in files) >= EARLY_FROM_BYTES


def plan_clusters(
    clusters: Sequence[PlanJob],
    *,
    engine: str,
    master: str | None,
    fast_start: bool = True,
    debug: bool = False,
    started: SparkStart | None = None,
) -> tuple[list[Planned], dict[str, float]]:
    """Plan every cluster with ``engine``; returns the plans (in input order) and stage seconds.

    ``debug``: let the JVM print to this process's own output instead of a log file.
    ``started``: a session already starting (:class:`~ferry.pipeline.early_session.SparkStart`, which
    the caller closes); else one is started here and stopped before this returns.

    ``fast_start``: the fast-start JVM flags for a Spark session ferry starts (C1-only JIT, serial
    GC). They halve the start-up on a busy machine, and at every size measured they also won or
    tied: the driver JVM only moves a few blobs per bucket, and the C2 compiler threads took more
    CPU than they saved, on the same two cores the workers need (docs/benchmarks.md, "Planning
    pipeline at scale").
    """
    from ferry.plan.planner import per_topic_phases

    # A goal without per-topic phases (a replace, the byte balance, a drain) is one pass over the
    # whole cluster, in this process on either engine: a Spark session would only add its start-up
    # (a 4,000-partition replace took 11-18 s, 1.5 s here).
    if engine == "local" or not any(per_topic_phases(c.goal) for c in clusters):
        return _plan_locally(clusters), {}
    # Imported here: only the Spark engine may pay for importing pyspark.
    from ferry.pipeline.job import Stages, plan_jobs
    from ferry.pipeline.session import plan_session, spark_session

    stages = Stages()
    if started is not None:
        plans = plan_jobs(started.session, clusters, stages, started.slots)
    else:
        with spark_session(plan_session(master, debug=debug, fast_start=fast_start)) as spark:
            plans = plan_jobs(lambda: spark, clusters, stages)
    out = [Planned(c, plans[c.name], stages.clusters.get(c.name, 0.0)) for c in clusters]
    return out, stages.seconds


def _plan_locally(clusters: Sequence[PlanJob]) -> list[Planned]:
    from ferry.plan.planner import plan

    out = []
    for c in clusters:
        start = time.perf_counter()
        result = plan(c.snapshot, c.goal)
        out.append(Planned(c, result, time.perf_counter() - start))
    return out
