"""ClusterSnapshot <-> the cluster snapshot JSON, version 1.

::

    {"version": 1,
     "brokers": [{"id": 1, "rack": "r1"}, {"id": 4, "rack": "r2", "alive": false}, ...],
     "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3],
                     "leader": 1, "isr": [1, 2, 3], "size_bytes": 1234}, ...]}

``rack``, ``leader``, ``isr`` and ``size_bytes`` are optional (``null`` counts as absent); a
``leader`` of -1 means the partition has no leader, as Kafka reports it. Every problem is reported
with the file and the JSON path of the offending value, e.g.
``snapshot.json: partitions[12].replicas: broker 9 is not in brokers``.

A snapshot read from a live cluster (``ferry snapshot``) also fills the optional fields that only a
live cluster knows: ``alive``, ``capacity_bytes``, ``cordoned``, ``cordoned_log_dirs`` and
``log_dirs`` per broker (absent: true, unknown, false, none, unknown), ``replica_dirs`` per
partition (:mod:`ferry.formats.log_dirs_json`), the top-level ``tiered_topics`` (those with
``remote.storage.enable``) and per partition of them ``untiered_bytes`` (its leader's local bytes
not yet uploaded),
``replica_sizes`` (bytes per broker
holding a replica), ``adding_replicas`` / ``removing_replicas`` of a partition in motion and the
top-level ``min_insync_replicas`` per topic. They are validated like the rest, and they live here
rather than in a second format so that every snapshot file, hand-written or live, reads the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ferry.formats._problems import (
    INT64_MAX,
    Problems,
    as_id_list,
    as_int,
    as_names,
    as_object,
    check_fields,
    parse_partition_entry,
    parse_partition_list,
    read_root,
    replica_keyed,
)
from ferry.formats.atomic import dumps_rows
from ferry.formats.brokers_json import dump_broker, parse_brokers
from ferry.formats.json_text import read_bytes
from ferry.formats.log_dirs_json import dump_replica_dirs, parse_replica_dirs
from ferry.formats.plain_entries import plain_partition, plain_partitions
from ferry.model import Broker, ClusterSnapshot, PartitionState, TopicPartition

_PARTITION_OPTIONAL = (
    "leader",
    "isr",
    "size_bytes",
    "replica_sizes",
    "adding_replicas",
    "removing_replicas",
    "replica_dirs",
    "untiered_bytes",
)
_ROOT_OPTIONAL = ("min_insync_replicas", "tiered_topics")


@dataclass(frozen=True, slots=True)
class SnapshotDetails:
    """The optional fields only a live cluster fills in; empty for a hand-written snapshot.

    Attributes:
        replica_sizes: bytes on disk per partition, per broker holding a replica.
        adding_replicas: replicas being added, per partition in motion (KIP-455).
        removing_replicas: replicas being removed, per partition in motion.
        min_insync: effective ``min.insync.replicas`` per topic.
    """

    replica_sizes: Mapping[TopicPartition, Mapping[int, int]] = field(default_factory=dict)
    adding_replicas: Mapping[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    min_insync: Mapping[str, int] = field(default_factory=dict)


def load_snapshot(path: str | Path) -> ClusterSnapshot:
    """Read and validate a snapshot JSON file; errors name the file as given in ``path``.

    Raises:
        InputError: the file cannot be read, is not JSON, or is not a valid snapshot.
    """
    return parse_snapshot(read_bytes(path), str(path))


def parse_snapshot(data: object, source: str) -> ClusterSnapshot:
    """Validate a snapshot and build the ClusterSnapshot.

    Args:
        data: JSON text (``str`` or ``bytes``) or an already decoded JSON value.
        source: the name problems are reported under, usually the file name.

    Raises:
        InputError: listing every problem found, each as ``source: JSON.path: message``.
    """
    return parse_snapshot_details(data, source)[0]


def parse_snapshot_details(data: object, source: str) -> tuple[ClusterSnapshot, SnapshotDetails]:
    """Like :func:`parse_snapshot`, also returning the live-cluster fields.

    Raises:
        InputError: listing every problem found.
    """
    problems = Problems(source)
    details = _Details()
    brokers, partitions = _parse_root(read_root(data, problems), problems, details)
    problems.raise_if_any()
    return ClusterSnapshot.of(brokers, partitions, details.tiered), details.frozen()


@dataclass(slots=True)
class _Details:
    """Scratch collector for :class:`SnapshotDetails` while parsing."""

    replica_sizes: dict[TopicPartition, dict[int, int]] = field(default_factory=dict)
    adding: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    min_insync: dict[str, int] = field(default_factory=dict)
    tiered: tuple[str, ...] = ()

    def frozen(self) -> SnapshotDetails:
        return SnapshotDetails(self.replica_sizes, self.adding, self.removing, self.min_insync)


def _parse_root(
    decoded: Mapping[str, Any] | None, problems: Problems, details: _Details
) -> tuple[list[Broker], list[PartitionState]]:
    """The valid brokers and partitions; every problem found on the way is recorded."""
    if decoded is None:
        return [], []
    check_fields(
        decoded, "", problems, required=("version", "brokers", "partitions"), optional=_ROOT_OPTIONAL
    )
    brokers, known = parse_brokers(decoded["brokers"], problems) if "brokers" in decoded else ([], None)
    partitions = plain_partitions(decoded.get("partitions"), known)
    if partitions is None:
        partitions = (
            parse_partition_list(
                decoded["partitions"],
                problems,
                lambda item, path: _parse_partition(item, path, known, problems, details),
                lambda item: plain_partition(item, known),
            )
            if "partitions" in decoded
            else []
        )
    details.min_insync = _parse_min_insync(decoded.get("min_insync_replicas"), problems)
    details.tiered = as_names(decoded.get("tiered_topics"), "tiered_topics", problems)
    return brokers, partitions


def _parse_min_insync(value: object, problems: Problems) -> dict[str, int]:
    if value is None:
        return {}
    obj = as_object(value, "min_insync_replicas", problems)
    if obj is None:
        return {}
    parsed = {
        topic: as_int(n, f"min_insync_replicas.{topic}", problems, minimum=1) for topic, n in obj.items()
    }
    return {topic: n for topic, n in parsed.items() if n is not None}


def dump_snapshot(snapshot: ClusterSnapshot, details: SnapshotDetails | None = None) -> dict[str, Any]:
    """The snapshot as JSON-ready data; optional fields that are unknown are left out."""
    details = details or SnapshotDetails()
    doc: dict[str, Any] = {
        "version": 1,
        "brokers": [dump_broker(b) for b in snapshot.brokers],
        "partitions": [_dump_partition(p, details) for p in snapshot.partitions],
    }
    if details.min_insync:
        doc["min_insync_replicas"] = dict(sorted(details.min_insync.items()))
    if snapshot.tiered_topics:
        doc["tiered_topics"] = sorted(snapshot.tiered_topics)
    return doc


def render_snapshot(doc: Mapping[str, Any]) -> str:
    """JSON text with one broker or partition per line: diff-friendly, compact for big clusters."""
    return dumps_rows(doc)


def _dump_partition(p: PartitionState, details: SnapshotDetails) -> dict[str, Any]:
    out: dict[str, Any] = {
        "topic": p.tp.topic,
        "partition": p.tp.partition,
        "replicas": list(p.replicas),
    }
    if p.leader is not None:
        out["leader"] = p.leader
    if p.isr is not None:
        out["isr"] = list(p.isr)
    if p.size_bytes is not None:
        out["size_bytes"] = p.size_bytes
    sizes = details.replica_sizes.get(p.tp) or dict(p.replica_bytes)
    if sizes:
        # JSON object keys are strings; broker ids are written in numeric order.
        out["replica_sizes"] = {str(b): n for b, n in sorted(sizes.items())}
    if p.tp in details.adding_replicas or p.tp in details.removing_replicas:
        out["adding_replicas"] = list(details.adding_replicas.get(p.tp, ()))
        out["removing_replicas"] = list(details.removing_replicas.get(p.tp, ()))
    if p.replica_dirs:
        out["replica_dirs"] = dump_replica_dirs(p)
    if p.untiered_bytes is not None:
        out["untiered_bytes"] = p.untiered_bytes
    return out


def _parse_partition(
    value: object, path: str, known: frozenset[int] | None, problems: Problems, details: _Details
) -> PartitionState | None:
    entry = parse_partition_entry(value, path, problems, known=known, optional=_PARTITION_OPTIONAL)
    if entry is None:
        return None
    obj, replicas = entry.obj, entry.replicas
    leader = _parse_leader(obj, path, replicas, problems)
    isr = _parse_subset(obj, "isr", path, replicas, problems)
    size = obj.get("size_bytes")
    if size is not None:
        size = as_int(size, f"{path}.size_bytes", problems, maximum=INT64_MAX)
    sizes = _parse_replica_sizes(obj.get("replica_sizes"), f"{path}.replica_sizes", replicas, problems)
    adding = _parse_subset(obj, "adding_replicas", path, replicas, problems)
    removing = _parse_subset(obj, "removing_replicas", path, replicas, problems)
    dirs = parse_replica_dirs(obj.get("replica_dirs"), f"{path}.replica_dirs", replicas, problems)
    untiered = obj.get("untiered_bytes")
    if untiered is not None:
        untiered = as_int(untiered, f"{path}.untiered_bytes", problems, maximum=INT64_MAX)
    if not entry.valid(problems):
        return None
    assert entry.tp is not None and replicas is not None  # valid() checked both
    if sizes:
        details.replica_sizes[entry.tp] = sizes
    if adding is not None or removing is not None:
        details.adding[entry.tp] = adding or ()
        details.removing[entry.tp] = removing or ()
    return PartitionState(
        entry.tp, replicas, leader, isr, size, tuple(sorted(sizes.items())) if sizes else (), dirs, untiered
    )


def _parse_replica_sizes(
    value: object, path: str, replicas: tuple[int, ...] | None, problems: Problems
) -> dict[int, int]:
    return replica_keyed(
        value, path, replicas, problems, lambda size, at: as_int(size, at, problems, maximum=INT64_MAX)
    )


def _parse_leader(
    obj: Mapping[str, Any], path: str, replicas: tuple[int, ...] | None, problems: Problems
) -> int | None:
    value = obj.get("leader")
    if value is None:
        return None
    # -1 is how Kafka reports a partition without a leader.
    leader = as_int(value, f"{path}.leader", problems, minimum=-1)
    if leader is not None and leader >= 0 and replicas is not None and leader not in replicas:
        problems.add(f"{path}.leader", f"leader {leader} is not one of replicas {list(replicas)}")
    return leader


def _parse_subset(
    obj: Mapping[str, Any], key: str, path: str, replicas: tuple[int, ...] | None, problems: Problems
) -> tuple[int, ...] | None:
    """An optional broker list (``isr``, ``adding_replicas``...) that must be part of ``replicas``."""
    value = obj.get(key)
    if value is None:
        return None
    ids = as_id_list(value, f"{path}.{key}", problems)
    if ids is None or replicas is None:
        return ids
    for broker_id in ids:
        if broker_id not in replicas:
            problems.add(f"{path}.{key}", f"broker {broker_id} is in {key} but not in replicas")
    return ids
