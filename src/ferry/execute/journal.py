"""The durable journal of requests, tasks and throttles: one SQLite file.

Why SQLite: a single file survives ``kill -9`` with its transactions intact, several ferry
processes (an executor, ``ferry progress``, a second ``ferry execute``) can read it while one writes,
and operators can open it with ``sqlite3`` when something goes wrong. It runs in WAL mode (readers
never block the writer nor see half a transaction) with ``synchronous=FULL`` (a committed
transaction is on disk before ferry touches the cluster: KIP-236 wants the originals recorded *before*
submission).

Layout (schema version :data:`SCHEMA_VERSION`, kept in ``meta``)::

    requests   id (monotonic: AUTOINCREMENT never reuses an id), kind, origin_request -> requests,
               bootstrap, cluster_id, plan_json, options_json, state, created_at, finished_at, note
    tasks      id, request_id -> requests, topic, partition, original_json, target_json, size_bytes,
               state, batch, superseded_by -> tasks, submitted_at, finished_at, error
    throttles  request_id -> requests, resource_type, resource_name, config_key,
               previous, planned, applied
    task_log   every task transition (task_id, from_state, to_state, at): the audit trail

Room for interruptions (issue 6): a rollback request names its ``origin_request``; a task re-targeted
by a later request is cancelled with ``superseded_by`` pointing at the new task, so both requests stay
linked; the request list is a plain query over ``requests``.

State changes go through :mod:`ferry.execute.states`; an illegal one raises before anything is written.
Time comes from an injected ``clock`` so tests need no sleeping.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ferry.errors import InputError, PreconditionError
from ferry.execute.records import (
    ConfigKey,
    RequestKind,
    RequestRecord,
    ResourceType,
    TaskRecord,
    ThrottleRecord,
)
from ferry.execute.schema import (
    BUSY_TIMEOUT_MS,
    MIGRATIONS,
    REQUEST_COLUMNS,
    SCHEMA_VERSION,
    TASK_COLUMNS,
    lastrowid,
    marks,
    request_from_row,
    statements,
    task_from_row,
)
from ferry.execute.states import (
    RequestState,
    TaskState,
    check_request_transition,
    check_task_transition,
)
from ferry.formats import dump_reassignment
from ferry.model import Plan, TopicPartition


def default_journal_path(env: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """``$XDG_STATE_HOME/kafka-ferry/journal.sqlite``, else ``~/.local/state/kafka-ferry/...``.

    The XDG base-directory spec puts "actions history" in the state directory; a relative
    ``XDG_STATE_HOME`` is invalid there and ignored.
    """
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME", "")
    state_home = Path(base) if base and Path(base).is_absolute() else None
    if state_home is None:
        state_home = (home or Path.home()) / ".local" / "state"
    return state_home / "kafka-ferry" / "journal.sqlite"


class Journal:
    """The journal on one SQLite file; open it with :meth:`open`, close it (or use ``with``).

    Every public write is one transaction: after it returns, it is on disk.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path, clock: Callable[[], float]) -> None:
        self._conn = conn
        self.path = path
        self._clock = clock

    @classmethod
    def open(cls, path: Path, *, clock: Callable[[], float] = time.time) -> Journal:
        """Open (creating file, parent directories and schema if needed) the journal at ``path``.

        Raises:
            InputError: the file cannot be opened or is not a ferry journal.
            PreconditionError: the journal was written by a newer ferry (higher schema version).
        """
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE below), so a write
            # never starts as a read lock that has to be upgraded (and may deadlock) later.
            conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"{path}: cannot open journal ({exc})") from exc
        journal = cls(conn, path, clock)
        try:
            journal._prepare()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise InputError(f"{path}: not a ferry journal ({exc})", hint="pass another --journal") from exc
        except BaseException:
            conn.close()
            raise
        return journal

    def close(self) -> None:
        """Close the connection; safe to call twice."""
        self._conn.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT), rolled back on any exception."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _prepare(self) -> None:
        conn = self._conn
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        with self.transaction():
            version = self._schema_version()
            if version > SCHEMA_VERSION:
                raise PreconditionError(
                    f"{self.path}: journal schema version {version} is newer than this ferry "
                    f"understands ({SCHEMA_VERSION})",
                    hint="upgrade kafka-ferry",
                )
            for script in MIGRATIONS[version:]:
                for statement in statements(script):
                    conn.execute(statement)
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

    def _schema_version(self) -> int:
        has_meta = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        if not has_meta:
            return 0
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    @property
    def schema_version(self) -> int:
        return self._schema_version()

    # -- requests --------------------------------------------------------------------------------

    def record_request(
        self,
        plan: Plan,
        *,
        bootstrap: str,
        cluster_id: str | None = None,
        options: Mapping[str, Any] | None = None,
        throttles: Iterable[ThrottleRecord] = (),
        kind: RequestKind = RequestKind.EXECUTE,
        origin_request: int | None = None,
    ) -> int:
        """Record a request, a pending task per move, and its throttles (with the pre-existing values).

        All in one transaction, before anything is submitted: if ferry dies afterwards, the journal
        knows the originals to roll back to and the throttle values to restore.

        Returns:
            The new request id (larger than every earlier one, even deleted ones).
        """
        now = self._clock()
        with self.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO requests (kind, origin_request, bootstrap, cluster_id, plan_json,"
                " options_json, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    kind.value,
                    origin_request,
                    bootstrap,
                    cluster_id,
                    json.dumps(dump_reassignment(plan)),
                    json.dumps(dict(options or {}), sort_keys=True),
                    RequestState.RECORDED.value,
                    now,
                ),
            )
            request_id = lastrowid(cursor)
            for move in plan.moves:
                task = conn.execute(
                    "INSERT INTO tasks (request_id, topic, partition, original_json, target_json,"
                    " size_bytes, state) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        request_id,
                        move.tp.topic,
                        move.tp.partition,
                        json.dumps(list(move.original)),
                        json.dumps(list(move.target)),
                        move.size_bytes,
                        TaskState.PENDING.value,
                    ),
                )
                self._log(conn, lastrowid(task), None, TaskState.PENDING, now)
            for throttle in throttles:
                self._insert_throttle(conn, request_id, throttle)
        return request_id

    def request(self, request_id: int) -> RequestRecord:
        """The request ``request_id``.

        Raises:
            PreconditionError: there is no such request.
        """
        row = self._conn.execute(f"SELECT {REQUEST_COLUMNS} FROM requests WHERE id = ?", (request_id,))
        found = row.fetchone()
        if found is None:
            raise PreconditionError(f"no request {request_id} in {self.path}", hint="see 'ferry requests'")
        return request_from_row(found)

    def requests(self, states: Iterable[RequestState] | None = None) -> tuple[RequestRecord, ...]:
        """All requests (or those in ``states``), oldest first."""
        sql = f"SELECT {REQUEST_COLUMNS} FROM requests"
        params: tuple[str, ...] = ()
        if states is not None:
            params = tuple(s.value for s in states)
            sql += f" WHERE state IN ({marks(params)})"
        return tuple(request_from_row(r) for r in self._conn.execute(sql + " ORDER BY id", params))

    def set_request_state(self, request_id: int, new: RequestState, *, note: str | None = None) -> None:
        """Move a request to ``new``; final states stamp ``finished_at``.

        Raises:
            IllegalTransition: the transition table forbids it.
            PreconditionError: there is no such request.
        """
        with self.transaction() as conn:
            current = self.request(request_id).state
            check_request_transition(current, new, f"request {request_id}")
            finished = self._clock() if new.is_final else None
            conn.execute(
                "UPDATE requests SET state = ?, finished_at = ?, note = COALESCE(?, note) WHERE id = ?",
                (new.value, finished, note, request_id),
            )

    # -- tasks -----------------------------------------------------------------------------------

    def tasks(
        self, request_id: int | None = None, states: Iterable[TaskState] | None = None
    ) -> tuple[TaskRecord, ...]:
        """Tasks of one request (all requests when None), optionally only those in ``states``."""
        where: list[str] = []
        params: list[object] = []
        if request_id is not None:
            where.append("request_id = ?")
            params.append(request_id)
        if states is not None:
            values = [s.value for s in states]
            where.append(f"state IN ({marks(values)})")
            params.extend(values)
        sql = f"SELECT {TASK_COLUMNS} FROM tasks"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return tuple(task_from_row(r) for r in self._conn.execute(sql + " ORDER BY id", params))

    def task(self, task_id: int) -> TaskRecord:
        """The task ``task_id``.

        Raises:
            PreconditionError: there is no such task.
        """
        found = self._conn.execute(f"SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if found is None:
            raise PreconditionError(f"no task {task_id} in {self.path}")
        return task_from_row(found)

    def active_tasks(self, tp: TopicPartition) -> tuple[TaskRecord, ...]:
        """Submitted tasks of ``tp`` in any request: the moves ferry has in flight for it."""
        rows = self._conn.execute(
            f"SELECT {TASK_COLUMNS} FROM tasks WHERE topic = ? AND partition = ? AND state = ? ORDER BY id",
            (tp.topic, tp.partition, TaskState.SUBMITTED.value),
        )
        return tuple(task_from_row(r) for r in rows)

    def moving_partitions(self) -> frozenset[TopicPartition]:
        """Partitions with a submitted task in any request: what ferry has in flight."""
        rows = self._conn.execute(
            "SELECT DISTINCT topic, partition FROM tasks WHERE state = ?", (TaskState.SUBMITTED.value,)
        )
        return frozenset(TopicPartition(topic, partition) for topic, partition in rows)

    def set_task_states(
        self,
        task_ids: Sequence[int],
        new: TaskState,
        *,
        batch: int | None = None,
        error: str | None = None,
    ) -> None:
        """Move every task in ``task_ids`` to ``new`` in one transaction (all or none).

        ``batch`` is stamped when tasks are submitted; ``error`` says why a task failed.

        Raises:
            IllegalTransition: the table forbids the transition for any of the tasks.
        """
        now = self._clock()
        with self.transaction() as conn:
            for task_id in task_ids:
                self._transition(conn, task_id, new, now, batch=batch, error=error)

    def transition_if(
        self,
        task_ids: Sequence[int],
        current: TaskState | Iterable[TaskState],
        new: TaskState,
        *,
        batch: int | None = None,
        error: str | None = None,
    ) -> tuple[int, ...]:
        """Move the tasks of ``task_ids`` that are still in ``current`` to ``new``; skip the others.

        For changes another process may race: an executor claiming pending tasks while ``ferry
        cancel`` cancels them, or two cancels at once. Whoever commits first wins, the other sees
        the task's new state and leaves it alone.

        Returns:
            The ids that changed, in ``task_ids`` order.
        """
        allowed = {current} if isinstance(current, TaskState) else set(current)
        now = self._clock()
        changed: list[int] = []
        with self.transaction() as conn:
            for task_id in task_ids:
                row = conn.execute("SELECT state FROM tasks WHERE id = ?", (task_id,)).fetchone()
                if row is not None and TaskState(row[0]) in allowed:
                    self._transition(conn, task_id, new, now, batch=batch, error=error)
                    changed.append(task_id)
        return tuple(changed)

    def supersede(self, old_task_id: int, new_task_id: int) -> None:
        """Cancel ``old_task_id`` because ``new_task_id`` (a later request) re-targets its partition.

        Raises:
            IllegalTransition: the old task is already final.
            PreconditionError: the two tasks are not of the same partition.
        """
        old, new = self.task(old_task_id), self.task(new_task_id)
        if old.tp != new.tp:
            raise PreconditionError(
                f"task {new_task_id} ({new.tp}) cannot supersede {old_task_id} ({old.tp})"
            )
        now = self._clock()
        with self.transaction() as conn:
            self._transition(conn, old_task_id, TaskState.CANCELLED, now)
            conn.execute("UPDATE tasks SET superseded_by = ? WHERE id = ?", (new_task_id, old_task_id))

    def task_log(self, task_id: int) -> tuple[tuple[TaskState | None, TaskState, float], ...]:
        """Every transition of a task, oldest first: (from, to, at)."""
        rows = self._conn.execute(
            "SELECT from_state, to_state, at FROM task_log WHERE task_id = ? ORDER BY rowid", (task_id,)
        )
        return tuple((TaskState(f) if f else None, TaskState(t), at) for f, t, at in rows)

    def _transition(
        self,
        conn: sqlite3.Connection,
        task_id: int,
        new: TaskState,
        now: float,
        *,
        batch: int | None = None,
        error: str | None = None,
    ) -> None:
        row = conn.execute("SELECT state FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise PreconditionError(f"no task {task_id} in {self.path}")
        current = TaskState(row[0])
        check_task_transition(current, new, f"task {task_id}")
        conn.execute(
            "UPDATE tasks SET state = ?, batch = COALESCE(?, batch), error = COALESCE(?, error),"
            " submitted_at = CASE WHEN ? = 'submitted' THEN ? ELSE submitted_at END,"
            " finished_at = CASE WHEN ? THEN ? ELSE finished_at END WHERE id = ?",
            (new.value, batch, error, new.value, now, new.is_final, now, task_id),
        )
        self._log(conn, task_id, current, new, now)

    @staticmethod
    def _log(
        conn: sqlite3.Connection, task_id: int, old: TaskState | None, new: TaskState, at: float
    ) -> None:
        conn.execute(
            "INSERT INTO task_log (task_id, from_state, to_state, at) VALUES (?, ?, ?, ?)",
            (task_id, old.value if old else None, new.value, at),
        )

    # -- throttles -------------------------------------------------------------------------------

    def throttles(self, request_id: int) -> tuple[ThrottleRecord, ...]:
        """The throttle configs request ``request_id`` owns, in config order."""
        rows = self._conn.execute(
            "SELECT resource_type, resource_name, config_key, previous, planned, applied FROM throttles"
            " WHERE request_id = ? ORDER BY resource_type, resource_name, config_key",
            (request_id,),
        )
        return tuple(
            ThrottleRecord(ConfigKey(ResourceType(t), n, k), previous, planned, applied)
            for t, n, k, previous, planned, applied in rows
        )

    def set_throttles_applied(self, request_id: int, applied: Mapping[ConfigKey, str | None]) -> None:
        """Record what ferry wrote (a value) or restored (None) for each config, in one transaction.

        Call it *before* writing to the cluster when setting (so a crash leaves a record to clean up)
        and *after* restoring (so a crash leaves the record until the restore is done).

        Raises:
            PreconditionError: a config is not one the request recorded up front.
        """
        with self.transaction() as conn:
            for config, value in applied.items():
                cursor = conn.execute(
                    "UPDATE throttles SET applied = ? WHERE request_id = ? AND resource_type = ?"
                    " AND resource_name = ? AND config_key = ?",
                    (value, request_id, config.resource_type.value, config.resource_name, config.key),
                )
                if cursor.rowcount != 1:
                    raise PreconditionError(f"request {request_id} recorded no throttle {config}")

    @staticmethod
    def _insert_throttle(conn: sqlite3.Connection, request_id: int, throttle: ThrottleRecord) -> None:
        c = throttle.config
        conn.execute(
            "INSERT INTO throttles (request_id, resource_type, resource_name, config_key, previous,"
            " planned, applied) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                request_id,
                c.resource_type.value,
                c.resource_name,
                c.key,
                throttle.previous,
                throttle.planned,
                throttle.applied,
            ),
        )
