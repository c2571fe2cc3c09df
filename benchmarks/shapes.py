"""Cluster shapes operators have, generated in bulk (numpy), for the scale benchmarks.

A shape is a cluster and a goal:

- ``grown``: the cluster grew from ``old`` to ``old + new`` brokers; topics created before the
  growth (every second one) sit on the old brokers only, the rest on all of them, each placed
  evenly and rack-clean; the goal is the default rebalance onto every broker (per-topic balance
  then forces most of the moves);
- ``skewed``: every replica drawn with a weight falling along the broker list (the first broker
  is ~10x as likely as the last), racks ignored; the goal is the default rebalance;
- ``remove``: balanced and rack-clean on ``old`` brokers; the goal removes the last ``new`` of
  them (as many from each rack);
- ``add``: balanced and rack-clean on ``old`` brokers, ``new`` empty ones join.

Partitions per topic are drawn per topic from ``spread`` (mixed counts within one cluster), so
topic counts from 1,000 to 100,000 reach the same total with different spreads. Broker ids
interleave racks (id % racks), so consecutive ids sit in different racks; a shape with
``rack_sizes`` gives its old brokers racks of those sizes instead, interleaved as evenly as the sizes
allow (smooth weighted round robin), so a few runs of consecutive ids share a rack and some
partitions start with two replicas in one rack, as on clusters whose racks grew unevenly; its new
brokers are spread over the racks one each in turn. Partition sizes are uniform from 1 MB to 10 GB,
or with ``sizes="lognormal"`` drawn from a log-normal (median 100 MB, most between 2 MB and 5 GB,
a long tail to 5 TB), as real topics' sizes are. The same shape and seed give the same cluster on
every machine.

The cluster comes out as numpy columns (``Columns``) and is written as a ``ClusterSnapshot``, a
snapshot JSON file or a Parquet snapshot directory, the three inputs ``ferry plan`` reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

RF = 3
ODD = (1, 2, 3, 5, 8, 12, 20, 50)
"""Mean 12.6 partitions per topic: ~80,000 topics make 1M partitions."""
WIDE = (1, 3, 10, 30, 100, 300, 1000)
"""Mean ~206 partitions per topic, 1 to 1,000: ~5,000 topics make 1M partitions."""


@dataclass(frozen=True)
class Shape:
    name: str
    start: str
    """grown, skewed, remove or add (see the module docstring)."""
    old: int
    new: int
    racks: int
    topics: int
    spread: tuple[int, ...]
    rack_sizes: tuple[int, ...] = ()
    """Old brokers per rack (``racks`` of them, summing to ``old``); empty: as many in each."""
    sizes: str = "uniform"
    """uniform or lognormal (see the module docstring)."""
    rfs: tuple[int, ...] = ()
    """Replication factors drawn per topic from these (repeat one to weight it); empty: RF 3 for every
    topic."""

    @property
    def brokers(self) -> int:
        return self.old + (self.new if self.start in ("grown", "add") else 0)

    def scaled(self, factor: float, prefix: str) -> Shape:
        """The same shape with ``factor`` times the topics, named ``prefix``, the shape and its topics."""
        topics = round(self.topics * factor)
        name = f"{prefix} {self.name}, {topics:,} topics"
        return replace(self, name=name, topics=topics)


@dataclass(frozen=True)
class Columns:
    """One generated cluster, a row per partition."""

    topic: np.ndarray
    """Topic index per partition (topic names are ``topic-NNNNNN``)."""
    partition: np.ndarray
    replicas: np.ndarray
    """(partitions, widest RF) broker ids, a row's unused places -1 at its end."""
    size: np.ndarray
    brokers: int
    racks: int
    removed: tuple[int, ...]
    rack_of: tuple[int, ...] = ()
    """Rack index per broker id; empty: id % racks."""

    def __len__(self) -> int:
        return len(self.topic)

    def replica_lists(self) -> list[list[int]]:
        """Each partition's replicas, its unused places left out."""
        rows = self.replicas.tolist()
        if not np.any(self.replicas < 0):
            return rows
        return [[b for b in row if b >= 0] for row in rows]

    def names(self) -> list[str]:
        names = [f"topic-{t:06d}" for t in range(int(self.topic.max()) + 1)]
        return [names[t] for t in self.topic]


def generate(shape: Shape, seed: int = 7) -> Columns:
    key = f"{shape.start}/{shape.old}/{shape.new}/{shape.racks}/{shape.topics}/{shape.spread}"
    rng = np.random.default_rng([seed, *key.encode()])
    counts = rng.choice(np.asarray(shape.spread), shape.topics)
    topic = np.repeat(np.arange(shape.topics, dtype=np.int32), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    partition = (np.arange(len(topic)) - first).astype(np.int32)
    # Drawn only for shapes that ask, so the RF 3 shapes draw the clusters they always drew.
    rf = np.repeat(rng.choice(np.asarray(shape.rfs), shape.topics), counts) if shape.rfs else None
    width = max(shape.rfs) if shape.rfs else RF
    if shape.start == "skewed":
        replicas = _weighted(rng, len(topic), shape.brokers, width, ordered=rf is not None)
    else:
        pool = np.where((topic % 2 == 0) | (shape.start != "grown"), shape.old, shape.brokers)
        start = rng.integers(0, pool)
        replicas = ((start[:, None] + np.arange(width)[None, :]) % pool[:, None]).astype(np.int32)
    if rf is not None:
        replicas[np.arange(width)[None, :] >= rf[:, None]] = -1
    if shape.sizes == "lognormal":
        drawn = np.exp(rng.normal(np.log(1e8), 2.0, len(topic)))
        size = np.clip(drawn, 1e3, 5e12).astype(np.int64)
    else:
        size = rng.integers(10**6, 10**10, len(topic), dtype=np.int64)
    removed = removed_brokers(shape)
    rack_of = _rack_order(shape) if shape.rack_sizes else ()
    return Columns(topic, partition, replicas, size, shape.brokers, shape.racks, removed, rack_of)


def _rack_order(shape: Shape) -> tuple[int, ...]:
    """Per broker id, its rack: the old brokers by smooth weighted round robin over ``rack_sizes``
    (each rack in proportion, spread as evenly as the sizes allow), the new ones a rack each in turn."""
    if len(shape.rack_sizes) != shape.racks or sum(shape.rack_sizes) != shape.old:
        raise ValueError(f"{shape.name}: rack_sizes must be {shape.racks} racks summing to {shape.old}")
    credit = [0] * shape.racks
    out = []
    for _ in range(shape.old):
        for k, size in enumerate(shape.rack_sizes):
            credit[k] += size
        k = max(range(shape.racks), key=lambda r: (credit[r], -r))
        credit[k] -= shape.old
        out.append(k)
    return (*out, *(i % shape.racks for i in range(shape.brokers - shape.old)))


def _weighted(rng: np.random.Generator, rows: int, brokers: int, width: int, ordered: bool) -> np.ndarray:
    """``width`` distinct brokers per row, broker i weighted 1 / (1 + 0.05 i) (Gumbel top-k);
    ``ordered``: each row heaviest key first, so any prefix of it is a weighted draw of its own."""
    logw = -np.log1p(0.05 * np.arange(brokers))
    out = np.empty((rows, width), dtype=np.int32)
    for lo in range(0, rows, 50_000):
        keys = logw + rng.gumbel(size=(min(50_000, rows - lo), brokers))
        top = np.argpartition(-keys, width, axis=1)[:, :width]
        if ordered:  # argpartition leaves the top in no order
            top = np.take_along_axis(top, np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1), axis=1)
        out[lo : lo + len(keys)] = top
    return out


def removed_brokers(shape: Shape) -> tuple[int, ...]:
    """The brokers a removal takes away (none for the other starts): the last ``new`` old brokers,
    which with ids interleaving racks is as many per rack."""
    return tuple(range(shape.old - shape.new, shape.old)) if shape.start == "remove" else ()


def excess(moves: int, bound: int) -> str:
    """`` (+N)`` where ``moves`` are ``N`` above ``bound``, else nothing: the benchmarks' tables give
    moves per move of the bound to four places, which read 1.0 for a few moves above a bound of a
    million."""
    return f" (+{moves - bound:,})" if bound and moves > bound else ""


def snapshot_and_goal(cols: Columns) -> tuple[object, object]:
    """A ``ClusterSnapshot`` and the shape's ``Goal``."""
    from ferry.model import Broker, ClusterSnapshot, Goal, PartitionState, TopicPartition

    brokers = [Broker(i, _rack(cols, i)) for i in range(cols.brokers)]
    rows = cols.replica_lists()
    states = [
        PartitionState(TopicPartition(name, p), tuple(r), r[0], tuple(r), s)
        for name, p, r, s in zip(cols.names(), cols.partition.tolist(), rows, cols.size.tolist(), strict=True)
    ]
    keep = frozenset(range(cols.brokers)) - set(cols.removed)
    return ClusterSnapshot.of(brokers, states), (Goal(brokers=keep) if cols.removed else Goal())


def _rack(cols: Columns, broker: int) -> str | None:
    if not cols.racks:
        return None
    return f"r{cols.rack_of[broker] if cols.rack_of else broker % cols.racks}"


def write_json(cols: Columns, path: Path) -> None:
    """A snapshot JSON file, version 1, written a partition per line."""
    brokers = [{"id": i, "rack": _rack(cols, i)} for i in range(cols.brokers)]
    with path.open("w") as out:
        out.write('{"version": 1, "brokers": ' + json.dumps(brokers) + ',\n "partitions": [\n')
        columns = (cols.names(), cols.partition.tolist(), cols.replica_lists(), cols.size.tolist())
        for i, (topic, p, r, size) in enumerate(zip(*columns, strict=True)):
            row = {"topic": topic, "partition": p, "replicas": r, "leader": r[0], "isr": r}
            out.write(("  " if i == 0 else ", ") + json.dumps({**row, "size_bytes": size}) + "\n")
        out.write("]}\n")


def write_parquet(cols: Columns, folder: Path) -> None:
    """A Parquet snapshot directory, as ``ferry snapshot convert`` writes it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ferry.formats import parquet

    ids = list(range(cols.brokers))
    brokers = filled({"id": ids, "rack": [_rack(cols, i) for i in ids]}, parquet.BROKERS_SCHEMA)
    held = cols.replicas >= 0
    offsets = pa.array(np.concatenate([[0], np.cumsum(held.sum(axis=1))]).astype(np.int32))
    lists = pa.ListArray.from_arrays(offsets, pa.array(cols.replicas[held]))
    table = filled(
        {
            "topic": pa.array(cols.names(), pa.string()),
            "partition": pa.array(cols.partition),
            "replicas": lists,
            "leader": pa.array(cols.replicas[:, 0]),
            "isr": lists,
            "size_bytes": pa.array(cols.size),
        },
        parquet.PARTITIONS_SCHEMA,
    )
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(brokers, folder / parquet.BROKERS_FILE, row_group_size=parquet.ROW_GROUP)
    pq.write_table(table, folder / parquet.PARTITIONS_FILE, row_group_size=parquet.ROW_GROUP)


def filled(columns: dict[str, object], schema: Any) -> Any:
    """An Arrow table of ``schema`` from ``columns``; every field not given is null (unknown,
    unmeasured: ``replica_sizes`` then counts ``size_bytes``)."""
    import pyarrow as pa

    rows = len(next(iter(columns.values())))  # type: ignore[arg-type]
    every = {f.name: columns.get(f.name, pa.nulls(rows, f.type)) for f in schema}
    return pa.table(every, schema=schema)


SHAPES = [
    # The shape a new user tried: 1M partitions in ~80,000 topics of mixed counts, a cluster
    # grown from 180 to 200 brokers in 10 racks, half its topics on the old brokers.
    Shape("grown 180->200", "grown", 180, 20, 10, 80_000, ODD),
    Shape("grown 190->200, 1-1000 per topic", "grown", 190, 10, 10, 4_900, WIDE),
    Shape("grown 170->200", "grown", 170, 30, 10, 100_000, (1, 2, 5, 10, 20, 22)),
    Shape("skewed rebalance, 200 brokers", "skewed", 200, 0, 10, 80_000, ODD),
    Shape("remove 20 of 200", "remove", 200, 20, 10, 80_000, ODD),
    Shape("add 10 to 190, 1000 per topic", "add", 190, 10, 10, 1_000, (1000,)),
    # Racks of 30 down to 6 brokers, sizes with a long tail: the shapes the ones above do not draw.
    Shape(
        "grown 180->200, racks of 30 to 6, log-normal sizes",
        "grown",
        180,
        20,
        10,
        80_000,
        ODD,
        rack_sizes=(30, 30, 24, 24, 18, 18, 12, 12, 6, 6),
        sizes="lognormal",
    ),
    Shape("remove 20 of 200, log-normal sizes", "remove", 200, 20, 10, 80_000, ODD, sizes="lognormal"),
    # Six racks of 22 brokers: topics of 50 partitions then hold a base of one replica per broker,
    # which the ten racks of 20 above never give; skewed, and grown by two brokers a rack.
    Shape("skewed rebalance, 6 racks of 22", "skewed", 132, 0, 6, 80_000, ODD),
    Shape("grown 120->132, 6 racks", "grown", 120, 12, 6, 80_000, ODD),
    # Three racks at RF 3: the strict rule asks one replica in each rack of every partition, so a
    # skewed start's partitions with two replicas in one rack owe a replica to another rack.
    Shape("skewed rebalance, 3 racks of 20", "skewed", 60, 0, 3, 80_000, ODD),
    Shape("grown 96->100, 4 racks", "grown", 96, 4, 4, 80_000, ODD),
    # The same start over three racks of 66: every broker is idle for most topics' extras in its
    # rack (a topic's dozen or so replicas per rack over 66 brokers), where racks of 20 leave few idle.
    Shape("skewed rebalance, three racks of 66", "skewed", 198, 0, 3, 80_000, ODD),
    # Replication factors mixed within one cluster, as on clusters whose topics were made by many
    # teams (scratch topics at RF 1, a few at RF 4), and clusters with no racks at all.
    Shape("skewed rebalance, RF 1 to 4", "skewed", 200, 0, 10, 80_000, ODD, rfs=(1, 2, 3, 3, 4)),
    Shape("grown 180->200, no racks, RF 2 and 3", "grown", 180, 20, 0, 80_000, ODD, rfs=(2, 3)),
    Shape("remove 20 of 200, no racks, RF 2 to 4", "remove", 200, 20, 0, 80_000, ODD, rfs=(2, 3, 3, 4)),
    # Three racks at RF 2 and 3: an RF 3 topic holds one replica in each rack of every partition,
    # an RF 2 topic at most one, so the two kinds of topic trade extras under different bounds.
    Shape("skewed rebalance, three racks of 20, RF 2 and 3", "skewed", 60, 0, 3, 80_000, ODD, rfs=(2, 3)),
    # A third of the topics at RF 1, on ten racks and on three: the single-replica topics are
    # pooled in the balance program like the others first.
    Shape("grown 180->200, RF 1 to 3", "grown", 180, 20, 10, 80_000, ODD, rfs=(1, 2, 3)),
    Shape("skewed rebalance, three racks of 20, RF 1 to 3", "skewed", 60, 0, 3, 80_000, ODD, rfs=(1, 2, 3)),
    # Fewer racks than replicas: at RF 3 over two racks every partition holds two replicas in one
    # rack and one in the other, whichever rack that is; a small cluster losing a broker a rack.
    Shape("skewed rebalance, 2 racks of 20", "skewed", 40, 0, 2, 80_000, ODD),
    Shape("remove 2 of 10, 2 racks", "remove", 10, 2, 2, 80_000, ODD),
    # Racks far apart in size with RF up to the rack count: an RF 4 topic holds a replica of every
    # partition in each rack, so the smallest racks' brokers carry far more than the others.
    Shape(
        "grown 40->48, racks of 20/10/5/5, RF 1 to 4",
        "grown",
        40,
        8,
        4,
        80_000,
        ODD,
        rack_sizes=(20, 10, 5, 5),
        rfs=(1, 2, 3, 4),
    ),
    # RF 1 to 5 over four racks: RF 5 is over the rack count, RF 1 to 4 within it.
    Shape("skewed rebalance, 4 racks of 15, RF 1 to 5", "skewed", 60, 0, 4, 80_000, ODD, rfs=(1, 2, 3, 4, 5)),
]
"""1M partitions each (within a few percent; RF 3 but the eight with mixed factors; 10 racks but the
last fifteen: 6, 6, 3, 4, 3, 10, none twice, 3, 10, 3, 2, 2, 4 and 4);
``Shape.scaled(0.1, "100k")`` gives the 100k ones."""
