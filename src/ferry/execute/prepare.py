"""Preparing a request: refuse foreign moves in flight, read the throttles, record everything.

Nothing reaches the cluster but reads: the request, its tasks (originals, targets, sizes) and its
throttles (pre-existing and planned values) are journalled in one transaction before the executor
submits anything, so a crash at any later point leaves what a rollback and a cleanup need.
"""

from __future__ import annotations

from collections.abc import Sequence

from ferry.errors import PreconditionError
from ferry.execute import sharing
from ferry.execute import throttles as thr
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.records import RequestKind, ThrottleRecord
from ferry.execute.steps import Steps, single_replica_steps
from ferry.kafka.admin import ClusterAdmin, OngoingReassignment
from ferry.model import ClusterSnapshot, Plan, TopicPartition


def prepare_request(
    admin: ClusterAdmin,
    journal: Journal,
    plan: Plan,
    *,
    bootstrap: str,
    options: ExecuteOptions,
    rollback_of: int | None = None,
    now: ClusterSnapshot | None = None,
) -> int:
    """Check preconditions and record the request (see :meth:`Executor.prepare`); its id."""
    ongoing = admin.list_reassignments()
    check_in_flight(journal, ongoing, options.additional)
    keys = thr.required(plan.moves, options.throttle, dir_rate=options.dir_rate).keys
    on_cluster = admin.describe_throttle_configs(keys) if keys else {}
    # A config another running request has applied holds ferry's value, not the operator's.
    previous = sharing.previous_values(journal, on_cluster, keys)
    planned = thr.desired(thr.required(plan.moves, options.throttle, dir_rate=options.dir_rate), previous)
    records = [ThrottleRecord(k, previous.get(k), planned.get(k)) for k in sorted(keys)]
    steps = _steps(admin, plan) if options.one_replica_at_a_time else {}
    dirs = _original_dirs(admin, plan, now)
    return journal.record_request(
        plan,
        bootstrap=bootstrap,
        cluster_id=admin.cluster_id(),
        options=options,
        throttles=records,
        kind=RequestKind.EXECUTE if rollback_of is None else RequestKind.ROLLBACK,
        origin_request=rollback_of,
        steps=steps,
        original_dirs=dirs,
    )


def _original_dirs(
    admin: ClusterAdmin, plan: Plan, now: ClusterSnapshot | None
) -> dict[TopicPartition, dict[int, str]]:
    """The dir each replica is in now, for the partitions whose moves name dirs (a rollback puts
    them back there): from ``now``, a snapshot just taken that has them, else read."""
    named = [m for m in plan.moves if m.named_dirs]
    if not named:
        return {}
    if now is not None and all(now.has(m.tp) for m in named):
        return {m.tp: dict(now.partition(m.tp).replica_dirs) for m in named}
    found = admin.describe_log_dirs({m.tp.topic for m in named})
    return {
        m.tp: {b: r.path for b, held in sorted(found.items()) if (r := held.replicas.get(m.tp)) is not None}
        for m in named
    }


def _steps(admin: ClusterAdmin, plan: Plan) -> dict[TopicPartition, Steps]:
    """The single-replica steps of every move that changes more than one replica."""
    racks = {b.id: b.rack for b in admin.describe_brokers(include_fenced=True)}
    cut = {m.tp: single_replica_steps(m.original, m.target, racks) for m in plan.moves}
    return {tp: steps for tp, steps in cut.items() if len(steps) > 1}


def check_in_flight(journal: Journal, ongoing: Sequence[OngoingReassignment], additional: bool) -> None:
    """Refuse reassignments ferry did not start unless ``additional``; ferry's own are fine.

    Raises:
        PreconditionError: a foreign reassignment is in flight and ``additional`` is False.
    """
    ours = journal.moving_partitions()
    foreign = sorted(r.tp for r in ongoing if r.tp not in ours)
    if foreign and not additional:
        shown = ", ".join(str(tp) for tp in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise PreconditionError(
            f"{len(foreign)} reassignment(s) not started by ferry are in flight ({shown})",
            hint="wait for them, or pass --additional to run alongside them",
        )
