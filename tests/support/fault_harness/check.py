"""After a run: the cluster's replicas, its throttle configs and ferry's journal must agree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ferry.execute.journal import Journal
from ferry.execute.records import TaskRecord
from ferry.execute.states import TaskState
from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition

Replicas = tuple[int, ...]
Allowed = tuple[tuple[Replicas, bool], ...]
"""Replica lists a partition may end with, each with whether the order must match too."""
BROKER_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
TOPIC_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@dataclass
class StateCheck:
    """What is wrong with the cluster after a run; every figure should be 0 and notes empty."""

    partitions_wrong: int = 0
    throttles_left: int = 0
    notes: list[str] = field(default_factory=list)


def throttle_keys(brokers: Sequence[int], topics: Sequence[str]) -> list[ConfigKey]:
    keys = [ConfigKey(ResourceType.BROKER, str(b), k) for b in brokers for k in BROKER_KEYS]
    return keys + [ConfigKey(ResourceType.TOPIC, t, k) for t in topics for k in TOPIC_KEYS]


def check_state(
    admin: KafkaPythonAdmin,
    journal_path: Path,
    allowed: Mapping[TopicPartition, Allowed],
    throttles_before: Mapping[ConfigKey, str],
    keys: Sequence[ConfigKey],
) -> StateCheck:
    """Every partition where the scenario allows, at rest, and where the journal says it is;
    every throttle config as it was before the run."""
    result = StateCheck()
    topics = sorted({tp.topic for tp in allowed})
    live = {p.tp: tuple(p.replicas) for p in admin.describe_partitions(topics)}
    moving = {r.tp for r in admin.list_reassignments(topics)}
    last = _last_tasks(journal_path, result)
    for tp, options in sorted(allowed.items()):
        replicas = live.get(tp)
        why = _wrong(replicas, options, tp in moving, last.get(tp))
        if why:
            result.partitions_wrong += 1
            result.notes.append(f"{tp}: {why}")
    after = admin.describe_throttle_configs(keys)
    for key in keys:
        if after.get(key) != throttles_before.get(key):
            result.throttles_left += 1
            result.notes.append(f"{key}: {after.get(key)!r}, was {throttles_before.get(key)!r}")
    return result


def _wrong(replicas: Replicas | None, options: Allowed, moving: bool, task: TaskRecord | None) -> str | None:
    if replicas is None or moving:
        return "missing" if replicas is None else f"still moving at {list(replicas)}"
    if not any(replicas == o if exact else sorted(replicas) == sorted(o) for o, exact in options):
        return f"at {list(replicas)}, expected one of {[list(o) for o, _ in options]}"
    return None if task is None else _disagrees(replicas, task)


def _disagrees(replicas: Replicas, task: TaskRecord) -> str | None:
    """How the journal's last word on a partition differs from the cluster, if it does."""
    if task.state is TaskState.DONE and replicas != task.target:
        return f"journal says done at {list(task.target)}, cluster has {list(replicas)}"
    if task.state is not TaskState.DONE and sorted(replicas) != sorted(task.original):
        return f"journal says {task.state} from {list(task.original)}, cluster has {list(replicas)}"
    return None


def _last_tasks(journal_path: Path, result: StateCheck) -> dict[TopicPartition, TaskRecord]:
    """The latest task per partition; requests not ended and throttles not cleared go in notes."""
    if not journal_path.exists():
        return {}
    with Journal.open(journal_path) as journal:
        last: dict[TopicPartition, TaskRecord] = {}
        for request in journal.requests():
            if not request.state.is_final:
                result.notes.append(f"request {request.id} left {request.state}")
            if any(t.applied is not None for t in journal.throttles(request.id)):
                result.notes.append(f"request {request.id} still records throttles applied")
            for task in journal.tasks(request.id):
                if not task.state.is_final:
                    result.notes.append(f"task {task.id} ({task.tp}) left {task.state}")
                if task.tp not in last or task.id > last[task.tp].id:
                    last[task.tp] = task
    return last
