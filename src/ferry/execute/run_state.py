"""What the executor keeps in memory while it runs one request."""

from __future__ import annotations

from dataclasses import dataclass, field

from ferry.execute import sharing
from ferry.execute.options import ExecuteOptions
from ferry.execute.outage import RIDE_OUT_S, Outage
from ferry.execute.progress import History
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
    ended_at: dict[int, float] = field(default_factory=dict)
    freeze: FreezeState | None = None  # the freeze holding submission back, while one does
    # Tasks the journal calls submitted that the cluster never got (found by resume), by id: sent
    # at the first poll the cluster is not frozen, and not taken for ended before then.
    unsent: set[int] = field(default_factory=set)
    waiting: Waiting | None = None
    eta_s: float | None = None
    sampled_at: float | None = None  # when progress last went to the journal (executor clock)
    outage: Outage = field(default_factory=lambda: Outage(RIDE_OUT_S))
