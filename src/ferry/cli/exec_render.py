"""Executor events as one-line log messages, and a cancel's outcome (pure: value in, ``str`` out).

``ferry execute --wait`` prints these to stderr; they are plain lines so they read the same in a
terminal and in a log file. ``ferry cancel`` and ``ferry freeze --cancel`` print the same
outcome summary.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ferry.cli.progress_render import silent_text
from ferry.cli.render import human_bytes, progress_line
from ferry.execute.cancel import Outcome
from ferry.execute.events import (
    BatchSubmitted,
    ClusterUnreachable,
    Event,
    HeldUnderMinIsr,
    LateWritesAwaited,
    LeadersElected,
    PaceDecided,
    ProgressUpdate,
    StepsSubmitted,
    SubmissionPaused,
    SubmissionResumed,
    TaskFinished,
    WaitingForForeign,
)
from ferry.execute.resume import Reconciled
from ferry.kafka.freeze import FreezeState


def event_line(event: Event) -> str | None:
    """The line for ``event``, or None for events not worth a line."""
    body = _body(event)
    return None if body is None else f"ferry execute: request {event.request_id}: {body}"


def _body(event: Event) -> str | None:
    if isinstance(event, BatchSubmitted | TaskFinished | LeadersElected | StepsSubmitted):
        return _outcome_text(event)
    if isinstance(event, ProgressUpdate):
        return progress_text(event)
    if isinstance(event, SubmissionPaused | SubmissionResumed | HeldUnderMinIsr | PaceDecided):
        return _pause_text(event)
    if isinstance(event, WaitingForForeign):
        return waiting_text(event)
    if isinstance(event, ClusterUnreachable | LateWritesAwaited):
        return _cluster_text(event)
    return None  # ThrottlesChanged: the throttles' life is in the journal; not worth a line


def _cluster_text(event: ClusterUnreachable | LateWritesAwaited) -> str:
    """What the cluster's failures hold up: the run's polls, or the end of its restore."""
    if isinstance(event, LateWritesAwaited):
        return late_writes_text(event.for_s)
    return (
        f"cannot reach the cluster ({event.error}); trying again at the next poll"
        f" (failing for {event.for_s:.0f} s, giving up in {event.gives_up_in_s:.0f} s)"
    )


def late_writes_text(seconds: float) -> str:
    """Why a run or a cancel waits ``seconds`` before it is done with its throttles."""
    return (
        f"a throttle write went unanswered and a broker may still deliver it: waiting"
        f" {seconds:.0f} s, then checking that every throttle is as it should be"
    )


def _pause_text(event: SubmissionPaused | SubmissionResumed | HeldUnderMinIsr | PaceDecided) -> str | None:
    """What holds the run back or sets its pace: a freeze, a partition under min ISR, the pace."""
    if isinstance(event, SubmissionPaused | SubmissionResumed):
        return freeze_change_text(event)
    return pace_text(event)


def _outcome_text(event: BatchSubmitted | TaskFinished | LeadersElected | StepsSubmitted) -> str:
    if isinstance(event, StepsSubmitted):
        shown = ", ".join(f"{tp} step {k}/{n}" for tp, (k, n) in sorted(event.steps.items())[:5])
        more = f" and {len(event.steps) - 5} more" if len(event.steps) > 5 else ""
        return f"next step: {shown}{more}"
    if isinstance(event, BatchSubmitted):
        refused = f", {len(event.refused)} refused" if event.refused else ""
        return f"batch {event.batch}: submitted {len(event.partitions)} move(s){refused}"
    if isinstance(event, TaskFinished):
        why = f" ({event.error})" if event.error else ""
        return f"{event.tp} {event.state}{why}"
    failed = f", {len(event.failed)} not elected" if event.failed else ""
    return f"preferred-leader election for {event.partitions} partition(s){failed}"


def waiting_text(event: WaitingForForeign, shown: int = 5) -> str:
    """``2 move(s) ready to start wait for 1 reassignment(s) ferry did not start (for 60 s): ...``.

    Then each blocking reassignment with the brokers where it holds ferry's moves back.
    """
    items = sorted(event.blockers.items())
    named = "; ".join(f"{tp} on broker {', '.join(map(str, brokers))}" for tp, brokers in items[:shown])
    more = f"; {len(items) - shown} more" if len(items) > shown else ""
    lasted = f" (for {event.for_s:.0f} s)" if event.for_s > 0 else ""
    return (
        f"{event.waiting} move(s) ready to start wait for {len(items)} reassignment(s)"
        f" ferry did not start{lasted}:"
        f" {named}{more}; cancel any that is stuck (e.g. adding a replica on a broker that is down)"
    )


def pace_text(event: PaceDecided | HeldUnderMinIsr, shown: int = 5) -> str | None:
    """``pace: broker 3 follower 10.0 MB/s -> 7.0 MB/s, 2 moves (back-off: 1 partition lost an
    ISR member); ...`` for the decisions that changed something; None when none did."""
    if isinstance(event, HeldUnderMinIsr):
        if not event.partitions:
            return "resumed: the moving partitions are back at min ISR or above"
        named = ", ".join(str(tp) for tp in event.partitions[:shown])
        more = f" and {len(event.partitions) - shown} more" if len(event.partitions) > shown else ""
        return (
            f"paused: {named}{more} under min ISR while moving; moves in flight go on, "
            "no new ones until they recover"
        )
    lines = []
    for key in event.changed:
        (broker, role), pace = key, event.decisions[key]
        lines.append(
            f"broker {broker} {role} {human_bytes(pace.rate)}/s, {pace.concurrency} move(s) "
            f"({pace.state}: {pace.reason})"
        )
    if not lines:
        return None
    more = f"; {len(lines) - shown} more" if len(lines) > shown else ""
    return "pace: " + "; ".join(lines[:shown]) + more


def freeze_change_text(event: SubmissionPaused | SubmissionResumed) -> str:
    """``paused: the cluster is frozen by ...`` or ``resumed: the cluster was unfrozen by ...``."""
    if isinstance(event, SubmissionPaused):
        return (
            f"paused: {frozen_text(event.freeze)}; {event.in_flight} move(s) in flight go on,"
            " no new ones until 'ferry unfreeze'"
        )
    by = f" by {event.freeze.by} at {utc_text(event.freeze.at)}" if event.freeze else ""
    return f"resumed: the cluster was unfrozen{by}"


def frozen_text(freeze: FreezeState) -> str:
    """``the cluster is frozen by ops@host since 2025-01-02 03:04:05 UTC: swapping disks``."""
    return f"the cluster is frozen {frozen_by_text(freeze)}"


def frozen_by_text(freeze: FreezeState) -> str:
    """``by ops@host since 2025-01-02 03:04:05 UTC: swapping disks``."""
    return f"by {freeze.by} since {utc_text(freeze.at)}: {freeze.reason}"


def utc_text(at: datetime) -> str:
    """``2025-01-02 03:04:05 UTC``: freezes are read on machines in other time zones."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def progress_text(event: ProgressUpdate) -> str:
    """``42.0% (1.2 MiB of 3.0 MiB), 2/6 moves done, 3 in flight, 1.1 MiB/s, ETA 2 s`` (and
    ``, 4/9 steps done`` with ``--one-replica-at-a-time``)."""
    steps = f", {event.steps[0]}/{event.steps[1]} steps done" if event.steps else ""
    silent = f"; {silent_text(event.silent)}" if event.silent else ""
    return (
        progress_line(
            event.progress,
            event.estimate,
            done=event.moves_done,
            total=event.moves_total,
            in_flight=event.in_flight,
            say_unknown=False,
        )
        + steps
        + silent
    )


def resumed_text(found: Reconciled) -> str:
    """What resuming found on the cluster: ``on resume 2 move(s) had finished, ...``."""
    return (
        f"on resume {len(found.done)} move(s) had finished, {len(found.moving)} were still moving,"
        f" {len(found.unsent)} were sent again, {len(found.failed)} had been changed by others"
    )


def outcome_text(outcome: Outcome) -> str:
    """The human summary: what stopped, what stayed bigger, what was never started."""
    lines = [f"cancelled {len(outcome.stopped)} move(s) in flight and {outcome.pending} pending move(s)"]
    if outcome.foreign:
        lines.append(f"  of which {len(outcome.foreign)} not started by ferry")
    if outcome.finished:
        lines.append(f"{len(outcome.finished)} move(s) had already reached their targets: marked done")
    if outcome.kept:
        lines.append(
            f"{len(outcome.kept)} partition(s) now have more replicas than before the move (cancel is "
            "not a rollback; 'ferry rollback' restores the originals):"
        )
        lines += [f"  {tp}: replicas {list(replicas)}" for tp, replicas in outcome.kept.items()]
    for tp, why in sorted(outcome.refused.items()):
        lines.append(f"not cancelled: {tp}: {why}")
    if outcome.requests:
        lines.append("requests ended: " + ", ".join(str(r) for r in outcome.requests))
    lines.append(f"throttle configs updated: {outcome.throttles}")
    return "\n".join(lines) + "\n"


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    """The outcome as JSON-ready data (``--json``)."""
    return {
        "stopped": [str(tp) for tp in outcome.stopped],
        "kept": {str(tp): list(r) for tp, r in outcome.kept.items()},
        "pending_cancelled": outcome.pending,
        "finished": [str(tp) for tp in outcome.finished],
        "foreign": [str(tp) for tp in outcome.foreign],
        "refused": {str(tp): why for tp, why in outcome.refused.items()},
        "requests_ended": list(outcome.requests),
        "throttle_configs_written": outcome.throttles,
    }
