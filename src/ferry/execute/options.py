"""``ExecuteOptions``: how a request runs, and its JSON form in the journal's ``options_json``.

A module of its own so that everything reading a request's options (the executor, the throttle
sharing between requests, ``ferry progress``) gets the typed value instead of reading the stored
JSON by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ferry.execute.batching import Limits
from ferry.execute.pace.settings import PaceSettings
from ferry.execute.strategies import Ordering


@dataclass(frozen=True, slots=True)
class ExecuteOptions:
    """How to run a request; stored in the journal with it (:meth:`to_json`)."""

    throttle: int | None = None
    limits: Limits = field(default_factory=Limits)
    ordering: Ordering = field(default_factory=Ordering)
    additional: bool = False
    elect: bool = True
    poll_interval_s: float = 1.0
    force: str | None = None
    """Why the safety checks were overridden (None: they were not)."""
    one_replica_at_a_time: bool = False
    """Each move as single-replica reassignments, one after the other (:mod:`ferry.execute.steps`)."""
    pace: PaceSettings | None = None
    """``--pace auto``: throttles and concurrency per broker chosen as the run goes, starting
    from ``throttle`` (None: the static ``throttle`` for the whole run)."""
    dir_throttle: int | None = None
    """Bytes/s a broker copies between its log dirs (None: ``throttle``)."""
    max_dir_moves_per_broker: int = 1
    """Replicas copied between the log dirs of one broker at once."""
    max_dir_move_brokers: int | None = None
    """Brokers copying between their log dirs at once (None: any number; 1: one broker at a time)."""

    @property
    def dir_rate(self) -> int | None:
        """The log-dir throttle: ``dir_throttle``, else the replication ``throttle``."""
        return self.dir_throttle if self.dir_throttle is not None else self.throttle

    def to_json(self) -> dict[str, Any]:
        """The stored form; its keys and values are the journal's, so keep them stable."""
        return {
            "throttle": self.throttle,
            "max_moves_per_broker": self.limits.max_moves_per_broker,
            "max_moves": self.limits.max_moves,
            "order": list(self.ordering.names),
            "additional": self.additional,
            "elect": self.elect,
            "poll_interval_s": self.poll_interval_s,
            "force": self.force,
            "pace": self.pace.to_json() if self.pace else None,
            "one_replica_at_a_time": self.one_replica_at_a_time,
            "dir_throttle": self.dir_throttle,
            "max_dir_moves_per_broker": self.max_dir_moves_per_broker,
            "max_dir_move_brokers": self.max_dir_move_brokers,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExecuteOptions:
        """The options of a stored request; a key an older ferry did not write takes its default."""
        return cls(
            throttle=data.get("throttle"),
            limits=Limits(data.get("max_moves_per_broker", 5), data.get("max_moves")),
            ordering=Ordering(tuple(data.get("order", ("smallest-first",)))),
            additional=bool(data.get("additional", False)),
            elect=bool(data.get("elect", True)),
            poll_interval_s=float(data.get("poll_interval_s", 1.0)),
            force=data.get("force"),
            pace=PaceSettings.from_json(data["pace"]) if data.get("pace") else None,
            one_replica_at_a_time=bool(data.get("one_replica_at_a_time", False)),
            dir_throttle=data.get("dir_throttle"),
            max_dir_moves_per_broker=int(data.get("max_dir_moves_per_broker", 1)),
            max_dir_move_brokers=data.get("max_dir_move_brokers"),
        )
