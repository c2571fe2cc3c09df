"""A StructType for every DataFrame that crosses a function boundary of the pipeline.

Rows cross between the JVM and Python as Arrow IPC blobs (:mod:`ferry.pipeline.buckets` says
why), so each schema is a bucket number or a blob: what a blob holds is an Arrow schema
(:data:`ferry.pipeline.kernel.PLACED_ARROW`, the snapshot's partition columns).
"""

from __future__ import annotations

from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    StructField,
    StructType,
)

from ferry.pipeline.buckets import BLOBS, BUCKET

BUCKETS = StructType(
    [
        StructField(BUCKET, IntegerType(), nullable=False),
        StructField(BLOBS, BinaryType(), nullable=False),
    ]
)
"""A bucket of topics: its number and its partitions (the snapshot columns plus ``cluster``) as Arrow IPC."""

PLACED = StructType([StructField(BLOBS, BinaryType(), nullable=False)])
"""The placing pass's output: one row per bucket, its planned partitions
(:data:`ferry.pipeline.kernel.PLACED_ARROW`) as Arrow IPC, as the buckets come in (the JVM then
moves one binary value per bucket back, not a row per partition with its replica list)."""
