"""``verify``: is every partition of a plan at its target, and clean up throttles ferry left.

Like Kafka's ``--verify``: a partition is *reached* when its replicas equal the target (order
included: the first replica is the preferred leader) and no reassignment of it is in flight; where
the plan names log dirs (JBOD), also when each named replica is in its dir, with no copy between
dirs in flight (one in flight counts as moving).

Throttles: ferry journals every throttle value *before* writing it, so the journal knows every
throttle ferry can have left behind -- e.g. after a ``kill -9`` -- together with the value that
existed before. Verify puts those back (or deletes them) for the requests that touched the plan's
partitions, unless a live executor still owns the request, and only while none of the plan's
partitions is moving (a move in flight still wants its throttle; verify again once it ended).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ferry.execute import lock
from ferry.execute.journal import Journal
from ferry.execute.records import ConfigKey
from ferry.kafka.admin import ClusterAdmin, replica_dir
from ferry.model import TopicPartition


class Status(StrEnum):
    """Where one partition stands against its target."""

    REACHED = "reached"
    MOVING = "moving"
    NOT_REACHED = "not reached"


@dataclass(frozen=True, slots=True)
class PartitionCheck:
    """One partition: its target, its current replicas and the verdict."""

    tp: TopicPartition
    target: tuple[int, ...]
    replicas: tuple[int, ...]
    status: Status


def check(
    targets: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
    moving: Collection[TopicPartition],
    misplaced: Collection[TopicPartition] = (),
) -> tuple[PartitionCheck, ...]:
    """The verdict for each partition of ``targets`` (pure), in partition order; ``misplaced``
    partitions have a replica outside the log dir the plan names for it."""
    checks = []
    for tp, target in sorted(targets.items()):
        replicas = tuple(current.get(tp, ()))
        if tp in moving:
            status = Status.MOVING
        elif replicas == tuple(target) and tp not in misplaced:
            status = Status.REACHED
        else:
            status = Status.NOT_REACHED
        checks.append(PartitionCheck(tp, tuple(target), replicas, status))
    return tuple(checks)


def check_cluster(
    admin: ClusterAdmin,
    targets: Mapping[TopicPartition, Sequence[int]],
    dirs: Mapping[TopicPartition, Mapping[int, str]] | None = None,
) -> tuple[PartitionCheck, ...]:
    """:func:`check` against the cluster's current replicas, reassignments in flight and, for the
    partitions in ``dirs``, the log dir of each replica named there."""
    topics = sorted({tp.topic for tp in targets})
    moving = {r.tp for r in admin.list_reassignments(topics)}
    current = {p.tp: p.replicas for p in admin.describe_partitions(topics)}
    named = {tp: d for tp, d in (dirs or {}).items() if d}
    found = admin.describe_log_dirs(sorted({tp.topic for tp in named})) if named else {}
    misplaced: set[TopicPartition] = set()
    for tp, wanted in named.items():
        for broker, path in wanted.items():
            replica = replica_dir(found, broker, tp)
            if replica is not None and replica.copying:
                moving.add(tp)
            elif replica is None or not replica.settled_in(path):
                misplaced.add(tp)
    return check(targets, current, moving, misplaced)


def leftover_throttles(
    journal: Journal, partitions: Collection[TopicPartition]
) -> dict[int, dict[ConfigKey, str | None]]:
    """Per request (that touched ``partitions`` and has no live executor), the restores it owes.

    Each entry maps a config ferry's value may still be on to the value to put back (None: delete).
    When several requests left the same config, the oldest one's pre-existing value wins: later
    requests may have read the first one's leftover as "pre-existing".
    """
    wanted = set(partitions)
    owed: dict[int, dict[ConfigKey, str | None]] = {}
    claimed: set[ConfigKey] = set()
    for request in journal.requests():
        if not any(t.tp in wanted for t in journal.tasks(request.id)):
            continue
        if lock.is_live(journal.path, request.id):
            continue
        left = [t for t in journal.throttles(request.id) if t.applied is not None]
        if left:
            owed[request.id] = {t.config: t.previous for t in left if t.config not in claimed}
            claimed.update(t.config for t in left)
    return owed


def clear_leftover_throttles(
    admin: ClusterAdmin, journal: Journal, partitions: Collection[TopicPartition]
) -> int:
    """Restore what :func:`leftover_throttles` finds; returns how many configs were written.

    The journal is updated after the cluster, as the executor does: a crash in between leaves
    the record, and the next verify writes the same values again.
    """
    owed = leftover_throttles(journal, partitions)
    writes: dict[ConfigKey, str | None] = {}
    for restores in owed.values():
        writes.update(restores)
    admin.alter_configs(writes)
    for request_id in owed:
        keys = [t.config for t in journal.throttles(request_id) if t.applied is not None]
        journal.set_throttles_applied(request_id, dict.fromkeys(keys))
    return len(writes)
