"""Replicas into the log dirs a move names (JBOD): sent, paced per broker, seen through.

A move may name a log dir for each target replica (a reassignment JSON's ``log_dirs``; ``any``
names none). Kafka takes dirs through AlterReplicaLogDirs, never through the reassignment:

* a replica the reassignment is about to create: AlterReplicaLogDirs *before* the reassignment
  records the dir as its preferred one (the broker answers that it does not hold the replica
  yet), so the broker creates the replica there and the data is copied once (:func:`prefer`);
* a replica already on its broker, in another dir: AlterReplicaLogDirs makes a future log in the
  named dir, which the broker copies in the background (at most
  ``replica.alter.log.dirs.io.max.bytes.per.second``) and swaps in once it has caught up.

A move that names dirs is done once its replicas are its target and each named replica's log is
in its dir with no future log left (:meth:`DirMoves.advance`, every poll, for the tasks whose
replicas are in place). Future logs are started at most ``per_broker`` at a time on a broker,
and on at most ``brokers`` brokers at once: a disk copy competes with the broker's produce and
fetch traffic for the same disks. A copy about to end (less than ``lead_bytes`` left: what the
log-dir throttle copies in two polls) frees its slot early, so the next copy is under way when it
ends rather than a poll later; the throttle is the broker's, so both together still copy at most
at its rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ferry.execute.progress import Progress, ReplicaProgress
from ferry.execute.records import TaskRecord
from ferry.kafka.admin import NOT_THERE_YET, BrokerDirs, ClusterAdmin, ReplicaTarget, replica_dir, settled_in
from ferry.model import TopicPartition


def dir_changes(task: TaskRecord) -> dict[int, str]:
    """The named dirs of the replicas that stay on their broker but were in another dir when the
    request was prepared: the intra-broker copies the move makes, by broker."""
    before = dict(task.original_dirs)
    return {b: d for b, d in task.named_dirs.items() if b in task.original and before.get(b, d) != d}


def misplaced(task: TaskRecord, found: Mapping[int, BrokerDirs]) -> dict[int, str]:
    """The named replicas of ``task`` whose log is not in its dir yet (or has a future log left)."""
    return {b: path for b, path in task.named_dirs.items() if not settled_in(found, b, task.tp, path)}


def prefer(admin: ClusterAdmin, tasks: Sequence[TaskRecord]) -> dict[TopicPartition, str]:
    """Name the dir of every replica the tasks' reassignments will create, before they do.

    Returns:
        The refusals, by partition: a dir the broker does not have, offline or cordoned.
    """
    targets = {(t.tp, b): d for t in tasks for b, d in t.named_dirs.items() if b in t.adding}
    return _refusals(admin.alter_replica_log_dirs(targets) if targets else {})


@dataclass(frozen=True, slots=True)
class DirRound:
    """What one look at the tasks' dirs found."""

    done: tuple[TaskRecord, ...] = ()
    failed: Mapping[int, str] = field(default_factory=dict)
    """Task id -> why the broker refused its dir."""


@dataclass
class DirMoves:
    """Future logs of one run: started under the per-broker limits, followed to their end."""

    admin: ClusterAdmin
    per_broker: int = 1
    brokers: int | None = None
    """Brokers copying between their dirs at once (None: any number)."""
    lead_bytes: int = 0
    """A copy with fewer bytes than this left no longer holds its slot: the next one starts
    alongside it, so the broker-wide throttle never idles between two copies (it still bounds
    both together)."""

    def advance(self, tasks: Sequence[TaskRecord]) -> DirRound:
        """Look at the dirs of ``tasks`` (their replicas are their targets): the ones whose
        replicas all sit in their dirs are done; the others get the future logs they lack, as
        far as the limits let them."""
        if not tasks:
            return DirRound()
        found = self.admin.describe_log_dirs({t.tp.topic for t in tasks})
        left = {t.id: misplaced(t, found) for t in tasks}
        done = tuple(t for t in tasks if not left[t.id])
        busy = _copying(found, self.lead_bytes)
        wanted: dict[ReplicaTarget, str] = {}
        owner: dict[TopicPartition, int] = {}
        for task in tasks:
            for broker, path in sorted(left[task.id].items()):
                replica = replica_dir(found, broker, task.tp)
                if replica is not None and replica.future_path == path:
                    continue  # copying already
                if replica is not None and replica.path != path and not self._room(busy, broker):
                    continue
                wanted[(task.tp, broker)] = path
                owner[task.tp] = task.id
                if replica is not None and replica.path != path:
                    busy[broker] = busy.get(broker, 0) + 1
        refused = _refusals(self.admin.alter_replica_log_dirs(wanted)) if wanted else {}
        return DirRound(done, {owner[tp]: why for tp, why in refused.items()})

    def _room(self, busy: Mapping[int, int], broker: int) -> bool:
        if busy.get(broker, 0) >= self.per_broker:
            return False
        others = sum(1 for b, n in busy.items() if n and b != broker)
        return self.brokers is None or busy.get(broker, 0) > 0 or others < self.brokers


def stop(admin: ClusterAdmin, tasks: Sequence[TaskRecord]) -> tuple[list[TaskRecord], list[TaskRecord]]:
    """Stop the copies between dirs of ``tasks`` (their reassignments ended or never were): each
    future log is dropped by naming the replica's current dir again, so the replica stays where
    it is (Kafka's cancel of an intra-broker move).

    Returns:
        The tasks whose replicas were all in their dirs already (done, nothing to stop), and the
        others (stopped).
    """
    if not tasks:
        return [], []
    found = admin.describe_log_dirs({t.tp.topic for t in tasks})
    left = {t.id: misplaced(t, found) for t in tasks}
    placed = [t for t in tasks if not left[t.id]]
    halted = [t for t in tasks if left[t.id]]
    back: dict[ReplicaTarget, str] = {}
    for task in halted:
        for broker in task.named_dirs:
            replica = replica_dir(found, broker, task.tp)
            if replica is not None and replica.copying:
                back[(task.tp, broker)] = replica.path
    if back:
        admin.alter_replica_log_dirs(back)
    return placed, halted


def _copying(found: Mapping[int, BrokerDirs], lead_bytes: int) -> dict[int, int]:
    """Future logs in flight per broker (among the replicas asked about), but those with less
    than ``lead_bytes`` left to copy."""
    return {
        b: sum(1 for r in d.replicas.values() if r.copying and r.size - r.future_size >= lead_bytes)
        for b, d in found.items()
    }


def _refusals(answers: Mapping[ReplicaTarget, str | None]) -> dict[TopicPartition, str]:
    refused: dict[TopicPartition, str] = {}
    for (tp, broker), answer in sorted(answers.items()):
        if answer is not None and answer != NOT_THERE_YET:
            refused.setdefault(tp, f"broker {broker} refused the log dir: {answer}")
    return refused


def dir_progress(
    task: TaskRecord, found: Mapping[int, BrokerDirs], *, finished: bool
) -> tuple[ReplicaProgress, ...]:
    """Bytes copied into the future log of each replica the task moves between dirs."""
    result = []
    for broker, path in sorted(dir_changes(task).items()):
        replica = replica_dir(found, broker, task.tp)
        size = replica.size if replica is not None else task.size_bytes
        if finished or settled_in(found, broker, task.tp, path):
            copied = size
        elif replica is not None and replica.future_path == path:
            copied = min(replica.future_size, size)
        else:
            copied = 0
        result.append(ReplicaProgress(task.tp, broker, Progress(copied, size)))
    return tuple(result)
