"""Reconciling an interrupted request with the cluster before it continues (``ferry resume``).

The journal marks a task ``submitted`` *before* the AlterPartitionReassignments call, so after a
crash a submitted task may be: finished (replicas = target, nothing in flight), still moving to its
target, never sent (replicas still the originals, nothing in flight: ferry died between the journal
write and the call), or changed by someone else. Only the cluster can tell, so resume asks it:

    finished          -> done (never submitted again)
    moving to target  -> stays submitted; the executor's loop sees it finish
    never sent        -> stays submitted and is sent again (the state machine has no way back to
                         pending, and the journal did intend it)
    anything else     -> failed, with the replicas found
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ferry.execute.records import TaskRecord
from ferry.kafka.admin import ClusterAdmin, OngoingReassignment


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
    done, moving, unsent, failed = [], [], [], []
    for task in submitted:
        replicas = current.get(task.tp, ())
        if task.tp in ongoing:
            if _target(ongoing[task.tp]) == task.target:
                moving.append(task)
            else:
                failed.append((task, f"re-targeted elsewhere: moving to {list(_target(ongoing[task.tp]))}"))
        elif replicas == task.target:
            done.append(task)
        elif replicas == task.original:
            unsent.append(task)
        else:
            failed.append((task, f"found replicas {list(replicas)}, neither original nor target"))
    return Reconciled(tuple(done), tuple(moving), tuple(unsent), tuple(failed))


def _target(r: OngoingReassignment) -> tuple[int, ...]:
    return tuple(b for b in r.replicas if b not in r.removing_replicas)
