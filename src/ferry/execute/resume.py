"""Reconciling an interrupted request with the cluster before it continues (``ferry resume``).

The journal marks a task ``submitted`` *before* the AlterPartitionReassignments call, so after a
crash a submitted task may be: finished (replicas = target, nothing in flight), still moving to its
target, never sent (replicas still the originals, nothing in flight: ferry died between the journal
write and the call), or changed by someone else. Only the cluster can tell, so resume asks it:

    finished          -> done (never submitted again); a move naming log dirs whose replicas
                         are its target stays submitted: the loop sees its replicas into their
                         dirs (:mod:`ferry.execute.dir_moves`)
    moving to target  -> stays submitted; the executor's loop sees it finish (a move made one
                         replica at a time: moving to any of its steps). So does a partition
                         whose replicas are still its target + originals while no reassignment is
                         listed: it ended a moment ago, and the broker that answered the metadata
                         request has not applied that yet (the loop gives such a move a grace
                         period before it counts as failed)
    never sent        -> stays submitted and is sent again (the state machine has no way back to
                         pending, and the journal did intend it), at the executor's first poll
                         that finds the cluster not frozen, as a new batch would be; a move made
                         one replica at a time found at one of its steps goes on from there
    anything else     -> failed, with the replicas found

``ferry execute`` of a plan whose request was interrupted resumes that request rather than start a
second one (which would refuse anyway: its partitions are moving). :func:`resumable_request` finds
it: same cluster, no live executor, and the same plan -- every recorded task's target is the
file's target for that partition, and every partition the file still has to move is one of the
request's (partitions the file lists that were already in place when the request was recorded were
left out of it, so the file may hold more).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ferry.execute import lock
from ferry.execute.journal import Journal
from ferry.execute.records import RequestKind, TaskRecord
from ferry.execute.states import RequestState
from ferry.kafka.admin import ClusterAdmin
from ferry.model import TopicPartition

# RECORDED is left out on purpose: between recording and running, a live executor holds no lock
# yet, so a recorded request cannot be told from one whose executor died.
_RESUMABLE = (RequestState.INTERRUPTED, RequestState.RUNNING)


@dataclass(frozen=True, slots=True)
class Reconciled:
    """The submitted tasks of a request, sorted by what the cluster says about them."""

    done: tuple[TaskRecord, ...] = ()
    moving: tuple[TaskRecord, ...] = ()
    unsent: tuple[TaskRecord, ...] = ()
    failed: tuple[tuple[TaskRecord, str], ...] = ()


def reconcile(admin: ClusterAdmin, submitted: Sequence[TaskRecord]) -> Reconciled:
    """Classify ``submitted`` tasks by the cluster's replicas and reassignments in flight."""
    if not submitted:
        return Reconciled()
    topics = sorted({t.tp.topic for t in submitted})
    ongoing = {r.tp: r for r in admin.list_reassignments(topics)}
    current = {p.tp: p.replicas for p in admin.describe_partitions(topics)}
    done: list[TaskRecord] = []
    moving: list[TaskRecord] = []
    unsent: list[TaskRecord] = []
    failed: list[tuple[TaskRecord, str]] = []
    for task in submitted:
        replicas = current.get(task.tp, ())
        if task.tp in ongoing:
            if task.goes_to(ongoing[task.tp].target):
                moving.append(task)
            else:
                failed.append((task, f"re-targeted elsewhere: moving to {list(ongoing[task.tp].target)}"))
        elif replicas == task.target:
            # A move naming dirs is done once its replicas sit in them: the run looks at that.
            (moving if task.named_dirs else done).append(task)
        elif replicas == task.original or task.is_step(replicas):
            unsent.append(task)
        elif any(replicas == _in_motion(before, after) for before, after in _legs(task)):
            moving.append(task)
        else:
            failed.append((task, f"found replicas {list(replicas)}, neither original nor target"))
    return Reconciled(tuple(done), tuple(moving), tuple(unsent), tuple(failed))


def _legs(task: TaskRecord) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Each reassignment of the task: from the replicas before it to its target."""
    targets = task.targets
    return list(zip((task.original, *targets[:-1]), targets, strict=True))


def _in_motion(before: tuple[int, ...], target: tuple[int, ...]) -> tuple[int, ...]:
    """The replicas KIP-455 gives a partition while it moves from ``before`` to ``target``:
    target, then the replicas leaving."""
    return (*target, *(b for b in before if b not in target))


def same_plan(
    tasks: Sequence[TaskRecord],
    targets: Mapping[TopicPartition, tuple[int, ...]],
    still_to_move: Iterable[TopicPartition],
) -> bool:
    """Whether a plan file with ``targets`` is the plan the request with ``tasks`` recorded.

    Args:
        tasks: the request's tasks (one per partition it moves).
        targets: the plan file's target replicas per partition.
        still_to_move: the file's partitions whose replicas are not their target yet.
    """
    recorded = {t.tp: t.target for t in tasks}
    if not recorded:
        return False
    if any(targets.get(tp) != target for tp, target in recorded.items()):
        return False
    return set(still_to_move) <= set(recorded)


def resumable_request(
    journal: Journal,
    cluster_id: str | None,
    targets: Mapping[TopicPartition, tuple[int, ...]],
    still_to_move: Iterable[TopicPartition],
) -> int | None:
    """The newest interrupted execute request of this plan on this cluster, or None.

    A ``running`` request counts when no live process holds its lock (its executor was killed).
    """
    pending = set(still_to_move)
    for request in reversed(journal.requests(_RESUMABLE)):
        if request.kind is not RequestKind.EXECUTE:
            continue
        if request.cluster_id and cluster_id and request.cluster_id != cluster_id:
            continue
        if lock.is_live(journal.path, request.id):
            continue
        if same_plan(journal.tasks(request.id), targets, pending):
            return request.id
    return None
