"""The journal's progress samples: bytes per receiving broker and the ETA shown, over a run.

Written by the executor every few polls (:data:`SAMPLE_EVERY_S`), read by ``ferry report
--journal`` to draw the copy against the throttle and the ETA against the real end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ferry.execute.journal_base import JournalBase
from ferry.execute.progress import Progress

SAMPLE_EVERY_S = 5.0
"""Seconds between samples kept: a day-long move of 200 brokers stays a few MB of journal."""


@dataclass(frozen=True, slots=True)
class ProgressSample:
    """What one receiving broker had copied at ``at`` (seconds since the epoch), and the request's
    ETA shown then (None while there was no rate)."""

    at: float
    broker: int
    done: int
    total: int
    eta_s: float | None


class ProgressTable(JournalBase):
    """Reads and writes of the ``progress`` table."""

    def record_progress(self, request_id: int, brokers: Mapping[int, Progress], eta_s: float | None) -> None:
        """One sample per receiving broker, all at the journal's clock's now."""
        now = self._clock()
        rows = [(request_id, now, b, p.done, p.total, eta_s) for b, p in sorted(brokers.items())]
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO progress (request_id, at, broker, done_bytes, total_bytes, eta_s)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )

    def progress_samples(self, request_id: int) -> tuple[ProgressSample, ...]:
        """Request ``request_id``'s samples in time order."""
        rows = self._conn.execute(
            "SELECT at, broker, done_bytes, total_bytes, eta_s FROM progress WHERE request_id = ?"
            " ORDER BY at, broker",
            (request_id,),
        )
        return tuple(ProgressSample(*row) for row in rows)
