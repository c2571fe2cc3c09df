"""Extract: the partitions of one or many snapshots -> one DataFrame.

Each snapshot is loaded on the driver first (:mod:`ferry.formats.sources`), with the validation of
``--engine local``: the global phases (balance program, preferred leaders, report) need the whole
cluster there anyway, and bad input must fail with the same one-line errors before Spark starts
work. Spark then scans Parquet snapshots itself (in parallel, with an explicit schema); a JSON
snapshot is one JSON object no Spark reader can split, so its rows go over from the driver's Arrow
table.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ferry.formats.parquet import PARTITIONS_FILE, snapshot_tables
from ferry.pipeline.driver import ClusterJob
from ferry.pipeline.schemas import PARTITIONS, SNAPSHOT_PARTITIONS


def partitions_frame(spark: SparkSession, jobs: Sequence[ClusterJob]) -> DataFrame:
    """Every partition of ``jobs`` as one DataFrame in the :data:`PARTITIONS` schema."""
    frames = [_parquet_frame(spark, job) for job in jobs if job.parquet is not None]
    in_memory = [job for job in jobs if job.parquet is None]
    if in_memory:
        frames.append(_driver_frame(spark, in_memory))
    if not frames:
        return spark.createDataFrame([], PARTITIONS)
    return reduce(DataFrame.unionByName, frames)


def _parquet_frame(spark: SparkSession, job: ClusterJob) -> DataFrame:
    assert job.parquet is not None
    frame = spark.read.schema(SNAPSHOT_PARTITIONS).parquet(str(job.parquet / PARTITIONS_FILE))
    return frame.select(F.lit(job.name).alias("cluster"), *SNAPSHOT_PARTITIONS.fieldNames())


def _driver_frame(spark: SparkSession, jobs: Sequence[ClusterJob]) -> DataFrame:
    tables = []
    for job in jobs:
        _, table = snapshot_tables(job.snapshot)
        names = pa.array([job.name] * table.num_rows, pa.string())
        tables.append(table.add_column(0, "cluster", names))
    return spark.createDataFrame(pa.concat_tables(tables), schema=PARTITIONS)
