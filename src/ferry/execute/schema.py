"""The journal's SQLite schema (versioned migrations) and the mapping of rows to records.

Kept apart from :mod:`ferry.execute.journal` so the journal's module reads as operations only.
A schema change appends a migration script; ``meta.schema_version`` says how many have run.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from ferry.errors import InputError
from ferry.execute.options import ExecuteOptions
from ferry.execute.records import RequestKind, RequestRecord, TaskRecord
from ferry.execute.states import RequestState, TaskState
from ferry.model import TopicPartition

SCHEMA_VERSION = 4
BUSY_TIMEOUT_MS = 10_000

# Each entry upgrades the schema by one version; index 0 creates version 1.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE requests (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL CHECK (kind IN ('execute', 'rollback')),
        origin_request INTEGER REFERENCES requests(id),
        bootstrap TEXT NOT NULL,
        cluster_id TEXT,
        plan_json TEXT NOT NULL,
        options_json TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at REAL NOT NULL,
        finished_at REAL,
        note TEXT
    );
    CREATE TABLE tasks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        request_id INTEGER NOT NULL REFERENCES requests(id),
        topic TEXT NOT NULL,
        partition INTEGER NOT NULL,
        original_json TEXT NOT NULL,
        target_json TEXT NOT NULL,
        size_bytes INTEGER NOT NULL DEFAULT 0,
        state TEXT NOT NULL,
        batch INTEGER,
        superseded_by INTEGER REFERENCES tasks(id),
        submitted_at REAL,
        finished_at REAL,
        error TEXT,
        UNIQUE (request_id, topic, partition)
    );
    CREATE INDEX tasks_by_partition ON tasks (topic, partition, state);
    CREATE TABLE throttles (
        request_id INTEGER NOT NULL REFERENCES requests(id),
        resource_type TEXT NOT NULL CHECK (resource_type IN ('topic', 'broker')),
        resource_name TEXT NOT NULL,
        config_key TEXT NOT NULL,
        previous TEXT,
        planned TEXT,
        applied TEXT,
        PRIMARY KEY (request_id, resource_type, resource_name, config_key)
    );
    CREATE TABLE task_log (
        task_id INTEGER NOT NULL REFERENCES tasks(id),
        from_state TEXT,
        to_state TEXT NOT NULL,
        at REAL NOT NULL
    );
    """,
    # 2: progress samples per receiving broker, for the run's timeline (ferry report --journal).
    """
    CREATE TABLE progress (
        request_id INTEGER NOT NULL REFERENCES requests(id),
        at REAL NOT NULL,
        broker INTEGER NOT NULL,
        done_bytes INTEGER NOT NULL,
        total_bytes INTEGER NOT NULL,
        eta_s REAL
    );
    CREATE INDEX progress_by_request ON progress (request_id, at);
    """,
    # 3: the pace controller's decisions (--pace auto), per broker and role; the single-replica
    # steps of a move made one replica at a time (--one-replica-at-a-time), NULL for the others.
    """
    ALTER TABLE tasks ADD COLUMN steps_json TEXT;
    CREATE TABLE pace (
        request_id INTEGER NOT NULL REFERENCES requests(id),
        at REAL NOT NULL,
        broker INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('leader', 'follower')),
        rate INTEGER NOT NULL,
        concurrency INTEGER NOT NULL,
        state TEXT NOT NULL,
        reason TEXT NOT NULL,
        achieved REAL,
        produce REAL
    );
    CREATE INDEX pace_by_request ON pace (request_id, at);
    """,
    # 4: the log dir named for each target replica (a reassignment JSON's log_dirs, "any" where
    # none is), and the dir each replica of the partition was in when the request was prepared
    # (an object by broker, for a rollback); NULL for moves that name no dir.
    """
    ALTER TABLE tasks ADD COLUMN log_dirs_json TEXT;
    ALTER TABLE tasks ADD COLUMN original_dirs_json TEXT;
    """,
)


REQUEST_COLUMNS = (
    "id, kind, state, bootstrap, cluster_id, plan_json, options_json, created_at, finished_at,"
    " origin_request, note"
)
TASK_COLUMNS = (
    "id, request_id, topic, partition, original_json, target_json, size_bytes, state, batch,"
    " superseded_by, submitted_at, finished_at, error, steps_json, log_dirs_json, original_dirs_json"
)


_CORRUPT = (ValueError, TypeError, KeyError, AttributeError, RecursionError)
"""What decoding a row changed by hand (or by a disk fault) raises: bad JSON, an unknown state."""


def request_from_row(row: Sequence[Any], source: str) -> RequestRecord:
    """A requests row as a record; ``source`` (the journal's path) names it in the error.

    Raises:
        InputError: the row does not hold what ferry wrote (a value changed outside ferry).
    """
    try:
        return _request(row)
    except _CORRUPT as exc:
        raise _corrupt(source, f"request {row[0]}", exc) from None


def task_from_row(row: Sequence[Any], source: str) -> TaskRecord:
    """A tasks row as a record (errors as :func:`request_from_row`)."""
    try:
        return _task(row)
    except _CORRUPT as exc:
        raise _corrupt(source, f"task {row[0]} of request {row[1]}", exc) from None


def _corrupt(source: str, what: str, exc: Exception) -> InputError:
    return InputError(
        f"{source}: {what} is unreadable: {type(exc).__name__}: {exc}",
        hint="the journal was changed outside ferry; restore a copy or pass another --journal",
    )


def _request(row: Sequence[Any]) -> RequestRecord:
    rid, kind, state, bootstrap, cluster_id, plan, options, created, finished, origin, note = row
    return RequestRecord(
        id=rid,
        kind=RequestKind(kind),
        state=RequestState(state),
        bootstrap=bootstrap,
        cluster_id=cluster_id,
        plan=json.loads(plan),
        options=ExecuteOptions.from_json(json.loads(options)),
        created_at=created,
        finished_at=finished,
        origin_request=origin,
        note=note,
    )


def _task(row: Sequence[Any]) -> TaskRecord:
    tid, rid, topic, part, original, target, size, state, batch, sup, submitted, finished, error, steps = row[
        :14
    ]
    log_dirs, original_dirs = row[14:16]
    return TaskRecord(
        id=tid,
        request_id=rid,
        tp=TopicPartition(topic, part),
        original=tuple(json.loads(original)),
        target=tuple(json.loads(target)),
        size_bytes=size,
        state=TaskState(state),
        batch=batch,
        superseded_by=sup,
        submitted_at=submitted,
        finished_at=finished,
        error=error,
        steps=tuple(tuple(step) for step in json.loads(steps)) if steps else (),
        log_dirs=tuple(json.loads(log_dirs)) if log_dirs else None,
        original_dirs=tuple(sorted((int(b), d) for b, d in json.loads(original_dirs).items()))
        if original_dirs
        else (),
    )


def lastrowid(cursor: sqlite3.Cursor) -> int:
    rowid = cursor.lastrowid
    if rowid is None:
        raise AssertionError("INSERT returned no row id")
    return rowid


def marks(values: Sequence[object]) -> str:
    return ", ".join("?" for _ in values) or "NULL"


def statements(script: str) -> Iterator[str]:
    # sqlite3's executescript() would COMMIT our open transaction first; run statements one by one.
    for statement in script.split(";"):
        if statement.strip():
            yield statement
