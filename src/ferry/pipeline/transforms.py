"""Transform: DataFrame -> DataFrame steps around the kernel's per-topic passes.

The driver cuts topics into buckets (:mod:`ferry.pipeline.buckets`) and each bucket is one call
that walks all its topics: one Arrow conversion per bucket, not per topic (one group per topic
measured 25x slower on this kind of machine; see shared/notes/spark.md). The bucket frame holds
one bucket per partition (:func:`ferry.pipeline.extract.frame_of`), so the pass maps over its
partitions (``mapInArrow``), a task per bucket, with no shuffle before it: a ``groupBy`` on the
bucket cost a stage of its own and a shuffle of every blob, and its hash partitioning had to be
steered for no two buckets to share a task.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark import Broadcast
from pyspark.sql import DataFrame, SparkSession

from ferry.pipeline.buckets import as_blob_row, blob_array, empty_bucket, unpack
from ferry.pipeline.extract import frame_of
from ferry.pipeline.kernel import ClusterContext, Decision, place_bucket
from ferry.pipeline.schemas import PLACED


def placements(
    frame: DataFrame,
    contexts: Mapping[str, ClusterContext],
    decisions: Broadcast[dict[tuple[str, str], Decision]],
) -> DataFrame:
    """The placing pass: a row per bucket, its planned partitions in a blob (see :data:`PLACED`)."""
    ctx = dict(contexts)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # PySpark's daemon runs a full collection after every task of a reused worker, over every
        # object the worker holds (its imports, the broadcast): most of a second per placing pass
        # on two workers. Those outlive the task; frozen, the collection skips them.
        gc.freeze()
        for batch in batches:
            # The decisions of every topic travel once per executor as a broadcast, not with each task.
            placed = place_bucket(unpack(pa.Table.from_batches([batch])), ctx, decisions.value)
            yield as_blob_row(placed)

    return frame.mapInArrow(run, PLACED)


def warm_workers(spark: SparkSession) -> None:
    """The placing pass once over empty buckets, one per task slot, run as the session starts.

    Spark keeps its Python workers for the next job, so this moves their start (a fork, then
    pyarrow's, numpy's, pandas' and the planner's imports: seconds on a busy machine) from the
    placing pass to the time the driver spends on the demands and the balance program; and it runs
    the pass's own path once, in the workers and in the JVM (the Arrow transfers each way), whose
    first run made each slot's first placing task the slowest of its stage."""
    slots = spark.sparkContext.defaultParallelism
    frame = frame_of(spark, [blob_array(empty_bucket())] * slots)
    nothing: Broadcast[dict[tuple[str, str], Decision]] = spark.sparkContext.broadcast({})
    try:
        placements(frame, {}, nothing).toArrow()
    finally:
        nothing.unpersist()
