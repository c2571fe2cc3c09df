"""Extract: the partitions of one or many snapshots -> one DataFrame row per bucket of topics.

Each snapshot is loaded on the driver first (:mod:`ferry.formats.sources`), with the validation of
``--engine local``: the global phases (balance program, preferred leaders, report) need the whole
cluster there anyway, and bad input must fail with the same one-line errors before Spark starts
work. The driver then cuts the partitions into buckets of whole topics and ships each as one Arrow
IPC blob (:mod:`ferry.pipeline.buckets` says why).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from ferry.model import PlanJob
from ferry.pipeline.buckets import BLOBS, BUCKET, partitions_table, split, to_blob
from ferry.pipeline.schemas import BUCKETS


def bucket_frame(spark: SparkSession, jobs: Sequence[PlanJob], keys: Sequence[int]) -> DataFrame:
    """Every in-scope partition of ``jobs``, one row per bucket (:data:`BUCKETS`), bucket b named
    ``keys[b]``."""
    parts = split(pa.concat_tables([partitions_table(job) for job in jobs]), len(keys))
    rows = pa.table(
        {
            BUCKET: pa.chunked_array([pa.array([k], pa.int32()) for k in keys]),
            # A chunk per bucket: one Arrow binary array holds at most 2 GiB, a whole fleet may not.
            BLOBS: pa.chunked_array([pa.array([to_blob(t)], pa.binary()) for t in parts]),
        }
    )
    return spark.createDataFrame(rows, schema=BUCKETS)
