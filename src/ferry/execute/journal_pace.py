"""The journal's pace decisions: what ``--pace auto`` set per broker and role, when and why.

Written by the executor at every control period; read back to share throttles between requests
(another request writing a shared rate uses this request's latest paced value), by ``ferry report
--journal`` to draw each throttle against the copy rate, and by operators asking why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ferry.execute.journal_base import JournalBase
from ferry.execute.pace.controller import Pace, Reading, Role


@dataclass(frozen=True, slots=True)
class PaceRecord:
    """One decision: at ``at`` (seconds since the epoch) ``broker``'s ``role`` throttle was set to
    ``rate`` with ``concurrency`` moves, by rule ``state`` for ``reason``, having read ``achieved``
    and ``produce`` bytes/s."""

    at: float
    broker: int
    role: Role
    rate: int
    concurrency: int
    state: str
    reason: str
    achieved: float | None
    produce: float | None


class PaceTable(JournalBase):
    """Reads and writes of the ``pace`` table."""

    def record_pace(
        self,
        request_id: int,
        decisions: Mapping[tuple[int, Role], Pace],
        readings: Mapping[tuple[int, Role], Reading],
    ) -> None:
        """One period's decisions, all at the journal's clock's now."""
        now = self._clock()
        rows = []
        for (broker, role), pace in sorted(decisions.items()):
            reading = readings.get((broker, role))
            rows.append(
                (
                    request_id,
                    now,
                    broker,
                    role.value,
                    pace.rate,
                    pace.concurrency,
                    pace.state.value,
                    pace.reason,
                    reading.achieved if reading else None,
                    reading.produce if reading else None,
                )
            )
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO pace (request_id, at, broker, role, rate, concurrency, state, reason,"
                " achieved, produce) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def pace_records(self, request_id: int) -> tuple[PaceRecord, ...]:
        """Request ``request_id``'s decisions in time order."""
        rows = self._conn.execute(
            "SELECT at, broker, role, rate, concurrency, state, reason, achieved, produce FROM pace"
            " WHERE request_id = ? ORDER BY at, rowid",
            (request_id,),
        )
        return tuple(PaceRecord(r[0], r[1], Role(r[2]), *r[3:]) for r in rows)

    def paced_rates(self, request_id: int) -> dict[tuple[int, Role], int]:
        """The latest rate per broker and role that request ``request_id``'s pace set."""
        rows = self._conn.execute(
            "SELECT broker, role, rate FROM pace WHERE request_id = ? ORDER BY at, rowid",
            (request_id,),
        )
        return {(broker, Role(role)): rate for broker, role, rate in rows}
