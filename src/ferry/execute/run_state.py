"""What the executor keeps in memory while it runs one request."""

from __future__ import annotations

from dataclasses import dataclass, field

from ferry.execute import sharing
from ferry.execute.options import ExecuteOptions
from ferry.execute.outage import RIDE_OUT_S, Outage
from ferry.execute.pace.pacer import Pacer
from ferry.execute.progress import History, ReplicaProgress
from ferry.execute.tiered import TieredCopies
from ferry.execute.waiting import Waiting
from ferry.kafka.freeze import FreezeState


@dataclass
class RunState:
    """Mutable scratch state of one executor run (never shared, never returned)."""

    request_id: int
    options: ExecuteOptions
    throttles: sharing.RequestThrottles
    batches: int = 0
    history: History = field(default_factory=History)
    # The last poll's measurement: a broker that does not answer the next keeps its figures.
    measured: tuple[ReplicaProgress, ...] = ()
    # Brokers of the moves that did not answer that measurement in time: no throttle written to them.
    silent: frozenset[int] = frozenset()
    ended_at: dict[int, float] = field(default_factory=dict)
    freeze: FreezeState | None = None  # the freeze holding submission back, while one does
    # Tasks the journal calls submitted that the cluster never got (found by resume), by id: sent
    # at the first poll the cluster is not frozen, and not taken for ended before then.
    unsent: set[int] = field(default_factory=set)
    # Tasks whose submission failed on the way, by id, with when: it may still arrive later.
    in_doubt: dict[int, float] = field(default_factory=dict)
    waiting: Waiting | None = None
    eta_s: float | None = None
    sampled_at: float | None = None  # when progress last went to the journal (executor clock)
    outage: Outage = field(default_factory=lambda: Outage(RIDE_OUT_S))
    pacer: Pacer | None = None  # --pace auto
    # What new replicas of tiered topics copy (read at the first poll; None: nothing tiered).
    tiered: TieredCopies | None = None
    tiered_read: bool = False
    # --one-replica-at-a-time: the step (1-based) each submitted stepped task has in flight.
    step_sent: dict[int, int] = field(default_factory=dict)

    def submission_failed(self, task_ids: list[int], now: float) -> None:
        """A submission of ``task_ids`` failed on the way: send it again, and watch for it arriving late."""
        self.unsent.update(task_ids)
        self.in_doubt.update(dict.fromkeys(task_ids, now))
