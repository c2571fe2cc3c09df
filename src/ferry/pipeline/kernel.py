"""The planning kernel's per-topic phases over Arrow tables: what runs inside the Spark workers.

One call handles one bucket: a table of partition rows of many topics (of one or several clusters).
The functions are pure (Arrow in, Arrow out) and import no Spark, so they are tested directly; the
Spark side (:mod:`ferry.pipeline.transforms`) only wraps them in ``mapInArrow``.

The driver works out the topics' demands and solves the one global balance program
(:mod:`ferry.pipeline.driver`); the placing pass (:func:`place_bucket`) builds each topic's scratch
state (``start_topic``: deterministic, and cheaper than shipping it from the driver) and runs
``place_topic`` with the driver's decision, returning planned replicas.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ferry.model import Goal, PartitionState, TopicPartition
from ferry.plan.planner import (
    RackLayout,
    TopicDemand,
    balance_topics,
    lower_bound,
    pausing,
    place_topic,
    planned_replicas,
    start_topic,
)

PLACED_ARROW = pa.schema(
    [
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("replicas", pa.list_(pa.int32()), nullable=False),
        # Per topic, carried on the row of its first partition (0 on the others), so sums are exact.
        pa.field("fallbacks", pa.int32(), nullable=False),
        pa.field("seconds", pa.float64(), nullable=False),
    ]
)

Decision = tuple[tuple[int, ...], dict[int, frozenset[int]]]
"""What the balance program decided for one topic: its quota per broker and the kept replicas."""


@dataclass
class Balanced:
    """The balance program's outcome for one cluster: a decision per topic and the lower bound."""

    decisions: dict[tuple[str, str], Decision]
    bound: int


@dataclass(frozen=True)
class ClusterContext:
    """What a worker needs to plan the topics of one cluster: the goal and the target layout."""

    name: str
    goal: Goal
    racks: Mapping[int, str | None]
    targets: tuple[int, ...]
    _layout: list[RackLayout] = field(default_factory=list, compare=False, repr=False)

    @property
    def layout(self) -> RackLayout:
        # Built lazily and once per worker process: the context travels pickled, the layout does not.
        if not self._layout:
            self._layout.append(RackLayout.of(self.racks, self.targets))
        return self._layout[0]


def topics_of(
    table: pa.Table, contexts: Mapping[str, ClusterContext]
) -> Iterator[tuple[ClusterContext, list[PartitionState]]]:
    """The topics of a bucket, each with its partitions in partition order.

    A bucket holds in-scope topics only: the driver leaves the others out when it cuts the buckets
    (:func:`ferry.pipeline.buckets.partitions_table`). Its rows come from partitions the driver
    checked as it read the snapshot, so they are built without checking again
    (:meth:`~ferry.model.PartitionState.checked`), and without their ISR, which the bucket does not
    carry (:data:`~ferry.pipeline.buckets.PLACING`): converting it was a sizeable share of this.
    """
    ordered = table.sort_by([("cluster", "ascending"), ("topic", "ascending"), ("partition", "ascending")])
    numbers, replicas, leaders, sizes = (
        ordered.column(n).to_pylist() for n in ("partition", "replicas", "leader", "size_bytes")
    )
    start = 0
    # Each topic's rows are a run of the sorted table: its partitions are built from slices of the
    # columns, with no row tuple and no key call per partition.
    for cluster, topic, stop in _runs(ordered):
        parts = [
            PartitionState.checked(TopicPartition(topic, number), tuple(held), leader, None, size)
            for number, held, leader, size in zip(
                numbers[start:stop], replicas[start:stop], leaders[start:stop], sizes[start:stop], strict=True
            )
        ]
        start = stop
        yield contexts[cluster], parts


def _runs(ordered: pa.Table) -> Iterator[tuple[str, str, int]]:
    """Per run of rows of one (cluster, topic) of a sorted table: the cluster, the topic, and the row
    after its last."""
    if ordered.num_rows == 0:
        return
    # Codes over the whole column (one dictionary): a run ends where either code changes.
    cluster, topic = (
        pc.dictionary_encode(ordered.column(name).combine_chunks()).indices.to_numpy()
        for name in ("cluster", "topic")
    )
    changed = (np.diff(cluster) != 0) | (np.diff(topic) != 0)
    stops: list[int] = [*(np.flatnonzero(changed) + 1).tolist(), ordered.num_rows]
    starts = [0, *stops[:-1]]
    clusters = ordered.column("cluster").take(starts).to_pylist()
    topics = ordered.column("topic").take(starts).to_pylist()
    yield from zip(clusters, topics, stops, strict=True)


def solve(name: str, layout: RackLayout, topics: Sequence[str], demands: Sequence[TopicDemand]) -> Balanced:
    """One cluster's integer program over all its topics' demands, given in the planner's topic order."""
    outcome = balance_topics(layout, demands)
    decisions = {
        (name, topic): (tuple(quota), dict(keeps))
        for topic, quota, keeps in zip(topics, outcome.quotas, outcome.keeps, strict=True)
    }
    return Balanced(decisions, lower_bound(demands, outcome))


@pausing
def place_bucket(
    table: pa.Table,
    contexts: Mapping[str, ClusterContext],
    decisions: Mapping[tuple[str, str], Decision],
) -> pa.Table:
    """The placing pass: every topic placed as the balance program decided.

    One row per partition whose replicas change, and the first partition of every topic (it carries
    the topic's fallbacks and seconds, and tells the driver the topic came back): the driver knows
    the current replicas of the rest, and turning a million unchanged rows back into Python took
    seconds.
    """
    rows: dict[str, list[object]] = {name: [] for name in PLACED_ARROW.names}
    for ctx, parts in topics_of(table, contexts):
        start = time.perf_counter()
        topic = parts[0].tp.topic
        quota, keeps = decisions[(ctx.name, topic)]
        work = start_topic(parts, ctx.goal, ctx.layout)
        fallbacks = place_topic(work, ctx.layout, quota, keeps, ctx.goal.rack_mode)
        planned = planned_replicas(work)
        elapsed = time.perf_counter() - start
        for i, (state, replicas) in enumerate(planned):
            if i > 0 and replicas == state.replicas:
                continue
            rows["cluster"].append(ctx.name)
            rows["topic"].append(topic)
            rows["partition"].append(state.tp.partition)
            rows["replicas"].append(list(replicas))
            rows["fallbacks"].append(fallbacks if i == 0 else 0)
            rows["seconds"].append(elapsed if i == 0 else 0.0)
    return pa.table(rows, schema=PLACED_ARROW)
