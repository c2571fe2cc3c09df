"""The balance program's decisions as Arrow: a table per bucket, travelling with its partitions.

A decision (:data:`Decision`) is a topic's quota per broker position and the
replicas each of its partitions keeps. They went to the workers as one Spark broadcast of every
topic's: pickled on the driver, then unpickled whole by each Python worker before its first task
(a quota tuple per topic: on 100,000 topics of 200 brokers some 50 MB, over a second and a half to
load, and no task of that worker could start before). Cut into the buckets as their partitions are
(:func:`ferry.pipeline.buckets.cut`), each task reads only its own topics', as Arrow columns.

Columns: the cluster and topic, the quota, and the keeps as three lists: the partitions (their
index in the topic, as :class:`~ferry.plan.balance.outcome.Balance` numbers them), how many
replicas each keeps, and those brokers one after the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import accumulate, chain

import numpy as np
import pyarrow as pa

from ferry.pipeline.buckets import CLUSTER

Decision = tuple[tuple[int, ...], dict[int, frozenset[int]]]
"""What the balance program decided for one topic: its quota per broker and the kept replicas."""

DECISIONS_ARROW = pa.schema(
    [
        pa.field(CLUSTER, pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("quota", pa.list_(pa.int32()), nullable=False),
        pa.field("kept_partitions", pa.list_(pa.int32()), nullable=False),
        pa.field("kept_counts", pa.list_(pa.int32()), nullable=False),
        pa.field("kept_brokers", pa.list_(pa.int32()), nullable=False),
    ]
)


def decision_table(decisions: Mapping[tuple[str, str], Decision]) -> pa.Table:
    """``decisions`` as one table, a row per topic, built column by column (a million partitions'
    keeps, a Python object each, would take seconds row by row)."""
    keys = list(decisions)
    quotas = [q for q, _ in decisions.values()]
    keeps = [k for _, k in decisions.values()]
    kept = [v for k in keeps for v in k.values()]
    return pa.table(
        [
            pa.array([c for c, _ in keys], pa.string()),
            pa.array([t for _, t in keys], pa.string()),
            _lists((len(q) for q in quotas), chain.from_iterable(quotas), len(keys)),
            _lists((len(k) for k in keeps), chain.from_iterable(keeps), len(keys)),
            _lists((len(k) for k in keeps), (len(v) for v in kept), len(keys)),
            _lists((sum(map(len, k.values())) for k in keeps), chain.from_iterable(kept), len(keys)),
        ],
        schema=DECISIONS_ARROW,
    )


def _lists(lengths: Iterable[int], values: Iterable[int], rows: int) -> pa.Array:
    """A list array of ``rows`` lists: their ``lengths``, then all their ``values`` in order."""
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(np.fromiter(lengths, dtype=np.int64, count=rows), out=offsets[1:])
    flat = np.fromiter(values, dtype=np.int32, count=int(offsets[-1]))
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat))


def decisions_of(table: pa.Table) -> dict[tuple[str, str], Decision]:
    """The decisions of :func:`decision_table` (of one bucket's topics), by cluster and topic."""
    table = table.combine_chunks()
    out: dict[tuple[str, str], Decision] = {}
    if table.num_rows == 0:
        return out
    clusters, topics = table.column(CLUSTER).to_pylist(), table.column("topic").to_pylist()
    quota, parts, counts, brokers = (
        _flat(table.column(name)) for name in ("quota", "kept_partitions", "kept_counts", "kept_brokers")
    )
    for row, key in enumerate(zip(clusters, topics, strict=True)):
        kept, bounds = brokers.row(row), [0, *accumulate(counts.row(row))]
        numbers = parts.row(row)
        out[key] = (
            tuple(quota.row(row)),
            {p: frozenset(kept[bounds[i] : bounds[i + 1]]) for i, p in enumerate(numbers)},
        )
    return out


class _Flat:
    """A list column as its offsets and values, read a row at a time as Python ints."""

    def __init__(self, offsets: np.ndarray, values: np.ndarray) -> None:
        self.offsets, self.values = offsets, values

    def row(self, i: int) -> list[int]:
        part: list[int] = self.values[self.offsets[i] : self.offsets[i + 1]].tolist()
        return part


def _flat(column: pa.ChunkedArray) -> _Flat:
    array = column.chunk(0) if column.num_chunks else pa.array([], column.type)
    offsets = array.offsets.to_numpy()
    return _Flat(offsets, array.values.to_numpy())


def empty_decisions() -> pa.Table:
    """A bucket's decisions when it has no topics."""
    return DECISIONS_ARROW.empty_table()
