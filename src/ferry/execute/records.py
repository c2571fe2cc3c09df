"""Plain, frozen values read from and written to the journal.

The journal stores replicas as JSON arrays and config values as text; these types are what the rest
of ``ferry.execute`` sees, so no SQL row shape leaks out of :mod:`ferry.execute.journal`.
``ConfigKey`` and ``ResourceType`` live in :mod:`ferry.kafka.resources` (the admin client speaks
them too) and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from ferry.execute.options import ExecuteOptions
from ferry.execute.states import RequestState, TaskState
from ferry.execute.steps import Steps, next_target
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition
from ferry.model.plan import ReplicaChange

__all__ = [
    "ConfigKey",
    "RequestKind",
    "RequestRecord",
    "ResourceType",
    "TaskRecord",
    "ThrottleRecord",
]


class RequestKind(StrEnum):
    """What a request does: run a plan, or undo an earlier request (``origin_request``)."""

    EXECUTE = "execute"
    ROLLBACK = "rollback"


@dataclass(frozen=True, slots=True)
class ThrottleRecord:
    """A throttle config a request owns.

    Attributes:
        config: which config entry.
        previous: the value that existed before the request (None: the entry was absent); cleanup
            restores it instead of deleting.
        planned: the widest value the request plans to set (for the whole plan), recorded up front.
        applied: what ferry last wrote to the cluster (None: nothing of ours is there now).
    """

    config: ConfigKey
    previous: str | None
    planned: str | None
    applied: str | None = None


@dataclass(frozen=True, slots=True)
class TaskRecord(ReplicaChange):
    """One partition's move within a request.

    ``superseded_by`` links a task re-targeted by a later request to the task that replaced it.
    """

    id: int
    request_id: int
    tp: TopicPartition
    original: tuple[int, ...]
    target: tuple[int, ...]
    size_bytes: int
    state: TaskState
    batch: int | None = None
    superseded_by: int | None = None
    submitted_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    steps: Steps = ()
    """With ``--one-replica-at-a-time``, the replica lists the move goes through, one
    reassignment each, the last being ``target`` (:mod:`ferry.execute.steps`); empty: one
    reassignment to ``target``."""
    log_dirs: tuple[str, ...] | None = None
    """The log dir named for each replica of ``target`` (``any``: the broker's choice); None:
    no dir named (:mod:`ferry.execute.dir_moves`)."""
    original_dirs: tuple[tuple[int, str], ...] = ()
    """(broker, dir) of each replica when the request was prepared, for a move naming dirs."""

    @property
    def targets(self) -> Steps:
        """Every replica list the move is sent to, in order."""
        return self.steps or (self.target,)

    def next_target(self, replicas: Sequence[int]) -> tuple[int, ...]:
        """The reassignment to send for a partition that now has ``replicas``."""
        return next_target(self.targets, self.original, replicas)

    def goes_to(self, target: Sequence[int]) -> bool:
        """Whether a reassignment to ``target`` is one the move sends: a step or its target."""
        return tuple(target) in self.targets

    def is_step(self, replicas: Sequence[int]) -> bool:
        """Whether ``replicas`` is one of the move's steps before its target (any order)."""
        return any(set(step) == set(replicas) for step in self.targets[:-1])


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One ``ferry execute`` or ``ferry rollback``: what was asked, of which cluster, and how it went.

    ``plan`` is the reassignment JSON of the request (Kafka's format, decoded) and ``options`` how
    it runs (limits, order, throttle).
    """

    id: int
    kind: RequestKind
    state: RequestState
    bootstrap: str
    cluster_id: str | None
    plan: Mapping[str, Any]
    options: ExecuteOptions
    created_at: float
    finished_at: float | None = None
    origin_request: int | None = None
    note: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", MappingProxyType(dict(self.plan)))
