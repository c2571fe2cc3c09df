"""A request's progress measured on the cluster: per adding replica, partition, broker, request.

The executor reports it every poll and ``ferry progress`` once; both measure the same way, so the
numbers agree. Measuring reads DescribeLogDirs sizes and the leaders of the partitions in flight
(one request each); the maths is :mod:`ferry.execute.progress`.

A task still ``submitted`` in the journal whose move has in fact ended (its executor died, or has
not polled yet) measures as complete anyway: its new replicas hold the leader's bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ferry.execute.dir_moves import dir_progress
from ferry.execute.progress import (
    ANSWER_WITHIN_S,
    Estimate,
    Progress,
    ReplicaProgress,
    by_broker,
    by_partition,
    replica_progress,
    total,
)
from ferry.execute.records import TaskRecord
from ferry.execute.states import RequestState, TaskState
from ferry.execute.tiered import TieredCopies
from ferry.kafka.admin import BrokerDirs, ClusterAdmin, replica_sizes
from ferry.model import TopicPartition

_COUNTED = (TaskState.SUBMITTED, TaskState.DONE, TaskState.PENDING)
"""Tasks whose bytes count: failed and cancelled moves are no longer part of the request's work."""


class Measured(NamedTuple):
    """A measurement, and the brokers of its moves that did not answer it in time."""

    replicas: tuple[ReplicaProgress, ...]
    silent: frozenset[int]
    """Brokers holding or taking a replica of the request's moves whose log dirs did not come back
    within :data:`ANSWER_WITHIN_S` (stopped, down): a config written to one would wait for it."""


def measure(
    admin: ClusterAdmin,
    tasks: Sequence[TaskRecord],
    tiered: TieredCopies | None = None,
    last: Sequence[ReplicaProgress] = (),
) -> Measured:
    """Progress of every adding replica of ``tasks``, and of every replica they copy between
    the log dirs of its broker.

    A pending task counts its planned bytes as still to copy, a done one as copied; a submitted
    one is measured on the cluster; ``tiered`` estimates what the new replicas of tiered topics
    copy where that is less than their leader's local log (:mod:`ferry.execute.tiered`).

    The log dirs are read of the brokers that answer within :data:`ANSWER_WITHIN_S`, a run's polls
    and ``ferry progress`` alike: a stopped broker holds neither. With no move submitted, those
    still to go are named, so the brokers that do not answer are known before a run writes to
    them. A replica on one that did not answer keeps its figures in ``last`` (the measurement
    before, in a run or in ``ferry progress --interval``), so it does not go backwards; without
    them its broker's copy counts as nothing.
    """
    replicas, found = _measured(admin, tasks, tiered, last)
    involved = {b for t in tasks if not t.state.is_final for b in (*t.original, *t.target)}
    return Measured(replicas, frozenset(involved - set(found)) if found is not None else frozenset())


def _measured(
    admin: ClusterAdmin,
    tasks: Sequence[TaskRecord],
    tiered: TieredCopies | None,
    last: Sequence[ReplicaProgress],
) -> tuple[tuple[ReplicaProgress, ...], Mapping[int, BrokerDirs] | None]:
    """The measurement, and the log dirs it read (None: no move left to ask about, nothing read)."""
    moving = [t for t in tasks if t.state is TaskState.SUBMITTED]
    topics = {t.tp.topic for t in moving}
    # Nothing in flight yet (a run's first poll, between batches): the moves still to go are
    # named instead, so which brokers answer is known before a run writes their throttles.
    asked = moving or [t for t in tasks if not t.state.is_final]
    named = [t.tp for t in asked]
    found = admin.describe_partition_dirs(named, within_s=ANSWER_WITHIN_S) if asked else None
    dirs = (found or {}) if moving else {}  # a move still to go counts its planned bytes
    sizes = replica_sizes(dirs)
    leaders = {p.tp: p.leader for p in admin.describe_partitions(topics)} if topics else {}
    copies = tiered.to_copy(admin, moving, sizes, leaders) if tiered is not None else {}
    earlier = _by_replica(last)
    replicas: list[ReplicaProgress] = []
    for task in tasks:
        if task.state in _COUNTED:
            finished = task.state is TaskState.DONE
            by_broker, to_copy = sizes.get(task.tp, {}), copies.get(task.tp)
            measured = [
                *replica_progress(task, by_broker, leaders.get(task.tp), finished=finished, to_copy=to_copy),
                *dir_progress(task, dirs, finished=finished),
            ]
            if task.state is TaskState.SUBMITTED:
                measured = [_kept(r, dirs, earlier) for r in measured]
            replicas.extend(measured)
    return tuple(replicas), found


_Earlier = dict[tuple[TopicPartition, int], list[ReplicaProgress]]
"""The last figures of each replica (partition, broker), in the order it was measured."""


def _by_replica(replicas: Sequence[ReplicaProgress]) -> _Earlier:
    found: _Earlier = {}
    for r in replicas:
        found.setdefault((r.tp, r.broker), []).append(r)
    return found


def _kept(
    now: ReplicaProgress,
    found: Mapping[int, object],
    earlier: _Earlier,
) -> ReplicaProgress:
    """``now``, or its last figures where its broker did not answer (in the same order: a replica
    both added and moved between dirs on one broker is measured twice)."""
    if now.broker in found:
        return now
    last = earlier.get((now.tp, now.broker))
    return last.pop(0) if last else now


@dataclass(frozen=True, slots=True)
class RequestProgress:
    """One measurement of a request, with the rate and ETA of the samples taken so far."""

    request_id: int
    state: RequestState
    tasks: tuple[TaskRecord, ...]
    replicas: tuple[ReplicaProgress, ...]
    estimate: Estimate
    silent: frozenset[int] = frozenset()
    """Brokers of the moves that did not answer the measurement in time (:class:`Measured`)."""

    @property
    def total(self) -> Progress:
        return total(self.replicas)

    @property
    def partitions(self) -> dict[TopicPartition, Progress]:
        return by_partition(self.replicas)

    @property
    def brokers(self) -> dict[int, Progress]:
        return by_broker(self.replicas)

    @property
    def moves_done(self) -> int:
        return sum(1 for t in self.tasks if t.state is TaskState.DONE)

    @property
    def in_flight(self) -> int:
        return sum(1 for t in self.tasks if t.state is TaskState.SUBMITTED)


def to_json(report: RequestProgress) -> dict[str, Any]:
    """The ``ferry progress --json`` document: request totals, then per broker and per partition."""
    overall = report.total
    by_tp = report.partitions
    adding: dict[TopicPartition, list[dict[str, int]]] = {}
    for r in report.replicas:
        adding.setdefault(r.tp, []).append(_bytes(r.progress) | {"broker": r.broker})
    partitions = [
        {
            "topic": t.tp.topic,
            "partition": t.tp.partition,
            "state": t.state.value,
            "replicas": list(t.target),
            **_bytes(by_tp.get(t.tp, Progress(0, 0))),
            "adding": adding.get(t.tp, []),
        }
        for t in sorted(report.tasks, key=lambda t: t.tp)
    ]
    return {
        "request": report.request_id,
        "state": report.state.value,
        **_bytes(overall),
        "fraction": overall.fraction,
        "rate_bytes_per_s": report.estimate.rate,
        "eta_s": report.estimate.eta_s,
        "moves_done": report.moves_done,
        "moves_total": len(report.tasks),
        "in_flight": report.in_flight,
        "silent_brokers": sorted(report.silent),
        "brokers": [{"broker": b, **_bytes(p)} for b, p in sorted(report.brokers.items())],
        "partitions": partitions,
    }


def _bytes(p: Progress) -> dict[str, int]:
    return {"done_bytes": p.done, "total_bytes": p.total}
