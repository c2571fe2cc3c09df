"""ClusterSnapshot <-> a Parquet snapshot: a directory holding ``brokers.parquet`` and ``partitions.parquet``.

Layout (one row per broker, one row per partition; the same fields as snapshot JSON v1)::

    NAME/brokers.parquet     id int32, rack string (null: no rack), capacity_bytes int64? (disk size),
                             alive bool? (null: alive), cordoned bool? (null: no),
                             cordoned_log_dirs list<string>? (null: none),
                             log_dirs list<struct<path string, total_bytes int64?,
                             usable_bytes int64?, offline bool?, cordoned bool?>>? (null: unknown),
                             fetch_last_tiered bool? (null: no; KIP-1023)
    NAME/partitions.parquet  topic string, partition int32, replicas list<int32>,
                             leader int32?, isr list<int32>?, size_bytes int64?,
                             replica_sizes list<int64>?, replica_dirs list<string>?,
                             tiered bool? (true: its topic has remote.storage.enable),
                             untiered_bytes int64? (of a tiered topic: local bytes not uploaded)

``replica_sizes`` and ``replica_dirs`` are aligned with ``replicas``: the bytes of each replica on
its broker as measured and the log dir it is in (snapshot JSON's ``replica_sizes`` and
``replica_dirs``), null where unknown. Files without a nullable column still load
(a broker is then alive and not cordoned).

Parquet is the format for large clusters and fleets: columnar, read without parsing text, and
readable by any Parquet tool (Spark, DuckDB, pandas) for analysis. Readers here use pyarrow and check
the same rules as the JSON reader; problems name the file, the row and the column, e.g.
``snap/partitions.parquet: row 12: replicas: broker 9 is not in brokers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ferry.errors import InputError
from ferry.model import Broker, ClusterSnapshot, LogDir, PartitionState, TopicPartition

BROKERS_FILE = "brokers.parquet"
PARTITIONS_FILE = "partitions.parquet"
_MAX_PROBLEMS = 20

_LOG_DIR = pa.struct(
    [
        pa.field("path", pa.string()),
        pa.field("total_bytes", pa.int64()),
        pa.field("usable_bytes", pa.int64()),
        pa.field("offline", pa.bool_()),
        pa.field("cordoned", pa.bool_()),
    ]
)
BROKERS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("rack", pa.string()),
        pa.field("capacity_bytes", pa.int64()),
        pa.field("alive", pa.bool_()),
        pa.field("cordoned", pa.bool_()),
        pa.field("cordoned_log_dirs", pa.list_(pa.string())),
        pa.field("log_dirs", pa.list_(_LOG_DIR)),
        pa.field("fetch_last_tiered", pa.bool_()),
    ]
)
PARTITIONS_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("replicas", pa.list_(pa.int32()), nullable=False),
        pa.field("leader", pa.int32()),
        pa.field("isr", pa.list_(pa.int32())),
        pa.field("size_bytes", pa.int64()),
        pa.field("replica_sizes", pa.list_(pa.int64())),
        pa.field("replica_dirs", pa.list_(pa.string())),
        pa.field("tiered", pa.bool_()),
        pa.field("untiered_bytes", pa.int64()),
    ]
)


def is_parquet_snapshot(path: Path) -> bool:
    """Whether ``path`` is a directory in the Parquet snapshot layout."""
    return (path / PARTITIONS_FILE).exists() and (path / BROKERS_FILE).exists()


def snapshot_tables(snapshot: ClusterSnapshot) -> tuple[pa.Table, pa.Table]:
    """The snapshot as (brokers, partitions) Arrow tables in the Parquet snapshot schema."""
    brokers = pa.table(
        {
            "id": [b.id for b in snapshot.brokers],
            "rack": [b.rack for b in snapshot.brokers],
            "capacity_bytes": [b.capacity_bytes for b in snapshot.brokers],
            "alive": [b.alive for b in snapshot.brokers],
            "cordoned": [b.cordoned for b in snapshot.brokers],
            "cordoned_log_dirs": [list(b.cordoned_log_dirs) for b in snapshot.brokers],
            "log_dirs": [_log_dirs(b) for b in snapshot.brokers],
            "fetch_last_tiered": [b.fetch_last_tiered or None for b in snapshot.brokers],
        },
        schema=BROKERS_SCHEMA,
    )
    parts = snapshot.partitions
    partitions = pa.table(
        {
            "topic": [p.tp.topic for p in parts],
            "partition": [p.tp.partition for p in parts],
            "replicas": [list(p.replicas) for p in parts],
            "leader": [p.leader for p in parts],
            "isr": [None if p.isr is None else list(p.isr) for p in parts],
            "size_bytes": [p.size_bytes for p in parts],
            "replica_sizes": [_aligned_sizes(p) for p in parts],
            "replica_dirs": [_aligned_dirs(p) for p in parts],
            "tiered": [p.tp.topic in snapshot.tiered_topics or None for p in parts],
            "untiered_bytes": [p.untiered_bytes for p in parts],
        },
        schema=PARTITIONS_SCHEMA,
    )
    return brokers, partitions


def _aligned_sizes(p: PartitionState) -> list[int | None] | None:
    if not p.replica_bytes:
        return None
    measured = dict(p.replica_bytes)
    return [measured.get(b) for b in p.replicas]


def _aligned_dirs(p: PartitionState) -> list[str | None] | None:
    if not p.replica_dirs:
        return None
    found = dict(p.replica_dirs)
    return [found.get(b) for b in p.replicas]


def _log_dirs(b: Broker) -> list[dict[str, object]] | None:
    if not b.log_dirs:
        return None
    fields = ("path", "total_bytes", "usable_bytes", "offline", "cordoned")
    return [{f: getattr(d, f) for f in fields} for d in b.log_dirs]


ROW_GROUP = 65_536
"""Rows per Parquet row group. Readers that split files (Spark, DuckDB) split only between row
groups: with pyarrow's default (a million rows) a million-partition snapshot is one group."""


def write_parquet_snapshot(snapshot: ClusterSnapshot, directory: Path) -> None:
    """Write ``snapshot`` as a Parquet snapshot directory (created if missing)."""
    brokers, partitions = snapshot_tables(snapshot)
    directory.mkdir(parents=True, exist_ok=True)
    # Written under temporary names and renamed last, so a reader never sees half a snapshot.
    for table, name in ((brokers, BROKERS_FILE), (partitions, PARTITIONS_FILE)):
        temp = directory / f".{name}.tmp"
        pq.write_table(table, temp, row_group_size=ROW_GROUP)
        temp.replace(directory / name)


def read_partitions_table(directory: Path) -> pa.Table:
    """The partitions table, cast to the snapshot schema.

    Raises:
        InputError: the file is missing, unreadable, or lacks a column / has one of another type.
    """
    return _read(directory / PARTITIONS_FILE, PARTITIONS_SCHEMA)


def read_brokers_table(directory: Path) -> pa.Table:
    """The brokers table, cast to the snapshot schema (errors as :func:`read_partitions_table`)."""
    return _read(directory / BROKERS_FILE, BROKERS_SCHEMA)


def load_parquet_snapshot(directory: Path) -> ClusterSnapshot:
    """Read and validate a Parquet snapshot directory.

    Raises:
        InputError: listing the problems found (at most 20), each with file, row and column.
    """
    snapshot = snapshot_from_tables(
        read_brokers_table(directory), read_partitions_table(directory), directory
    )
    release_arrow_memory()
    return snapshot


def release_arrow_memory() -> None:
    """Hand the pages of Arrow tables already dropped back to the system. Arrow's allocator keeps
    them for its next tables, and a planner builds few: read from a million-partition snapshot,
    they held 250 MB of the process's resident memory through the whole plan."""
    pa.default_memory_pool().release_unused()


def snapshot_from_tables(brokers: pa.Table, partitions: pa.Table, directory: Path) -> ClusterSnapshot:
    """Validate the two tables of a Parquet snapshot (in its schema) and build the snapshot; problems
    name the files of ``directory``.

    Raises:
        InputError: listing the problems found (at most 20), each with file, row and column.
    """
    known = _brokers(brokers, str(directory / BROKERS_FILE))
    source = str(directory / PARTITIONS_FILE)
    states = _partitions(partitions, frozenset(b.id for b in known), source)
    flags = partitions.column("tiered").to_pylist()
    tiered = {p.tp.topic for p, flag in zip(states, flags, strict=True) if flag}
    try:
        return ClusterSnapshot.of(known, states, tiered)
    except ValueError as exc:
        raise InputError(f"{source}: {exc}") from None


def _read(path: Path, schema: pa.Schema) -> pa.Table:
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise InputError(
            f"{path}: no such file",
            hint=f"a Parquet snapshot is a directory with {BROKERS_FILE} and {PARTITIONS_FILE}",
        ) from None
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{path}: not a readable Parquet file: {exc}") from None
    problems = []
    for f in schema:
        if f.name not in table.column_names:
            if not f.nullable:
                problems.append(f"{path}: missing column {f.name}")
            continue
        found = table.schema.field(f.name).type
        # Exact types only: Spark reads the same file with the same explicit schema, and it does not
        # narrow (an int64 partition column would fail there after passing here).
        if found != f.type:
            problems.append(f"{path}: column {f.name} is {found}, expected {f.type}")
    _raise_if(problems)
    columns = [
        table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _brokers(table: pa.Table, source: str) -> list[Broker]:
    ids = table.column("id").to_pylist()
    racks = table.column("rack").to_pylist()
    capacities = table.column("capacity_bytes").to_pylist()
    problems: list[str] = []
    seen: set[int] = set()
    for row, broker_id in enumerate(ids):
        if broker_id is None or broker_id < 0:
            problems.append(f"{source}: row {row}: id: expected a broker id >= 0, got {broker_id}")
        elif broker_id in seen:
            problems.append(f"{source}: row {row}: id: duplicate broker id {broker_id}")
        seen.add(broker_id)
    if any(r is None for r in racks) and not all(r is None for r in racks):
        problems.append(f"{source}: rack: give every broker a rack or none")
    problems += [
        f"{source}: row {row}: capacity_bytes: expected a size > 0, got {size}"
        for row, size in enumerate(capacities)
        if size is not None and size <= 0
    ]
    _raise_if(problems)
    alive = [a is not False for a in table.column("alive").to_pylist()]
    cordoned = [c is True for c in table.column("cordoned").to_pylist()]
    dirs = [tuple(sorted(d or ())) for d in table.column("cordoned_log_dirs").to_pylist()]
    log_dirs = [
        _parse_log_dirs(found, row, source) for row, found in enumerate(table.column("log_dirs").to_pylist())
    ]
    tiered = [t is True for t in table.column("fetch_last_tiered").to_pylist()]
    return [
        Broker(i, r, a, c, k, d, ld, t)
        for i, r, c, a, k, d, ld, t in zip(
            ids, racks, capacities, alive, cordoned, dirs, log_dirs, tiered, strict=True
        )
    ]


def _parse_log_dirs(found: list[dict[str, Any]] | None, row: int, source: str) -> tuple[LogDir, ...]:
    if not found:
        return ()
    if any(not d.get("path") for d in found) or len({d["path"] for d in found}) != len(found):
        raise InputError(f"{source}: row {row}: log_dirs: every dir needs a path of its own")
    return tuple(
        sorted(
            (
                LogDir(
                    d["path"], d["total_bytes"], d["usable_bytes"], bool(d["offline"]), bool(d["cordoned"])
                )
                for d in found
            ),
            key=lambda d: d.path,
        )
    )


def _partitions(table: pa.Table, known: frozenset[int], source: str) -> list[PartitionState]:
    cols = [table.column(name).to_pylist() for name in PARTITIONS_SCHEMA.names]
    out: list[PartitionState] = []
    problems: list[str] = []
    for row, (topic, number, replicas, leader, isr, size, sizes, dirs, _, untiered) in enumerate(
        zip(*cols, strict=True)
    ):
        problem = None
        if not _row_ok(topic, number, replicas, leader, isr, size, known):
            problem = _row_problem(topic, number, replicas, leader, isr, size, known)
        elif sizes is not None:
            problem = _sizes_problem(replicas, sizes)
        if not problem and dirs is not None and len(dirs) != len(replicas):
            problem = f"replica_dirs: {len(dirs)} dirs for {len(replicas)} replicas {list(replicas)}"
        if problem:
            problems.append(f"{source}: row {row}: {problem}")
            if len(problems) >= _MAX_PROBLEMS:
                break
            continue
        tp = TopicPartition(topic, number)
        measured = () if sizes is None else _measured(replicas, sizes)
        where = (
            () if dirs is None else tuple(sorted((b, d) for b, d in zip(replicas, dirs, strict=True) if d))
        )
        in_sync = None if isr is None else tuple(isr)
        out.append(PartitionState(tp, tuple(replicas), leader, in_sync, size, measured, where, untiered))
    _raise_if(problems)
    return out


def _row_ok(
    topic: str | None,
    number: int | None,
    replicas: Sequence[int | None] | None,
    leader: int | None,
    isr: Sequence[int | None] | None,
    size: int | None,
    known: frozenset[int],
) -> bool:
    """The fast check every row passes through; :func:`_row_problem` words a failure."""
    if not topic or number is None or number < 0 or not replicas:
        return False
    members = set(replicas)
    return (
        len(members) == len(replicas)
        and members <= known
        and (leader is None or leader < 0 or leader in members)
        and (isr is None or members.issuperset(isr))
        and (size is None or size >= 0)
    )


def _row_problem(
    topic: str | None,
    number: int | None,
    replicas: Sequence[int | None] | None,
    leader: int | None,
    isr: Sequence[int | None] | None,
    size: int | None,
    known: frozenset[int],
) -> str | None:
    """What is wrong with one partition row (the first problem), or None."""
    shape_checks = (
        (not topic, "topic: expected a topic name"),
        (number is None or number < 0, f"partition: expected a partition number >= 0, got {number}"),
        (not replicas or None in replicas, "replicas: expected a non-empty list of broker ids"),
    )
    shape = next((message for failed, message in shape_checks if failed), None)
    if shape or not replicas:
        return shape
    unknown = [b for b in replicas if b not in known]
    checks = (
        (len(set(replicas)) != len(replicas), f"replicas: duplicate broker in {list(replicas)}"),
        (bool(unknown), f"replicas: broker {unknown[0] if unknown else None} is not in brokers"),
        (
            leader is not None and leader >= 0 and leader not in replicas,
            f"leader: leader {leader} is not one of replicas {list(replicas)}",
        ),
        (
            isr is not None and any(b not in replicas for b in isr),
            f"isr: {isr} is not a subset of replicas {list(replicas)}",
        ),
        (size is not None and size < 0, f"size_bytes: expected >= 0, got {size}"),
    )
    return next((message for failed, message in checks if failed), None)


def _sizes_problem(replicas: Sequence[int], sizes: Sequence[int | None]) -> str | None:
    if len(sizes) != len(replicas):
        return f"replica_sizes: {len(sizes)} sizes for {len(replicas)} replicas {list(replicas)}"
    negative = [n for n in sizes if n is not None and n < 0]
    return f"replica_sizes: expected >= 0, got {negative[0]}" if negative else None


def _measured(replicas: Sequence[int], sizes: Sequence[int | None]) -> tuple[tuple[int, int], ...]:
    """(broker, bytes) of the measured replicas, by broker id as snapshot JSON gives them."""
    return tuple(sorted((b, n) for b, n in zip(replicas, sizes, strict=True) if n is not None))


def _raise_if(problems: list[str]) -> None:
    if problems:
        raise InputError.of(problems)
