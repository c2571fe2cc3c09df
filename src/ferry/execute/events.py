"""What the executor reports while it runs, as plain values for any listener (CLI, tests, logs).

The executor never prints; it calls ``listener(event)``. The CLI renders events as log lines or
progress bars; tests collect them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ferry.execute.pace.controller import Pace, Role
from ferry.execute.progress import Estimate, Progress, ReplicaProgress
from ferry.execute.states import TaskState
from ferry.kafka.freeze import FreezeState
from ferry.model import TopicPartition


@dataclass(frozen=True, slots=True)
class BatchSubmitted:
    """A batch went to the controller; ``refused`` holds the partitions it turned down, with why."""

    request_id: int
    batch: int
    partitions: tuple[TopicPartition, ...]
    refused: Mapping[TopicPartition, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TaskFinished:
    """A partition's move ended (done, failed or cancelled)."""

    request_id: int
    tp: TopicPartition
    state: TaskState
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ProgressUpdate:
    """Bytes copied for the whole request, with rate/ETA, and moves done of all moves.

    ``replicas`` holds the measurement behind ``progress`` (one entry per adding replica) and
    ``moving`` the partitions in flight, so a renderer can draw a bar per partition or broker.
    """

    request_id: int
    progress: Progress
    estimate: Estimate
    moves_done: int
    moves_total: int
    in_flight: int
    replicas: tuple[ReplicaProgress, ...] = ()
    moving: tuple[TopicPartition, ...] = ()
    steps: tuple[int, int] | None = None
    """With ``--one-replica-at-a-time``: single-replica steps done, of all steps."""
    silent: frozenset[int] = frozenset()
    """Brokers of the moves that did not answer the measurement in time: their figures are held,
    and no throttle is written to them until they answer."""


@dataclass(frozen=True, slots=True)
class ThrottlesChanged:
    """Throttle configs written: ``set`` entries given our value, ``restored`` put back."""

    request_id: int
    set: int
    restored: int


@dataclass(frozen=True, slots=True)
class LateWritesAwaited:
    """A config write failed less than a minute before the restore and may still land (a broker
    forwards it to the controller through a failover): the run waits ``for_s`` seconds, then
    reads its throttle configs and puts back any that came back."""

    request_id: int
    for_s: float


@dataclass(frozen=True, slots=True)
class WaitingForForeign:
    """Pending moves wait for reassignments ferry did not start that keep their brokers busy.

    ``blockers`` maps each such reassignment to the brokers where it holds ferry's moves back,
    ``waiting`` counts the moves held back and ``for_s`` says how long this has lasted. Sent when it
    starts or its blockers change, and again every minute while it lasts: a reassignment that
    never ends (onto a broker that is down) would otherwise stall the run without a word.
    """

    request_id: int
    blockers: Mapping[TopicPartition, tuple[int, ...]]
    waiting: int
    for_s: float


@dataclass(frozen=True, slots=True)
class LeadersElected:
    """Preferred-leader election after the moves; ``failed`` maps partitions to the reason."""

    request_id: int
    partitions: int
    failed: Mapping[TopicPartition, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SubmissionPaused:
    """The cluster is frozen (``ferry freeze``): no new moves; the ``in_flight`` ones go on."""

    request_id: int
    freeze: FreezeState
    in_flight: int


@dataclass(frozen=True, slots=True)
class SubmissionResumed:
    """The freeze was lifted; ``freeze`` is the record that lifted it (None: the record is gone)."""

    request_id: int
    freeze: FreezeState | None


@dataclass(frozen=True, slots=True)
class ClusterUnreachable:
    """A poll failed for a reason that may pass (a broker down, a timeout, a controller failover).

    The executor tries again at the next poll; ``for_s`` says how long polls have been failing and
    ``gives_up_in_s`` how long it goes on trying before it ends the run interrupted.
    """

    request_id: int
    error: str
    for_s: float
    gives_up_in_s: float


@dataclass(frozen=True, slots=True)
class StepsSubmitted:
    """Moves made one replica at a time went on to their next step: ``steps`` maps each
    partition to the step sent and how many it has."""

    request_id: int
    steps: Mapping[TopicPartition, tuple[int, int]]


@dataclass(frozen=True, slots=True)
class PaceDecided:
    """``--pace auto`` decided for one control period: ``decisions`` per broker and role, of which
    ``changed`` are those whose rate, concurrency or rule differ from the period before."""

    request_id: int
    decisions: Mapping[tuple[int, Role], Pace]
    changed: tuple[tuple[int, Role], ...]


@dataclass(frozen=True, slots=True)
class HeldUnderMinIsr:
    """Moving partitions are under min ISR, by the plan's own doing: no new move is submitted
    until they recover (none is cancelled). Sent when the list changes; empty: they recovered."""

    request_id: int
    partitions: tuple[TopicPartition, ...]


Event = (
    BatchSubmitted
    | TaskFinished
    | ProgressUpdate
    | ThrottlesChanged
    | LateWritesAwaited
    | WaitingForForeign
    | LeadersElected
    | SubmissionPaused
    | SubmissionResumed
    | ClusterUnreachable
    | PaceDecided
    | HeldUnderMinIsr
    | StepsSubmitted
)
Listener = Callable[[Event], None]


def ignore(event: Event) -> None:
    """The listener that listens to nothing."""
