"""Buckets of topics: how the driver splits a job's partitions into the units the workers plan.

Pure (pyarrow, no Spark), so it is tested without a session. The driver holds every snapshot anyway
(the global phases need it), so it cuts the partitions into buckets itself and ships each bucket as
one Arrow IPC blob: the JVM then moves a few binary values instead of converting every partition row
(with its replica lists) to Spark rows and back to Arrow, which cost it as much CPU as the planning
kernel on the 1M case (``benchmarks/pipeline_scale.py --tasks``: JVM against workers CPU s), and it
did that on the same two cores. It also means executors never need to see the snapshot files. The
placed partitions come back the same way, a blob per bucket (:func:`as_blob_row`).

Topics go to buckets whole, biggest first onto the lightest bucket (LPT), so buckets carry nearly
equal numbers of partitions and no task idles a slot while another finishes a double share.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ferry.formats.parquet import PARTITIONS_SCHEMA, read_partitions_table, snapshot_tables
from ferry.model import PlanJob

PLACING = ("topic", "partition", "replicas", "leader", "size_bytes")
"""The columns of a snapshot's partitions the placing pass reads (:func:`ferry.pipeline.kernel.topics_of`):
replica sizes serve the byte balance alone, which has no per-topic passes, the log dirs and
tiering the report, which the driver writes, and the ISR the driver's demands (which replicas may
stay when a factor goes down), whose decision the placing pass applies."""
CLUSTER = "cluster"
BUCKET = "bucket"
"""The column of the bucket rows that holds their numbers (:data:`ferry.pipeline.schemas.BUCKETS`)."""
BLOBS = "partitions"
"""The column of the bucket rows that holds their blobs (:data:`ferry.pipeline.schemas.BUCKETS`)."""


def partitions_table(job: PlanJob) -> pa.Table:
    """The in-scope partitions of one job, with a first column naming its cluster.

    A Parquet snapshot is read again with pyarrow (columnar, a fraction of a second for a million
    rows; the loader already validated it); an in-memory one is turned into a table.
    """
    if job.parquet is not None:
        table = read_partitions_table(job.parquet)
    else:
        _, table = snapshot_tables(job.snapshot)
    table = table.select(PLACING)
    topics = pc.unique(table.column("topic")).to_pylist()
    wanted = [t for t in topics if job.goal.in_scope(t)]
    if len(wanted) < len(topics):
        table = table.filter(pc.is_in(table.column("topic"), pa.array(wanted, pa.string())))
    return _of_cluster(table, job.name)


def empty_bucket() -> pa.Table:
    """A bucket without partitions, in the columns :func:`partitions_table` gives."""
    return _of_cluster(PARTITIONS_SCHEMA.empty_table().select(PLACING), "")


def _of_cluster(table: pa.Table, name: str) -> pa.Table:
    return table.add_column(0, CLUSTER, pa.array([name] * table.num_rows, pa.string()))


def assign(sizes: Sequence[int], buckets: int) -> list[int]:
    """A bucket per item: biggest first, each onto the bucket with the fewest so far (ties: the
    lower bucket, then the item given first), so equal inputs always give equal buckets."""
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
    loads = [(0, b) for b in range(buckets)]
    out = [0] * len(sizes)
    for i in order:
        load, b = heapq.heappop(loads)
        out[i] = b
        heapq.heappush(loads, (load + sizes[i], b))
    return out


def split(table: pa.Table, buckets: int) -> list[pa.Table]:
    """``table`` (partitions of one or more clusters) cut into ``buckets`` tables of whole topics."""
    return list(_cut(table, buckets))


def blobs(table: pa.Table, buckets: int) -> list[pa.Array]:
    """:func:`split`, each bucket as its blob (:func:`blob_array`), one bucket's table held at a time."""
    return [blob_array(part) for part in _cut(table, buckets)]


def _cut(table: pa.Table, buckets: int) -> Iterator[pa.Table]:
    keys = pc.binary_join_element_wise(table.column(CLUSTER), table.column("topic"), "\x00")
    counts = pc.value_counts(keys)
    names = counts.field("values")
    chosen = assign(counts.field("counts").to_pylist(), buckets)
    of_row = pc.take(pa.array(chosen, pa.int32()), pc.index_in(keys, value_set=names))
    return (table.filter(pc.equal(of_row, b)) for b in range(buckets))


def to_blob(table: pa.Table) -> bytes:
    """One bucket as Arrow IPC stream bytes."""
    return bytes(_stream(table).to_pybytes())


def blob_array(table: pa.Table) -> pa.Array:
    """:func:`to_blob` as a binary array of one value, on the stream's own buffer: no copy of it in
    Python bytes (a million partitions' buckets are tens of MB)."""
    stream = _stream(table)
    offsets = pa.array([0, stream.size], pa.int32()).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), 1, [None, offsets, stream])


def _stream(table: pa.Table) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


BLOB_ROWS = pa.schema([pa.field(BLOBS, pa.binary(), nullable=False)])
"""Rows of blobs alone: what the placing pass returns, a table of planned partitions per bucket."""


def as_blob_row(table: pa.Table) -> pa.RecordBatch:
    """``table`` as one row of :data:`BLOB_ROWS`."""
    return pa.record_batch([blob_array(table)], schema=BLOB_ROWS)


def from_blob(blob: bytes) -> pa.Table:
    """A table from its Arrow IPC stream bytes (:func:`to_blob`)."""
    return pa.ipc.open_stream(pa.py_buffer(blob)).read_all()


def from_blobs(blobs: Sequence[bytes]) -> pa.Table:
    """The partitions of one or more buckets' blobs, as one table."""
    return pa.concat_tables([from_blob(b) for b in blobs])


def unpack(rows: pa.Table) -> pa.Table:
    """The partitions carried by bucket rows (what a worker gets for one bucket), as one table."""
    return from_blobs(rows.column(BLOBS).to_pylist())
