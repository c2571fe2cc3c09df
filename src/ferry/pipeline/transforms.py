"""Transform: DataFrame -> DataFrame steps around the kernel's per-topic passes.

The driver cuts topics into buckets (:mod:`ferry.pipeline.buckets`) and each bucket is one
``applyInArrow`` call that walks all its topics: one Arrow conversion per bucket, not per topic
(one group per topic measured 25x slower on this kind of machine; see shared/notes/spark.md).

The shuffle behind ``groupBy`` hashes the bucket value into its N partitions, and bucket numbers
0..N-1 collide there: some partitions stayed empty and others got two buckets, so some tasks did
twice the work of others while the slots idled. Each bucket is therefore named by a key
chosen so that the shuffle sends it to a partition of its own (:func:`bucket_keys`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark import Broadcast
from pyspark.sql import DataFrame, SparkSession

from ferry.pipeline.buckets import BUCKET, unpack
from ferry.pipeline.kernel import ClusterContext, Decision, place_bucket
from ferry.pipeline.schemas import PLACED


def bucket_keys(spark: SparkSession, buckets: int) -> list[int]:
    """Per bucket b, an int the shuffle into ``buckets`` partitions sends to partition b.

    Hash partitioning puts an int key k in partition ``pmod(Murmur3(k, seed 42), n)``. The driver
    JVM's own Murmur3 answers (a call each, no query, no job: a query here cost seconds of warm-up
    on a cold JVM); the search ends after about n ln n keys.
    """
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    # An instance with the seed: py4j did not always find the static hashInt(int, int).
    murmur3 = jvm.org.apache.spark.unsafe.hash.Murmur3_x86_32(42)
    keys: dict[int, int] = {}
    for key in range(64 * buckets):
        keys.setdefault(int(murmur3.hashInt(key)) % buckets, key)
        if len(keys) == buckets:
            return [keys[b] for b in range(buckets)]
    raise RuntimeError(f"no key reaches shuffle partition {min(set(range(buckets)) - set(keys))}")


def placements(
    frame: DataFrame,
    contexts: Mapping[str, ClusterContext],
    decisions: Broadcast[dict[tuple[str, str], Decision]],
) -> DataFrame:
    """The placing pass: one row per in-scope partition with its planned replicas (see :data:`PLACED`)."""
    ctx = dict(contexts)

    def run(table: pa.Table) -> pa.Table:
        # The decisions of every topic travel once per executor as a broadcast, not with each task.
        return place_bucket(unpack(table), ctx, decisions.value)

    return frame.groupBy(BUCKET).applyInArrow(run, PLACED)


def warm_workers(spark: SparkSession) -> None:
    """A Python worker on every task slot, each with the kernel imported: a job of one task per
    slot that does nothing else. Spark keeps its workers for the next job (they are reused), so
    run as the session starts, it moves their start (a fork, then pyarrow's, numpy's and the
    planner's imports: seconds on a busy machine) from the placing pass to the time the driver
    spends on the demands and the balance program."""
    slots = spark.sparkContext.defaultParallelism

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import ferry.pipeline.kernel  # noqa: F401  (the import is the work)

        yield from batches

    spark.range(slots, numPartitions=slots).mapInArrow(run, "id long").collect()
