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
               state, batch, superseded_by -> tasks, submitted_at, finished_at, error, steps_json
               (schema version 3), log_dirs_json, original_dirs_json (schema version 4)
    throttles  request_id -> requests, resource_type, resource_name, config_key,
               previous, planned, applied
    task_log   every task transition (task_id, from_state, to_state, at): the audit trail
    progress   request_id -> requests, at, broker, done_bytes, total_bytes, eta_s: the run's
               timeline, one row per receiving broker every few seconds (schema version 2)
    pace       request_id -> requests, at, broker, role, rate, concurrency, state, reason, achieved,
               produce: every decision of ``--pace auto`` (schema version 3)

Room for interruptions: a rollback request names its ``origin_request``; a task re-targeted
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
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from ferry.errors import InputError, PreconditionError
from ferry.execute.journal_base import locked
from ferry.execute.journal_pace import PaceTable
from ferry.execute.journal_progress import ProgressTable
from ferry.execute.journal_tasks import TaskTable
from ferry.execute.journal_throttles import ThrottleTable
from ferry.execute.options import ExecuteOptions
from ferry.execute.records import RequestKind, RequestRecord, ThrottleRecord
from ferry.execute.schema import (
    BUSY_TIMEOUT_MS,
    MIGRATIONS,
    REQUEST_COLUMNS,
    SCHEMA_VERSION,
    lastrowid,
    marks,
    request_from_row,
    statements,
)
from ferry.execute.states import (
    RequestState,
    TaskState,
    check_request_transition,
)
from ferry.execute.steps import Steps
from ferry.formats import dump_reassignment
from ferry.model import Move, Plan, TopicPartition


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


class Journal(TaskTable, ThrottleTable, ProgressTable, PaceTable):
    """The journal on one SQLite file; open it with :meth:`open`, close it (or use ``with``).

    Every public write is one transaction: after it returns, it is on disk.
    """

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
            busy = locked(path, exc) if isinstance(exc, sqlite3.OperationalError) else None
            raise busy or InputError(
                f"{path}: not a ferry journal ({exc})", hint="pass another --journal"
            ) from exc
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
        options: ExecuteOptions | None = None,
        throttles: Iterable[ThrottleRecord] = (),
        kind: RequestKind = RequestKind.EXECUTE,
        origin_request: int | None = None,
        steps: Mapping[TopicPartition, Steps] | None = None,
        original_dirs: Mapping[TopicPartition, Mapping[int, str]] | None = None,
    ) -> int:
        """Record a request, a pending task per move, and its throttles (with the pre-existing values).

        All in one transaction, before anything is submitted: if ferry dies afterwards, the journal
        knows the originals to roll back to and the throttle values to restore. A move of an
        earlier request still pending for one of these partitions is superseded (cancelled, linked
        to the new task) in the same transaction: the latest request says where a partition goes,
        so the earlier one must never submit it, even after the new move has finished.

        ``steps`` holds the single-replica steps of the moves made one replica at a time;
        ``original_dirs`` the dir of each replica of the partitions whose moves name dirs.

        Returns:
            The new request id (larger than every earlier one, even deleted ones).
        """
        now = self._clock()
        steps, dirs = steps or {}, original_dirs or {}
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
                    json.dumps((options or ExecuteOptions()).to_json(), sort_keys=True),
                    RequestState.RECORDED.value,
                    now,
                ),
            )
            request_id = lastrowid(cursor)
            for move in plan.moves:
                task_id = self._insert_task(conn, request_id, move, steps.get(move.tp), dirs.get(move.tp))
                self._log(conn, task_id, None, TaskState.PENDING, now)
                self._supersede_pending(conn, move.tp, task_id, now)
            for throttle in throttles:
                self._insert_throttle(conn, request_id, throttle)
        return request_id

    @staticmethod
    def _insert_task(
        conn: sqlite3.Connection,
        request_id: int,
        move: Move,
        steps: Steps | None,
        original_dirs: Mapping[int, str] | None,
    ) -> int:
        """A pending task for ``move``; its id."""
        task = conn.execute(
            "INSERT INTO tasks (request_id, topic, partition, original_json, target_json,"
            " size_bytes, state, steps_json, log_dirs_json, original_dirs_json)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                request_id,
                move.tp.topic,
                move.tp.partition,
                json.dumps(list(move.original)),
                json.dumps(list(move.target)),
                move.size_bytes,
                TaskState.PENDING.value,
                json.dumps([list(step) for step in steps]) if steps else None,
                json.dumps(list(move.log_dirs)) if move.log_dirs is not None else None,
                json.dumps({str(b): d for b, d in sorted(original_dirs.items())}) if original_dirs else None,
            ),
        )
        return lastrowid(task)

    def request(self, request_id: int) -> RequestRecord:
        """The request ``request_id``.

        Raises:
            PreconditionError: there is no such request.
        """
        row = self._conn.execute(f"SELECT {REQUEST_COLUMNS} FROM requests WHERE id = ?", (request_id,))
        found = row.fetchone()
        if found is None:
            raise PreconditionError(f"no request {request_id} in {self.path}", hint="see 'ferry requests'")
        return request_from_row(found, str(self.path))

    def requests(self, states: Iterable[RequestState] | None = None) -> tuple[RequestRecord, ...]:
        """All requests (or those in ``states``), oldest first."""
        sql = f"SELECT {REQUEST_COLUMNS} FROM requests"
        params: tuple[str, ...] = ()
        if states is not None:
            params = tuple(s.value for s in states)
            sql += f" WHERE state IN ({marks(params)})"
        return tuple(
            request_from_row(r, str(self.path)) for r in self._conn.execute(sql + " ORDER BY id", params)
        )

    def set_request_state(self, request_id: int, new: RequestState, *, note: str | None = None) -> None:
        """Move a request to ``new``; final states stamp ``finished_at``.

        Raises:
            IllegalTransition: the transition table forbids it.
            PreconditionError: there is no such request.
        """
        with self.transaction() as conn:
            self._set_request_state(conn, request_id, new, note)

    def end_request_unless_final(
        self, request_id: int, new: RequestState, *, note: str | None = None
    ) -> bool:
        """Move a request to ``new`` unless it is final already, in one transaction: False when
        another process (a ``ferry cancel``, or the executor it raced) ended it first, whose
        outcome then stands. A read of the state before :meth:`set_request_state` would leave a
        window for that process between the read and the write.

        Raises:
            IllegalTransition: the transition table forbids it from a state not final.
            PreconditionError: there is no such request.
        """
        with self.transaction() as conn:
            current = self.request(request_id).state
            if current.is_final:
                return False
            self._set_request_state(conn, request_id, new, note, current)
            return True

    def _set_request_state(
        self,
        conn: sqlite3.Connection,
        request_id: int,
        new: RequestState,
        note: str | None,
        current: RequestState | None = None,
    ) -> None:
        """``current``: the state already read in this transaction, if it was."""
        if current is None:
            current = self.request(request_id).state
        check_request_transition(current, new, f"request {request_id}")
        finished = self._clock() if new.is_final else None
        conn.execute(
            "UPDATE requests SET state = ?, finished_at = ?, note = COALESCE(?, note) WHERE id = ?",
            (new.value, finished, note, request_id),
        )

    def set_request_options(self, request_id: int, options: ExecuteOptions) -> None:
        """Run request ``request_id`` under ``options`` from now on (``ferry resume --pace``).

        Raises:
            PreconditionError: there is no such request.
        """
        with self.transaction() as conn:
            self.request(request_id)
            conn.execute(
                "UPDATE requests SET options_json = ? WHERE id = ?",
                (json.dumps(options.to_json()), request_id),
            )
