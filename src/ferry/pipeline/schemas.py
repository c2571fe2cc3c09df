"""A StructType for every DataFrame that crosses a function boundary of the pipeline.

They mirror the Arrow schemas of :mod:`ferry.pipeline.kernel` (what the workers return); a unit
test keeps each pair in step.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DoubleType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from ferry.pipeline.buckets import BLOBS, BUCKET

# Arrow lists (pyarrow) declare nullable elements.
_BROKER_IDS = ArrayType(IntegerType(), containsNull=True)

BUCKETS = StructType(
    [
        StructField(BUCKET, IntegerType(), nullable=False),
        StructField(BLOBS, BinaryType(), nullable=False),
    ]
)
"""A bucket of topics: its number and its partitions (the snapshot columns plus ``cluster``) as Arrow IPC."""

PLACED = StructType(
    [
        StructField("cluster", StringType(), nullable=False),
        StructField("topic", StringType(), nullable=False),
        StructField("partition", IntegerType(), nullable=False),
        StructField("replicas", _BROKER_IDS, nullable=False),
        StructField("fallbacks", IntegerType(), nullable=False),
        StructField("seconds", DoubleType(), nullable=False),
    ]
)
"""The placing pass's output: planned replicas of the partitions that change, and of every topic's
first partition."""
