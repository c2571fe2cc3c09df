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
from ferry.pipeline.buckets import partitions_table, split, to_blob
from ferry.pipeline.schemas import BUCKETS


def bucket_frame(spark: SparkSession, jobs: Sequence[PlanJob], buckets: int) -> DataFrame:
    """Every in-scope partition of ``jobs`` in ``buckets`` buckets, as :func:`frame_of` gives them."""
    return frame_of(spark, split(pa.concat_tables([partitions_table(job) for job in jobs]), buckets))


def frame_of(spark: SparkSession, parts: Sequence[pa.Table]) -> DataFrame:
    """One row per table of ``parts`` (a bucket's partitions, :data:`BUCKETS`), each in a partition
    of its own: the rows are sliced into as many partitions as there are rows (a frame made from an
    Arrow table would be cut into as many as the session has slots, small ones at least)."""
    rows = [(b, to_blob(t)) for b, t in enumerate(parts)]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, max(len(rows), 1)), schema=BUCKETS)
