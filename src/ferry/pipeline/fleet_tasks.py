"""A task per cluster of a fleet, run where the cluster's snapshot is read: on the Spark workers.

A fleet's snapshots together may not fit the driver's memory; each one fits a worker. The driver
hands out one item per cluster (its name and path) and gets back what the task makes of it, a
cluster at a time. Workers must see the paths the driver gives them (one machine, or a file system
they share).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Generic, TypeVar

from pyspark import RDD, StorageLevel
from pyspark.sql import SparkSession

T = TypeVar("T")
R = TypeVar("R")
V = TypeVar("V")


class Stored(Generic[R]):
    """The results of every task, kept on the executors (in memory, else on their disks) until the
    driver takes them."""

    def __init__(self, results: RDD[R]) -> None:
        self._results = results

    def peek(self, view: Callable[[R], V]) -> list[V]:
        """``view`` of every result, all brought to the driver at once: keep it small."""
        return self._results.map(view).collect()

    def __iter__(self) -> Iterator[R]:
        """Every result, in the order of the items, the driver holding one at a time."""
        # One partition per item: each comes over as a job of its own that reads the stored block.
        return self._results.toLocalIterator()


@contextmanager
def stored(spark: SparkSession, items: Sequence[T], task: Callable[[T], R]) -> Iterator[Stored[R]]:
    """``task(item)`` for every item, a Spark task each, all run over every slot before the block
    starts (list the longest first: tasks are scheduled in that order); freed at its end."""
    results = spark.sparkContext.parallelize(list(items), max(len(items), 1)).map(task)
    results.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        results.count()
        yield Stored(results)
    finally:
        results.unpersist()
