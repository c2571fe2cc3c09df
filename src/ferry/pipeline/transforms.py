"""Transform: DataFrame -> DataFrame steps around the kernel's per-topic passes.

Topics are hashed into buckets (``pmod(hash(cluster, topic), N)``) and each bucket is one
``applyInArrow`` call that walks all its topics: one Arrow conversion per bucket, not per topic
(one group per topic measured 25x slower on this kind of machine; see shared/notes/spark.md).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
from pyspark import Broadcast
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ferry.pipeline.kernel import (
    ClusterContext,
    Decision,
    balance_cluster,
    place_bucket,
    prepare_bucket,
)
from ferry.pipeline.schemas import BALANCED, DEMANDS, PLACED

BUCKET = "bucket"


def with_bucket(frame: DataFrame, buckets: int) -> DataFrame:
    """Add the bucket column: all partitions of a topic land in the same bucket."""
    return frame.withColumn(BUCKET, F.pmod(F.hash("cluster", "topic"), F.lit(buckets)))


def demands(frame: DataFrame, contexts: Mapping[str, ClusterContext]) -> DataFrame:
    """Pass 1: one row per in-scope topic with its pickled demand (see :data:`DEMANDS`)."""
    ctx = dict(contexts)

    def run(table: pa.Table) -> pa.Table:
        return prepare_bucket(table, ctx)

    return frame.groupBy(BUCKET).applyInArrow(run, DEMANDS)


def balances(demands: DataFrame, contexts: Mapping[str, ClusterContext]) -> DataFrame:
    """Each cluster's balance program on a worker: one row per cluster (see :data:`BALANCED`)."""
    ctx = dict(contexts)

    def run(table: pa.Table) -> pa.Table:
        return balance_cluster(table, ctx)

    return demands.groupBy("cluster").applyInArrow(run, BALANCED)


def placements(
    frame: DataFrame,
    contexts: Mapping[str, ClusterContext],
    decisions: Broadcast[dict[tuple[str, str], Decision]],
) -> DataFrame:
    """Pass 2: one row per in-scope partition with its planned replicas (see :data:`PLACED`)."""
    ctx = dict(contexts)

    def run(table: pa.Table) -> pa.Table:
        # The decisions of every topic travel once per executor as a broadcast, not with each task.
        return place_bucket(table, ctx, decisions.value)

    return frame.groupBy(BUCKET).applyInArrow(run, PLACED)
