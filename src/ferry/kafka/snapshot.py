"""Collect a live :class:`~ferry.model.ClusterSnapshot` through a ClusterAdmin, and save it as JSON.

Five batched calls make a snapshot, whatever the partition count: DescribeCluster, one Metadata
request, DescribeLogDirs (one request per broker), ListPartitionReassignments and one
DescribeConfigs for every topic. Metadata and sizes are read a few milliseconds apart, so a
partition that moves in between may show a size from its old leader: good enough for planning,
which only needs relative sizes.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ferry.errors import InputError
from ferry.kafka.admin import ClusterAdmin, OngoingReassignment, ReplicaSizes
from ferry.model import ClusterSnapshot, PartitionState, TopicPartition

SNAPSHOT_VERSION = 1


@dataclass(frozen=True, slots=True)
class LiveSnapshot:
    """A ClusterSnapshot plus what only a live cluster knows.

    Attributes:
        snapshot: brokers and partitions; ``size_bytes`` is the leader replica's size.
        replica_sizes: bytes per partition per broker holding a replica.
        reassignments: ongoing reassignments by partition.
        min_insync: effective ``min.insync.replicas`` per topic.
    """

    snapshot: ClusterSnapshot
    replica_sizes: ReplicaSizes
    reassignments: Mapping[TopicPartition, OngoingReassignment]
    min_insync: Mapping[str, int]


def collect(admin: ClusterAdmin, topics: Collection[str] | None = None) -> LiveSnapshot:
    """Read brokers, partitions, sizes, reassignments and min.insync.replicas from the cluster.

    Args:
        admin: the cluster to read.
        topics: restrict to these topics (all topics when None).

    Raises:
        KafkaError: a request failed or timed out.
        PreconditionError: a requested topic does not exist.
    """
    brokers = admin.describe_brokers()
    partitions = admin.describe_partitions(topics)
    names = sorted({p.tp.topic for p in partitions})
    # Passing the explicit list keeps the log-dir and config requests as narrow as the metadata.
    sizes = admin.describe_replica_sizes(names) if names else {}
    reassignments = {r.tp: r for r in admin.list_reassignments(names)} if names else {}
    sized = tuple(replace(p, size_bytes=leader_size(p, sizes.get(p.tp, {}))) for p in partitions)
    return LiveSnapshot(
        snapshot=ClusterSnapshot.of(brokers, sized),
        replica_sizes=sizes,
        reassignments=reassignments,
        min_insync=admin.describe_min_insync(names),
    )


def leader_size(partition: PartitionState, sizes: Mapping[int, int]) -> int | None:
    """The leader replica's size; without a leader (offline), the largest replica's; else None."""
    if partition.leader is not None and partition.leader in sizes:
        return sizes[partition.leader]
    return max(sizes.values()) if sizes else None


def to_json(live: LiveSnapshot) -> dict[str, Any]:
    """The snapshot JSON v1 document, extended with replica sizes, reassignments and min.insync.

    Extra keys are optional in v1, so readers of the plain format accept the file as it is.
    """
    snap = live.snapshot
    return {
        "version": SNAPSHOT_VERSION,
        "brokers": [{"id": b.id, "rack": b.rack} for b in snap.brokers],
        "partitions": [_partition_json(p, live) for p in snap.partitions],
        "min_insync_replicas": dict(sorted(live.min_insync.items())),
    }


def _partition_json(p: PartitionState, live: LiveSnapshot) -> dict[str, Any]:
    item: dict[str, Any] = {"topic": p.tp.topic, "partition": p.tp.partition}
    item["replicas"] = list(p.replicas)
    if p.leader is not None:
        item["leader"] = p.leader
    if p.isr is not None:
        item["isr"] = list(p.isr)
    if p.size_bytes is not None:
        item["size_bytes"] = p.size_bytes
    sizes = live.replica_sizes.get(p.tp)
    if sizes:
        item["replica_sizes"] = {str(b): n for b, n in sorted(sizes.items())}
    moving = live.reassignments.get(p.tp)
    if moving is not None:
        item["adding_replicas"] = list(moving.adding_replicas)
        item["removing_replicas"] = list(moving.removing_replicas)
    return item


def render_json(doc: Mapping[str, Any]) -> str:
    """JSON text with one broker or partition per line: diff-friendly, compact for big clusters."""
    lines = []
    for key, value in doc.items():
        if isinstance(value, list) and value:
            items = ",\n".join(f"  {json.dumps(item)}" for item in value)
            lines.append(f" {json.dumps(key)}: [\n{items}\n ]")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_json(live: LiveSnapshot, path: Path) -> None:
    """Write the snapshot to ``path`` atomically: a reader sees the old file or the new, never half.

    Raises:
        InputError: the file cannot be written.
    """
    text = render_json(to_json(live))
    try:
        fd, tmp = tempfile.mkstemp(dir=path.resolve().parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"{path}: cannot write snapshot ({exc.strerror or exc})") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write snapshot ({exc.strerror or exc})") from exc
