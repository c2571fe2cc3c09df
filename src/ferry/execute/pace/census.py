"""Every partition's ISR and ELR, and every topic's min ISR, read in a thread of its own.

The pace judges a broker by the partitions it holds that the request does not move (collateral
ISR loss, partitions at or under min ISR), so it reads every topic's partitions
(DescribeTopicPartitions, paged). That read grows with the cluster: 0.56 s at 20,000 partitions on
the sandbox (docs/benchmarks.md, "Load"), almost all of it decoding the answers, so about half a
minute at a million. Read in the executor's loop it held the run's polls (progress, the freeze
flag, cancels) for that long. Here it runs beside the loop: :meth:`Census.begin` starts one read,
and :meth:`Census.take` hands its outcome over once done, waiting at most the time it is given.
A cluster whose census is quick (the common case) is read as before: begun and taken in the same
step, within :data:`WAIT_S`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from time import perf_counter

from ferry.kafka.admin import ClusterAdmin, PartitionHealth

ISR_SHARE = 0.2
"""Most of a run's time the census may take: the next one begins no sooner than the last one's
duration over this after it began. The read is mostly the client decoding, so while it runs the
loop's own work shares the interpreter with it."""

WAIT_S = 0.5
"""Seconds a step waits for a census it began: a small cluster's census is done well within it
(and read at once, as if in the loop); a large one's is taken at a later step."""

MIN_ISR_EVERY = 10
"""Censuses between reads of every topic's min ISR (a config that rarely changes)."""


@dataclass(frozen=True, slots=True)
class Count:
    """One census: every partition's state, and every topic's min ISR where read this time."""

    health: tuple[PartitionHealth, ...]
    min_isr: Mapping[str, int] | None
    cost: float
    """Seconds the read of every ISR took (the rare min ISR read not counted)."""


@dataclass
class Census:
    """At most one census in flight; its duration spaces the next (:data:`ISR_SHARE`)."""

    timer: Callable[[], float] = perf_counter
    """Seconds, to time each census by."""
    cost: float = 0.0
    """Seconds the last census took."""
    began_at: float = float("-inf")
    """Executor clock when the last census began."""
    _counted: int = 0
    _worker: threading.Thread | None = None
    _outcome: list[Count | BaseException] = field(default_factory=list)

    def spacing(self) -> float:
        """Seconds from one census's start to the next's, so that they take at most
        :data:`ISR_SHARE` of the run."""
        return self.cost / ISR_SHARE

    def in_flight(self) -> bool:
        return self._worker is not None

    def begin(self, admin: ClusterAdmin, now: float) -> None:
        """Start a census (one at a time: a call while one is in flight does nothing)."""
        if self._worker is not None:
            return
        with_min_isr = self._counted % MIN_ISR_EVERY == 0
        self._counted += 1
        self.began_at = now
        outcome = self._outcome = []

        def count() -> None:
            try:
                started = self.timer()
                health = admin.describe_health()
                cost = self.timer() - started
                min_isr = admin.describe_min_insync({h.tp.topic for h in health}) if with_min_isr else None
                outcome.append(Count(health, min_isr, cost))
            except BaseException as exc:  # handed to the loop's thread by take()
                outcome.append(exc)

        self._worker = threading.Thread(target=count, name="ferry-pace: census", daemon=True)
        self._worker.start()

    def take(self, wait_s: float = 0.0) -> Count | None:
        """The census in flight, once done (waiting at most ``wait_s``); None while it runs or
        when none was begun. Raises what the census raised (a refused read ends the run as it
        would in the loop)."""
        worker = self._worker
        if worker is None:
            return None
        worker.join(wait_s)
        if worker.is_alive():
            return None
        self._worker = None
        done = self._outcome[0]
        if isinstance(done, BaseException):
            raise done
        self.cost = done.cost
        return done
