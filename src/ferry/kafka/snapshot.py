"""Collect a live :class:`~ferry.model.ClusterSnapshot` through a ClusterAdmin, and save it as JSON.

Six batched calls make a snapshot, whatever the partition count: DescribeCluster, one Metadata
request, DescribeLogDirs (one request per broker), ListPartitionReassignments and two
DescribeConfigs for every topic (min.insync.replicas, remote.storage.enable). Metadata and sizes
are read a few milliseconds apart, so a partition that moves in between may show a size from its
old leader: good enough for planning, which only needs relative sizes.

A broker that is down when the snapshot is taken is kept, marked ``alive=False``: the metadata still
lists it among the replicas, the ISR shows the truth (it drops out once the controller notices), and
it has no replica sizes because DescribeLogDirs only reaches live brokers. ``ferry plan`` refuses to
move replicas onto such a broker, and plans moving them off it (``--remove-brokers``) as usual.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ferry.errors import InputError, KafkaError
from ferry.formats import SnapshotDetails, dump_snapshot, render_snapshot, write_text_atomic
from ferry.kafka.admin import (
    BrokerDirs,
    ClusterAdmin,
    OngoingReassignment,
    ReplicaSizes,
    disks_of,
    replica_sizes,
)
from ferry.model import Broker, ClusterSnapshot, PartitionState, TopicPartition


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
    """Read brokers (with their disks' capacity and cordons), partitions, sizes, reassignments and
    min.insync.replicas from the cluster.

    Args:
        admin: the cluster to read.
        topics: restrict to these topics (all topics when None).

    Raises:
        KafkaError: a request failed or timed out.
        PreconditionError: a requested topic does not exist.
    """
    partitions = admin.describe_partitions(topics)
    names = sorted({p.tp.topic for p in partitions})
    # Passing the explicit list keeps the log-dir and config requests as narrow as the metadata;
    # one DescribeLogDirs per broker gives the dirs, their cordons and the replicas in them.
    found = admin.describe_log_dirs(names)
    registered = [_with_disks(b, found.get(b.id)) for b in admin.describe_brokers(include_fenced=True)]
    brokers = _brokers_of(registered, partitions)
    sizes = replica_sizes(found)
    dirs = _replica_dirs(found)
    reassignments = {r.tp: r for r in admin.list_reassignments(names)} if names else {}
    sized = tuple(
        replace(
            p,
            size_bytes=leader_size(p, sizes.get(p.tp, {})),
            replica_bytes=tuple(sorted(sizes.get(p.tp, {}).items())),
            replica_dirs=tuple(sorted(dirs.get(p.tp, {}).items())),
        )
        for p in partitions
    )
    tiered = admin.describe_tiering(names, ()).topics if names else frozenset()
    if tiered:
        brokers, sized = _tiered(admin, brokers, sized, tiered)
    return LiveSnapshot(
        snapshot=ClusterSnapshot.of(brokers, sized, tiered),
        replica_sizes=sizes,
        reassignments=reassignments,
        min_insync=admin.describe_min_insync(names),
    )


def _tiered(
    admin: ClusterAdmin, brokers: Sequence[Broker], parts: Sequence[PartitionState], topics: Collection[str]
) -> tuple[tuple[Broker, ...], tuple[PartitionState, ...]]:
    """The brokers that start a new replica at the last tiered offset (KIP-1023), and each
    partition of a tiered topic with its leader's local bytes not yet uploaded: its local bytes x
    (log end - first offset not uploaded) / (log end - local log start). Where a leader cannot say
    its offsets yet (elected a moment ago), the partition goes without."""
    alive = [b.id for b in brokers if b.alive]
    fetching = admin.describe_tiering((), alive).from_last_tiered
    marked = tuple(replace(b, fetch_last_tiered=b.id in fetching) for b in brokers)
    tps = [p.tp for p in parts if p.tp.topic in topics]
    try:
        offsets, uploaded = admin.log_offsets(tps), admin.latest_tiered(tps)
    except KafkaError as exc:
        if not exc.transient:
            raise
        return marked, tuple(parts)
    out = []
    for p in parts:
        found = offsets.get(p.tp)
        if found is None or p.size_bytes is None or p.tp not in uploaded:
            out.append(p)
            continue
        share = found.local_share_from(uploaded[p.tp] + 1)
        out.append(replace(p, untiered_bytes=int(p.size_bytes * share)))
    return marked, tuple(out)


def with_current_brokers(admin: ClusterAdmin, snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """``snapshot`` with its brokers as the cluster lists them now, each alive or not.

    One DescribeCluster: the cheap way to notice a broker that went down after the snapshot was
    taken (a plan made meanwhile may move replicas onto it).

    Raises:
        KafkaError: the request failed or timed out.
    """
    brokers = _brokers_of(admin.describe_brokers(include_fenced=True), snapshot.partitions)
    # DescribeCluster says nothing of disks: each broker keeps the dirs, cordons and capacity the
    # snapshot read, which the safety checks of dirs and cordons need.
    before = {b.id: b for b in snapshot.brokers}
    return replace(snapshot, brokers=tuple(_disks_as(b, before.get(b.id)) for b in brokers))


_DISKS = ("capacity_bytes", "cordoned", "cordoned_log_dirs", "log_dirs")
"""What a broker's DescribeLogDirs tells (:func:`_with_disks`) and DescribeCluster does not."""


def _disks_as(broker: Broker, earlier: Broker | None) -> Broker:
    if earlier is None:
        return broker
    return replace(broker, **{name: getattr(earlier, name) for name in _DISKS})


def _with_disks(broker: Broker, found: BrokerDirs | None) -> Broker:
    if found is None:  # down: its dirs say nothing
        return broker
    disks = disks_of(found)
    return replace(
        broker,
        capacity_bytes=disks.capacity_bytes,
        cordoned=disks.cordoned,
        cordoned_log_dirs=disks.cordoned_dirs,
        log_dirs=found.dirs,
    )


def _replica_dirs(found: Mapping[int, BrokerDirs]) -> dict[TopicPartition, dict[int, str]]:
    dirs: dict[TopicPartition, dict[int, str]] = {}
    for broker, held in found.items():
        for tp, replica in held.replicas.items():
            dirs.setdefault(tp, {})[broker] = replica.path
    return dirs


def _brokers_of(registered: Sequence[Broker], partitions: Sequence[PartitionState]) -> tuple[Broker, ...]:
    """The registered brokers plus any broker that holds a replica without being registered.

    A broker that is down still owns its replicas in the metadata. Leaving it out would make the
    snapshot name an unknown broker; listing it as alive would invite the planner to move replicas
    onto it. So it is listed with ``alive=False``: with its rack while it is still registered (a
    fenced broker), without one once it has been unregistered and the controller forgot it.
    """
    known = {b.id for b in registered}
    orphans = sorted({r for p in partitions for r in p.replicas} - known)
    return (*registered, *(Broker(b, None, alive=False) for b in orphans))


def leader_size(partition: PartitionState, sizes: Mapping[int, int]) -> int | None:
    """The leader replica's size; without a leader (offline), the largest replica's; else None."""
    if partition.leader is not None and partition.leader in sizes:
        return sizes[partition.leader]
    return max(sizes.values()) if sizes else None


def details(live: LiveSnapshot) -> SnapshotDetails:
    """The live-only fields of ``live`` in the form the snapshot format writes them."""
    return SnapshotDetails(
        replica_sizes=live.replica_sizes,
        adding_replicas={tp: r.adding_replicas for tp, r in live.reassignments.items()},
        removing_replicas={tp: r.removing_replicas for tp, r in live.reassignments.items()},
        min_insync=live.min_insync,
    )


def to_json(live: LiveSnapshot) -> dict[str, Any]:
    """The snapshot JSON v1 document, with the optional live fields filled in."""
    return dump_snapshot(live.snapshot, details(live))


def render_json(live: LiveSnapshot) -> str:
    """The snapshot file's text, one broker or partition per line."""
    return render_snapshot(to_json(live))


def write_json(live: LiveSnapshot, path: Path) -> None:
    """Write the snapshot to ``path`` atomically: a reader sees the old file or the new, never half.

    Raises:
        InputError: the file cannot be written.
    """
    try:
        write_text_atomic(path, render_json(live))
    except OSError as exc:
        raise InputError(f"{path}: cannot write snapshot ({exc.strerror or exc})") from exc
