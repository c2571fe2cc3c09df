"""Plan <-> Kafka's reassignment JSON, as ``kafka-reassign-partitions.sh`` reads and writes it.

::

    {"version": 1,
     "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3],
                     "log_dirs": ["any", "any", "any"]}, ...]}

``log_dirs`` is optional; when present it names one log directory per replica ("any" lets the
broker choose). A plan is written as the partitions that change; its rollback is the same format
with their original replicas, so either file can be handed to Kafka's own tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ferry.formats._problems import (
    Problems,
    as_array,
    as_str,
    check_fields,
    parse_partition_entry,
    parse_partition_list,
    read_root,
)
from ferry.formats.atomic import dumps_json, join_rows, write_files_atomic
from ferry.formats.json_text import read_bytes
from ferry.model import ClusterSnapshot, Move, Plan, TopicPartition
from ferry.model.plan import named_dirs


@dataclass(frozen=True, slots=True)
class ReassignmentEntry:
    """One partition of a reassignment file: its new replicas and, optionally, their log dirs."""

    tp: TopicPartition
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Reassignment:
    """A validated reassignment file; ``entries`` keep the file's order (problems name indexes)."""

    entries: tuple[ReassignmentEntry, ...]

    @property
    def targets(self) -> Mapping[TopicPartition, tuple[int, ...]]:
        """The new replicas of each partition."""
        return MappingProxyType({e.tp: e.replicas for e in self.entries})

    @property
    def named_dirs(self) -> Mapping[TopicPartition, Mapping[int, str]]:
        """The log dir named for each replica that has one (not ``any``), of the partitions whose
        entries have ``log_dirs``."""
        named = {e.tp: named_dirs(e.replicas, e.log_dirs) for e in self.entries}
        return MappingProxyType({tp: d for tp, d in named.items() if d})

    def to_moves(self, snapshot: ClusterSnapshot, source: str) -> tuple[Move, ...]:
        """Moves from the snapshot's current replicas to these targets.

        Raises:
            InputError: a partition or broker of the file is not in the snapshot.
        """
        problems = Problems(source)
        known = frozenset(snapshot.broker_ids)
        moves: list[Move] = []
        for i, entry in enumerate(self.entries):
            path = f"partitions[{i}]"
            for broker_id in entry.replicas:
                if broker_id not in known:
                    problems.add(f"{path}.replicas", f"broker {broker_id} is not in the snapshot")
            try:
                state = snapshot.partition(entry.tp)
            except KeyError:
                problems.add(path, f"partition {entry.tp} is not in the snapshot")
                continue
            size = state.size
            moves.append(Move(entry.tp, state.replicas, entry.replicas, size, entry.log_dirs))
        problems.raise_if_any()
        return tuple(moves)


def dump_reassignment(plan: Plan) -> dict[str, Any]:
    """The plan's target replicas in Kafka's format; ``log_dirs`` only where the plan has them."""
    partitions: list[dict[str, Any]] = []
    for move in plan.moves:
        entry = _entry(move.tp, move.target)
        if move.log_dirs is not None:
            entry["log_dirs"] = list(move.log_dirs)
        partitions.append(entry)
    return {"version": 1, "partitions": partitions}


def dump_rollback(plan: Plan) -> dict[str, Any]:
    """The original replicas of the plan's partitions, in Kafka's format, to undo the plan."""
    return {"version": 1, "partitions": [_entry(m.tp, m.original) for m in plan.moves]}


PLAN_FILES = ("reassignment.json", "rollback.json", "report.json")
"""A plan's files, in the order :func:`plan_files` gives them."""


def plan_files(directory: Path, plan: Plan, report: Mapping[str, Any]) -> dict[Path, str]:
    """A plan's three files in ``directory`` with their contents: reassignment.json and
    rollback.json (one partition per line), report.json."""
    texts = (reassignment_text(plan), rollback_text(plan), dumps_json(report))
    return {directory / name: text for name, text in zip(PLAN_FILES, texts, strict=True)}


def reassignment_text(plan: Plan) -> str:
    """``dumps_rows(dump_reassignment(plan))``, byte for byte, written line by line."""
    return _rows(plan, rollback=False)


def rollback_text(plan: Plan) -> str:
    """``dumps_rows(dump_rollback(plan))``, byte for byte, written line by line."""
    return _rows(plan, rollback=True)


def _rows(plan: Plan, *, rollback: bool) -> str:
    """One line per move, formatted here rather than by the JSON encoder from a dict per move: a
    1M removal's files took 2.0 s to write so, 0.7 s now (docs/benchmarks.md, "The plan's files
    written line by line"). The same text: integers print as :mod:`json` prints them, and strings
    go through it (a topic once per run of its partitions, the moves being sorted)."""
    lines: list[str] = []
    topic, quoted = None, ""
    for move in plan.moves:
        if move.tp.topic != topic:
            topic = move.tp.topic
            quoted = json.dumps(topic, ensure_ascii=False)
        replicas = ", ".join(map(str, move.original if rollback else move.target))
        line = f'{{"topic": {quoted}, "partition": {move.tp.partition}, "replicas": [{replicas}]'
        if move.log_dirs is not None and not rollback:
            line += f', "log_dirs": {json.dumps(list(move.log_dirs), ensure_ascii=False)}'
        lines.append(line + "}")
    return join_rows({"version": "1", "partitions": lines})


def write_plan(
    directory: Path, plan: Plan, report: Mapping[str, Any], extra: Mapping[Path, str] | None = None
) -> list[Path]:
    """Write a plan's three files (and ``extra`` ones) into ``directory``, all or none; returns
    their paths, reassignment.json first.

    Raises:
        OSError: the directory cannot be made or written; nothing of the plan is left behind.
    """
    files = plan_files(directory, plan, report)
    files.update(extra or {})
    directory.mkdir(parents=True, exist_ok=True)
    write_files_atomic(files)
    return list(files)


def _entry(tp: TopicPartition, replicas: tuple[int, ...]) -> dict[str, Any]:
    return {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}


def load_reassignment(path: str | Path) -> Reassignment:
    """Read and validate a reassignment (or rollback) JSON file.

    Raises:
        InputError: the file cannot be read, is not JSON, or is not a valid reassignment.
    """
    return parse_reassignment(read_bytes(path), str(path))


def parse_reassignment(data: object, source: str) -> Reassignment:
    """Validate a reassignment given as JSON text or decoded JSON.

    Checks what Kafka's tool checks (version 1, no duplicate partition, no duplicate or empty
    replica list, one log dir per replica) and reports every problem with its JSON path.

    Raises:
        InputError: listing every problem found.
    """
    problems = Problems(source)
    entries: list[ReassignmentEntry] = []
    root = read_root(data, problems)
    if root is not None and check_fields(root, "", problems, required=("version", "partitions")):
        entries = parse_partition_list(
            root["partitions"], problems, lambda item, path: _parse_entry(item, path, problems)
        )
    problems.raise_if_any()
    return Reassignment(tuple(entries))


def _parse_entry(value: object, path: str, problems: Problems) -> ReassignmentEntry | None:
    entry = parse_partition_entry(value, path, problems, known=None, optional=("log_dirs",))
    if entry is None:
        return None
    log_dirs = _parse_log_dirs(entry.obj.get("log_dirs"), f"{path}.log_dirs", entry.replicas, problems)
    if not entry.valid(problems):
        return None
    assert entry.tp is not None and entry.replicas is not None  # valid() checked both
    return ReassignmentEntry(entry.tp, entry.replicas, log_dirs)


def _parse_log_dirs(
    value: object, path: str, replicas: tuple[int, ...] | None, problems: Problems
) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = as_array(value, path, problems)
    if items is None:
        return None
    dirs = [as_str(item, f"{path}[{i}]", problems) for i, item in enumerate(items)]
    if replicas is not None and len(items) != len(replicas):
        problems.add(path, f"{len(items)} log dirs for {len(replicas)} replicas (give one per replica)")
    checked = [d for d in dirs if d is not None]
    return tuple(checked) if len(checked) == len(dirs) else None
