"""How the driver cuts a job's partitions into buckets of whole topics (no Spark)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from support.clusters import generated

from ferry.formats.sources import write_any
from ferry.model import Goal, PlanJob
from ferry.pipeline.buckets import assign, empty_bucket, from_blobs, partitions_table, split, to_blob


@given(st.lists(st.integers(min_value=1, max_value=1000), max_size=200), st.integers(1, 20))
def test_assign_fills_buckets_evenly_and_always_the_same_way(sizes: list[int], buckets: int) -> None:
    chosen = assign(sizes, buckets)
    assert len(chosen) == len(sizes) and all(0 <= b < buckets for b in chosen)
    loads = [0] * buckets
    for size, b in zip(sizes, chosen, strict=True):
        loads[b] += size
    # Greedy onto the lightest bucket: no bucket ends more than one item above the lightest.
    assert max(loads) - min(loads) <= max(sizes, default=0)
    assert assign(sizes, buckets) == chosen


def _rows(table: pa.Table) -> Counter[tuple[object, ...]]:
    names = ("cluster", "topic", "partition", "replicas", "leader", "size_bytes")
    return Counter(
        tuple(tuple(v) if isinstance(v, list) else v for v in row)
        for row in zip(*(table.column(n).to_pylist() for n in names), strict=True)
    )


def test_every_partition_lands_in_one_bucket_with_its_whole_topic(tmp_path: Path) -> None:
    snapshot = generated(brokers=9, racks=3, topics=23, partitions=7, rf=3, seed=4, skew=1.2)
    job = PlanJob("c", "c", snapshot, Goal())
    table = partitions_table(job)
    parts = [from_blobs([to_blob(t)]) for t in split(table, 5)]
    assert sum((_rows(t) for t in parts), Counter()) == _rows(table)
    assert table.num_rows == len(snapshot.partitions)
    homes = [set(t.column("topic").to_pylist()) for t in parts]
    assert sum(len(h) for h in homes) == 23, "a topic was split over buckets"
    sizes = [t.num_rows for t in parts]
    assert max(sizes) - min(sizes) <= 7
    # A Parquet snapshot is read from its file, and gives the same rows.
    write_any(snapshot, tmp_path / "snap")
    from_file = partitions_table(PlanJob("c", "c", snapshot, Goal(), tmp_path / "snap"))
    assert _rows(from_file) == _rows(table)


def test_topics_out_of_scope_are_not_shipped() -> None:
    snapshot = generated(brokers=6, racks=2, topics=5, partitions=4, rf=2, seed=1)
    names = sorted({p.tp.topic for p in snapshot.partitions})
    goal = Goal(exclude_topics=frozenset(names[:2]))
    table = partitions_table(PlanJob("c", "c", snapshot, goal))
    assert sorted(set(table.column("topic").to_pylist())) == names[2:]
    assert set(table.column("cluster").to_pylist()) == {"c"}


def test_an_empty_bucket_has_the_columns_of_a_jobs_buckets(tmp_path: Path) -> None:
    snapshot = generated(brokers=6, racks=2, topics=3, partitions=4, rf=2, seed=1)
    write_any(snapshot, tmp_path / "snap")
    for job in (PlanJob("c", "c", snapshot, Goal()), PlanJob("c", "c", snapshot, Goal(), tmp_path / "snap")):
        assert empty_bucket().schema == partitions_table(job).schema
    assert empty_bucket().num_rows == 0
