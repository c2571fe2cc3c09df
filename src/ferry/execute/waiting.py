"""Pending moves held back by foreign reassignments: when to say so again.

ferry keeps waiting (a foreign move may be slow, not stuck, and submitting onto its brokers would
break the limits), but says why, so a stuck one can be cancelled: at once when the set of
blockers changes, then once per :data:`REPORT_EVERY_S` while it stays the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ferry.kafka.admin import OngoingReassignment
from ferry.model import TopicPartition

REPORT_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class Waiting:
    """Which foreign reassignments hold moves back (on which brokers), since when, last said when."""

    blockers: dict[TopicPartition, tuple[int, ...]]
    since: float
    reported_at: float


def blockers_of(
    foreign: Sequence[OngoingReassignment], brokers: frozenset[int]
) -> dict[TopicPartition, tuple[int, ...]]:
    """The foreign reassignments touching any of ``brokers``, each with the brokers it holds."""
    return {
        r.tp: held
        for r in foreign
        if (held := tuple(sorted(brokers & {*r.adding_replicas, *r.removing_replicas})))
    }


def next_waiting(
    before: Waiting | None, blockers: dict[TopicPartition, tuple[int, ...]], now: float
) -> tuple[Waiting | None, bool]:
    """The waiting state after this poll, and whether to report it now."""
    if not blockers:
        return None, False
    if before is None or before.blockers != blockers:
        return Waiting(blockers, since=now, reported_at=now), True
    if now - before.reported_at >= REPORT_EVERY_S:
        return Waiting(blockers, since=before.since, reported_at=now), True
    return before, False
