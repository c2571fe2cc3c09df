"""``PaceSettings``: how ``--pace auto`` runs (stored with the request's options in the journal)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import time
from typing import Any

from ferry.errors import UsageError
from ferry.execute.pace.schedule import Schedule

DEFAULT_PERIOD_S = 20.0
"""Between Kafka's 11-second throttle window and ``replica.lag.time.max.ms`` (30 s)."""
DEFAULT_START = 10 * 1000**2
"""The starting rate when ``--throttle`` is not given: 10 MB/s per broker and role."""


@dataclass(frozen=True, slots=True)
class PaceSettings:
    """``--pace auto`` with its ceiling (``--max-throttle``, ``--schedule``) and control period."""

    max_throttle: int | None = None
    schedule: Schedule | None = None
    period_s: float = DEFAULT_PERIOD_S

    def __post_init__(self) -> None:
        if self.max_throttle is not None and self.max_throttle < 1:
            raise UsageError("--max-throttle must be a positive rate")
        if self.period_s <= 0:
            raise UsageError("--pace-period must be positive")

    def ceiling_at(self, at: time) -> int | None:
        """The lower of ``--max-throttle`` and the schedule's window at local time ``at``."""
        scheduled = self.schedule.ceiling_at(at) if self.schedule else None
        ceilings = [c for c in (self.max_throttle, scheduled) if c is not None]
        return min(ceilings) if ceilings else None

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": "auto",
            "max_throttle": self.max_throttle,
            "schedule": self.schedule.to_text() if self.schedule else None,
            "period_s": self.period_s,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PaceSettings:
        schedule = data.get("schedule")
        return cls(
            max_throttle=data.get("max_throttle"),
            schedule=Schedule.parse(schedule) if schedule else None,
            period_s=float(data.get("period_s", DEFAULT_PERIOD_S)),
        )
