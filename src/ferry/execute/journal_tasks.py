"""The journal's tasks: one per move, with the transition log that audits every state change.

State changes go through :mod:`ferry.execute.states`; an illegal one raises before anything is written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from ferry.errors import PreconditionError
from ferry.execute.journal_base import JournalBase
from ferry.execute.records import TaskRecord
from ferry.execute.schema import TASK_COLUMNS, marks, task_from_row
from ferry.execute.states import TASK_CORRECTIONS, TaskState, check_task_transition
from ferry.model import TopicPartition


class TaskTable(JournalBase):
    """Reads and transitions of the ``tasks`` table (and ``task_log``)."""

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
        return tuple(
            task_from_row(r, str(self.path)) for r in self._conn.execute(sql + " ORDER BY id", params)
        )

    def task(self, task_id: int) -> TaskRecord:
        """The task ``task_id``.

        Raises:
            PreconditionError: there is no such task.
        """
        found = self._conn.execute(f"SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if found is None:
            raise PreconditionError(f"no task {task_id} in {self.path}")
        return task_from_row(found, str(self.path))

    def active_tasks(self, tp: TopicPartition) -> tuple[TaskRecord, ...]:
        """Submitted tasks of ``tp`` in any request: the moves ferry has in flight for it."""
        rows = self._conn.execute(
            f"SELECT {TASK_COLUMNS} FROM tasks WHERE topic = ? AND partition = ? AND state = ? ORDER BY id",
            (tp.topic, tp.partition, TaskState.SUBMITTED.value),
        )
        return tuple(task_from_row(r, str(self.path)) for r in rows)

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

    def correct_to_done(self, task_ids: Sequence[int]) -> tuple[int, ...]:
        """Amend cancelled tasks (not superseded) whose partition is at their target to ``done``.

        Only for a move that finished while a cancel marked its task (see
        :data:`~ferry.execute.states.TASK_CORRECTIONS`); the caller has seen the target on the cluster.

        Returns:
            The ids amended; others (not cancelled, superseded, unknown) are left alone.
        """
        now = self._clock()
        amended: list[int] = []
        with self.transaction() as conn:
            for task_id in task_ids:
                row = conn.execute(
                    "SELECT state, superseded_by FROM tasks WHERE id = ?", (task_id,)
                ).fetchone()
                if row is None or row[1] is not None:
                    continue
                current = TaskState(row[0])
                if (current, TaskState.DONE) not in TASK_CORRECTIONS:
                    continue
                conn.execute(
                    "UPDATE tasks SET state = ?, finished_at = ? WHERE id = ?",
                    (TaskState.DONE.value, now, task_id),
                )
                self._log(conn, task_id, current, TaskState.DONE, now)
                amended.append(task_id)
        return tuple(amended)

    def supersede(self, old_task_id: int, new_task_id: int) -> None:
        """Cancel ``old_task_id`` because ``new_task_id`` (a later request) re-targets its partition;
        an old task already final (its executor or a ``ferry cancel`` ended it since it was read
        as active) is left as it is.

        Raises:
            PreconditionError: the two tasks are not of the same partition.
        """
        old, new = self.task(old_task_id), self.task(new_task_id)
        if old.tp != new.tp:
            raise PreconditionError(
                f"task {new_task_id} ({new.tp}) cannot supersede {old_task_id} ({old.tp})"
            )
        with self.transaction() as conn:
            row = conn.execute("SELECT state FROM tasks WHERE id = ?", (old_task_id,)).fetchone()
            if not TaskState(row[0]).is_final:
                self._supersede(conn, old_task_id, new_task_id, self._clock())

    def _supersede_pending(
        self, conn: sqlite3.Connection, tp: TopicPartition, task_id: int, now: float
    ) -> None:
        """Supersede every pending task of ``tp`` older than ``task_id`` (a new request's task)."""
        rows = conn.execute(
            "SELECT id FROM tasks WHERE topic = ? AND partition = ? AND state = ? AND id < ?",
            (tp.topic, tp.partition, TaskState.PENDING.value, task_id),
        ).fetchall()
        for (old_id,) in rows:
            self._supersede(conn, old_id, task_id, now)

    def _supersede(self, conn: sqlite3.Connection, old_task_id: int, new_task_id: int, now: float) -> None:
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
