"""Extract: the partitions of one or many snapshots -> one DataFrame row per bucket of topics.

Each snapshot is loaded on the driver first (:mod:`ferry.formats.sources`), with the validation of
``--engine local``: the global phases (balance program, preferred leaders, report) need the whole
cluster there anyway, and bad input must fail with the same one-line errors before Spark starts
work. The driver then cuts the partitions into buckets of whole topics and ships each as one Arrow
IPC blob (:mod:`ferry.pipeline.buckets` says why).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from ferry.formats.parquet import release_arrow_memory
from ferry.model import PlanJob
from ferry.pipeline.buckets import BLOBS, BUCKET, blobs, partitions_table
from ferry.pipeline.schemas import BUCKETS

LOCAL_RELATION = "spark.sql.execution.arrow.localRelationThreshold"
"""Spark's setting: Arrow batches smaller than this (bytes) stay in the driver's plan (:func:`frame_of`)."""


def bucket_frame_once_up(
    session: Callable[[], SparkSession], jobs: Sequence[PlanJob], slots: int | None
) -> tuple[SparkSession, DataFrame]:
    """The session, once it is up, and every in-scope partition of ``jobs`` in the count of buckets
    it wants, as :func:`frame_of` gives them.

    The partitions are read and cut before the session is asked for, into the count for ``slots``
    task slots (what its master promises, where that is known beforehand:
    :func:`ferry.pipeline.session.expected_slots`), so that the cut (most of a second for a million
    partitions) waits for no one; a session that came up with another count has them cut again."""
    table = pa.concat_tables([partitions_table(job) for job in jobs])
    parts = blobs(table, bucket_count(slots)) if slots else []
    spark = session()
    buckets = bucket_count(spark.sparkContext.defaultParallelism)
    if len(parts) != buckets:
        parts = blobs(table, buckets)
    del table
    frame = frame_of(spark, parts)
    del parts
    release_arrow_memory()  # the blobs are the JVM's now
    return spark, frame


def bucket_count(slots: int) -> int:
    """Enough buckets that every task slot gets several and a slow bucket does not leave one idle; no
    more: each task pays Spark's own cost and its first Arrow read, and on local[2] eight buckets
    placed the 1M removal in less time than sixteen (docs/benchmarks.md, "Eight buckets on two
    cores")."""
    return max(8, 4 * slots)


def frame_of(spark: SparkSession, parts: Sequence[pa.Array]) -> DataFrame:
    """One row per blob of ``parts`` (a bucket's partitions: :func:`~ferry.pipeline.buckets.blob_array`),
    each in a partition of its own.

    Spark makes a partition of each Arrow record batch it is given, and each row here is one (a
    chunk of each column), except where the batches are smaller than its local relation threshold:
    then it keeps them in the driver's plan and cuts them into as many partitions as the session
    has slots. The threshold is set to 0 while the frame is made. (Rows given as Python objects
    instead would each pass through a Python worker once more, for Spark to check them.)"""
    rows = pa.table(
        {
            BUCKET: pa.chunked_array([pa.array([b], pa.int32()) for b in range(len(parts))]),
            # A chunk per bucket: one Arrow binary array holds at most 2 GiB, a whole fleet may not.
            BLOBS: pa.chunked_array(parts, pa.binary()),
        }
    )
    before = spark.conf.get(LOCAL_RELATION)
    spark.conf.set(LOCAL_RELATION, "0")
    try:
        return spark.createDataFrame(rows, schema=BUCKETS)
    finally:
        if before is None:
            spark.conf.unset(LOCAL_RELATION)
        else:
            spark.conf.set(LOCAL_RELATION, before)
