"""The bucket frame on real Spark: every bucket of topics is a partition, and so a task, of its own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from support.clusters import generated

from ferry.formats.sources import write_any
from ferry.model import Goal, PlanJob
from ferry.pipeline.buckets import blobs, from_blobs, partitions_table
from ferry.pipeline.extract import LOCAL_RELATION, bucket_count, bucket_frame_once_up, frame_of


@pytest.mark.parametrize("buckets", [2, 16, 37])
def test_each_bucket_is_the_only_one_in_its_partition(spark: SparkSession, buckets: int) -> None:
    snapshot = generated(brokers=6, racks=3, topics=60, partitions=3, rf=2, seed=2)
    threshold = spark.conf.get(LOCAL_RELATION)
    frame = frame_of(spark, blobs(partitions_table(PlanJob("c", "c", snapshot, Goal())), buckets))
    assert spark.conf.get(LOCAL_RELATION) == threshold, "the session's setting was not given back"
    assert frame.rdd.getNumPartitions() == buckets
    rows = frame.withColumn("task", F.spark_partition_id()).collect()
    assert sorted(r["task"] for r in rows) == list(range(buckets)), "two buckets share a partition"
    assert sorted(r["bucket"] for r in rows) == list(range(buckets))
    shipped = from_blobs([r["partitions"] for r in rows])
    assert shipped.num_rows == len(snapshot.partitions)


def test_a_mapped_call_sees_one_bucket_per_task(spark: SparkSession) -> None:
    snapshot = generated(brokers=6, racks=3, topics=40, partitions=2, rf=2, seed=3)
    frame = frame_of(spark, blobs(partitions_table(PlanJob("c", "c", snapshot, Goal())), 8))

    def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Defined here, so that it travels to the workers by value (they cannot import tests).
        rows = sum(batch.num_rows for batch in batches)
        yield pa.RecordBatch.from_pydict({"rows": [rows]})

    counts = [r["rows"] for r in frame.mapInArrow(count, "rows long").collect()]
    assert counts == [1] * 8


@pytest.mark.parametrize("slots", [2, 3, None])
def test_the_partitions_are_cut_before_the_session_is_up_into_the_count_it_wants(
    spark: SparkSession, tmp_path: Path, slots: int | None
) -> None:
    # Cut for the session's two slots, for three (a master that promised what it did not have), or
    # once it is up: always the count of buckets the session wants, every partition in one of them.
    snapshot = generated(brokers=6, racks=3, topics=50, partitions=3, rf=2, seed=4)
    parquet = tmp_path / "snapshot"
    write_any(snapshot, parquet)

    def session() -> SparkSession:
        # Read before the session is up: the snapshot is gone by the time it is.
        shutil.rmtree(parquet)
        return spark

    _, frame = bucket_frame_once_up(session, [PlanJob("c", "c", snapshot, Goal(), parquet)], slots)
    assert frame.rdd.getNumPartitions() == bucket_count(spark.sparkContext.defaultParallelism) == 8
    shipped = from_blobs([r["partitions"] for r in frame.collect()])
    assert shipped.num_rows == len(snapshot.partitions)
    assert sorted(shipped.column("topic").to_pylist()) == sorted(p.tp.topic for p in snapshot.partitions)
