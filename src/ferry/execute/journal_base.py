"""The connection every part of the journal shares, and its one way to write: a transaction.

:class:`~ferry.execute.journal.Journal` is assembled from one class per table group
(:mod:`.journal_tasks`, :mod:`.journal_throttles`) on top of this one, so each file stays about
one kind of record while every write still goes through the same ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ferry.errors import InputError


def locked(path: Path, exc: sqlite3.OperationalError) -> InputError | None:
    """The error for a journal another program kept locked past the busy timeout; None when
    ``exc`` is about something else."""
    if "locked" not in str(exc) and "busy" not in str(exc):
        return None
    return InputError(
        f"{path}: locked by another program ({exc})",
        hint="something holds a write lock on the journal (an sqlite3 shell, a backup tool): "
        "close it and run again",
    )


class JournalBase:
    """An open journal connection, its file and its clock."""

    def __init__(self, conn: sqlite3.Connection, path: Path, clock: Callable[[], float]) -> None:
        self._conn = conn
        self.path = path
        self._clock = clock

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT), rolled back on any exception.

        Raises:
            InputError: another program kept the journal locked past the busy timeout.
        """
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise (locked(self.path, exc) or exc) from exc
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")
