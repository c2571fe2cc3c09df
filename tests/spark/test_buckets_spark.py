"""Bucket keys on real Spark: every bucket of topics gets a shuffle partition, and so a task, of its own."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ferry.pipeline.transforms import bucket_keys


@pytest.mark.parametrize("buckets", [2, 16, 37])
def test_each_bucket_is_the_only_one_in_its_shuffle_partition(spark: SparkSession, buckets: int) -> None:
    spark.conf.set("spark.sql.shuffle.partitions", str(buckets))
    keys = bucket_keys(spark, buckets)
    frame = spark.createDataFrame(
        pa.table({"bucket": pa.array([k for k in keys for _ in range(3)], pa.int32())})
    )

    def count(table: pa.Table) -> pa.Table:
        # Defined here, so that it travels to the workers by value (they cannot import tests).
        (bucket,) = set(table.column("bucket").to_pylist())
        return pa.table({"bucket": pa.array([bucket], pa.int32()), "rows": [table.num_rows]})

    rows = (
        frame.groupBy("bucket")
        .applyInArrow(count, "bucket int, rows long")
        # No shuffle after the grouped call: this is the partition, i.e. the task, that ran it.
        .withColumn("task", F.spark_partition_id())
        .collect()
    )
    assert sorted(r["bucket"] for r in rows) == sorted(keys)
    assert sorted(r["task"] for r in rows) == list(range(buckets)), "two buckets share a partition"
    assert all(r["rows"] == 3 for r in rows)
