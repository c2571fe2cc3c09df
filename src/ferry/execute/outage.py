"""Riding out a cluster that cannot be reached for a while: a broker restarting, a failover."""

from __future__ import annotations

from dataclasses import dataclass

from ferry.errors import KafkaError
from ferry.execute.events import ClusterUnreachable

RIDE_OUT_S = 300.0
"""How long a run goes on polling a cluster it cannot reach before it ends interrupted."""


@dataclass
class Outage:
    """Polls failing in a row, and how long they may go on failing before the run gives up."""

    ride_out_s: float
    since: float | None = None

    def failed(self, error: KafkaError, now: float, request_id: int) -> ClusterUnreachable:
        """Count a failed poll; the event that says so, with how long polls have been failing.

        Raises:
            KafkaError: ``error`` itself, when it will not pass by itself (not authorized, an
                invalid request) or polls have been failing for ``ride_out_s`` already.
        """
        self.since = now if self.since is None else self.since
        if not error.transient or now - self.since >= self.ride_out_s:
            raise error
        failing_for = now - self.since
        return ClusterUnreachable(request_id, str(error), failing_for, self.ride_out_s - failing_for)

    def ended(self) -> None:
        """A poll worked."""
        self.since = None
