"""The journal's throttle configs: each request's pre-existing, planned and applied values."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from ferry.errors import PreconditionError
from ferry.execute.journal_base import JournalBase
from ferry.execute.records import ConfigKey, ResourceType, ThrottleRecord


class ThrottleTable(JournalBase):
    """Reads and writes of the ``throttles`` table."""

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
