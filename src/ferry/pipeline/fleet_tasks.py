"""A task per cluster of a fleet, run where the cluster's snapshot is read: on the Spark workers.

A fleet's snapshots together may not fit the driver's memory; each one fits a worker. The driver
hands out (name, path) pairs and gets back what the task makes of each: a few fields from
:func:`each`, or whole plan files from :func:`streamed`, a cluster at a time. Workers must see the
paths the driver gives them (one machine, or a file system they share).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from pyspark import StorageLevel
from pyspark.sql import SparkSession

T = TypeVar("T")
R = TypeVar("R")


def each(spark: SparkSession, items: Sequence[T], task: Callable[[T], R]) -> list[R]:
    """``task(item)`` for every item, a Spark task each; the results in the order of ``items``.

    For small results only: all of them come back to the driver at once.
    """
    if not items:
        return []
    return spark.sparkContext.parallelize(list(items), len(items)).map(task).collect()


def streamed(spark: SparkSession, items: Sequence[T], task: Callable[[T], R]) -> Iterator[R]:
    """``task(item)`` for every item, a Spark task each, handed to the driver one at a time in the
    order of ``items`` (start the longest first: tasks are scheduled in that order).

    Every task runs at once, over all the slots, and its result stays on its executor (in memory,
    else on its disk) until the driver takes it: the driver holds one result at a time, however
    many there are.
    """
    if not items:
        return
    results = spark.sparkContext.parallelize(list(items), len(items)).map(task)
    results.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        results.count()
        # One partition per item: each comes over as a job of its own that reads the stored block.
        yield from results.toLocalIterator()
    finally:
        results.unpersist()
