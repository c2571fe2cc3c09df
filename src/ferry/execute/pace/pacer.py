"""The pace controller at work in a run: read the cluster every control period, decide, remember.

The executor asks :meth:`Pacer.step` at every poll; at most once per period (:meth:`Pacer.period`:
shorter during slow start) it reads, through the Admin API only:

* DescribeLogDirs of the moving partitions (the bytes of every new replica and of every leader), of
  the brokers that answer within :data:`~ferry.execute.progress.ANSWER_WITHIN_S`: one that does
  not (stopped, stalled) keeps its last figures, holds its rates, and is written no throttle until
  it answers (:attr:`Pacer.silent`), since a write to it would hold the run until it is back;
* ListOffsets of the moving partitions on their leaders (log end and local start offsets), of the
  leaders that answer within the same bound;
* DescribeTopicPartitions of every topic (ISR, ELR) and, every ten times, each topic's min ISR: a
  :class:`~ferry.execute.pace.census.Census` in a thread of its own, begun at each reading and
  between readings every :data:`WATCH_EVERY_S`, each partition's worst state kept for the next
  reading; on a cluster so large that it takes long, censuses are spaced so that they take at most
  :data:`~ferry.execute.pace.census.ISR_SHARE` of the run's time, and the loop never waits for one
  longer than :data:`~ferry.execute.pace.census.WAIT_S`; the moving partitions' own ISRs are then
  read at the reading (DescribeTopicPartitions of their topics);

turns two consecutive readings into :class:`~ferry.execute.pace.signals.Signals`, and lets
:func:`~ferry.execute.pace.controller.decide` set each broker's rate per role and its concurrency.
A broker that a move reaches for the first time starts at the starting rate (``--throttle``).
While a moving partition is under min ISR (the plan's own doing) :attr:`Pacer.held` names it, and
the executor submits nothing new until it recovers; nothing is cancelled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import time

from ferry.errors import KafkaError
from ferry.execute.pace import controller as ctl
from ferry.execute.pace.census import WAIT_S, Census, Count
from ferry.execute.pace.controller import Bounds, Pace, Role
from ferry.execute.pace.settings import PaceSettings
from ferry.execute.pace.signals import Key, Observation, Signals, keys_of, signals, worst_health
from ferry.execute.progress import ANSWER_WITHIN_S
from ferry.execute.strategies import MoveLike
from ferry.kafka.admin import ClusterAdmin, LogOffsets, PartitionHealth, replica_sizes
from ferry.model import TopicPartition

SLOW_START_S = 2.5
"""Seconds between readings while the run is still doubling: a raised throttle reaches the brokers
within a second, and 2.5 s of copying at a 10 MB/s start (25 MB) is far over the 1 MB a fetch
brings at once. A reading this short sees the burst Kafka allows a raised throttle until its
11-second window catches up; the slow start doubles what flowed, so that burst, which the path
carried, only finds the limit sooner."""


WATCH_EVERY_S = 5.0
"""Seconds between reads of the ISRs within a period: a broker fenced after Kafka's 9-second
session timeout and back 11 s later (a 20-s stop) shrinks ISRs for long enough to be seen."""


_DOUBLING = frozenset({ctl.State.START, ctl.State.FLOOR, ctl.State.RAISE, ctl.State.FOLLOW})
"""The states of a rate that may still double (until a back-off, see :func:`ctl.decide`)."""


@dataclass(frozen=True, slots=True)
class PaceRound:
    """One period's outcome: every decision, the signals behind them, and what changed."""

    decisions: Mapping[Key, Pace]
    signals: Signals
    changed: tuple[Key, ...]
    """Keys whose rate, concurrency or rule changed since the last period."""


@dataclass
class Pacer:
    """The pace of one run. Never shared; a resumed run starts from the rates the journal has
    (``paces``, seeded by the executor), its readings from scratch."""

    settings: PaceSettings
    start_rate: int
    max_concurrency: int
    local_time: Callable[[], time]
    paces: dict[Key, Pace] = field(default_factory=dict)
    held: tuple[TopicPartition, ...] = ()
    _last: Observation | None = None
    silent: frozenset[int] = frozenset()
    """Brokers of the moves that did not answer the last reading of log dirs in time: the
    executor writes no throttle to them until they answer again."""
    census: Census = field(default_factory=Census)
    _min_isr: dict[str, int] = field(default_factory=dict)
    _worst: dict[TopicPartition, PartitionHealth] = field(default_factory=dict)

    def bounds(self) -> Bounds:
        ceiling = self.settings.ceiling_at(self.local_time())
        return Bounds(ceiling, self.start_rate, self.max_concurrency)

    def period(self) -> float:
        """Seconds between readings: the control period, or :data:`SLOW_START_S` while some rate
        is still doubling and none has backed off.

        Doubling goes on only while the throttle binds, so reading sooner finds the limit (the
        disks, the network) sooner and overshoots it no more than at the full period: by at most
        one doubling, with the copy held by that other limit meanwhile. After a back-off the run
        reads at the full period, so ISR shrinks (which take ``replica.lag.time.max.ms``
        to show) are seen before the rate climbs again.
        """
        full = self.settings.period_s
        active = [p for p in self.paces.values() if p.state is not ctl.State.IDLE]
        settled = any(p.backed_off for p in active) or not any(p.state in _DOUBLING for p in active)
        return full if settled else min(full, SLOW_START_S)

    def due(self, now: float) -> bool:
        return self._last is None or now - self._last.at >= self.period()

    def step(self, admin: ClusterAdmin, moves: Sequence[MoveLike], now: float) -> PaceRound | None:
        """Read and decide if a period has passed since the last reading; None otherwise (then,
        every :data:`WATCH_EVERY_S`, a census of the ISRs is begun, and the worst kept for the period)."""
        self._gather(self.census.take())
        if not self.due(now):
            self._watch(admin, now)
            return None
        if self._last is None and not moves:
            # The first reading waits for the first moves: one taken before them would leave the
            # first period without their produce rates, and the floor a period late.
            return None
        observation, health = self._read(admin, moves, now)
        before, self._last = self._last, observation
        if before is None:
            return self._starting(moves)
        found = signals(moves, health, self._min_isr, before, observation, self.silent)
        bounds = self.bounds()
        lasts = {key: self.paces.get(key) or ctl.start(self.start_rate, bounds) for key in found.readings}
        decisions = decide_round(lasts, found, bounds)
        changed = [key for key, decided in decisions.items() if _shown(decided) != _shown(lasts[key])]
        self.paces.update(decisions)
        self.held = found.under_min_isr
        return PaceRound(decisions, found, tuple(changed))

    def _starting(self, moves: Sequence[MoveLike]) -> PaceRound:
        bounds = self.bounds()
        decisions = {k: self.paces.setdefault(k, ctl.start(self.start_rate, bounds)) for k in keys_of(moves)}
        return PaceRound(decisions, Signals({}), tuple(decisions))

    def _watch(self, admin: ClusterAdmin, now: float) -> None:
        """Between readings, a census every :data:`WATCH_EVERY_S`: a shrink that heals within a
        period (a broker stopped for 20 s) would otherwise go unseen by the reading after it."""
        gap = max(WATCH_EVERY_S, self.census.spacing())
        if self._last is not None and now - self.census.began_at >= gap:
            self._count(admin, now)

    def _count(self, admin: ClusterAdmin, now: float) -> Count | None:
        """Begin a census (unless one is in flight) and take it if done within :data:`WAIT_S`."""
        self.census.begin(admin, now)
        counted = self.census.take(WAIT_S)
        self._gather(counted)
        return counted

    def _gather(self, counted: Count | None) -> None:
        if counted is not None:
            self._worst = worst_health(self._worst, counted.health)
            self._min_isr.update(counted.min_isr or {})

    def _read(
        self, admin: ClusterAdmin, moves: Sequence[MoveLike], now: float
    ) -> tuple[Observation, Sequence[PartitionHealth]]:
        moving = {m.tp for m in moves}
        due = not self.census.in_flight() and now - self.census.began_at >= self.census.spacing()
        counted = self._count(admin, now) if due else None
        present = counted.health if counted is not None else self._moving_health(admin, moving)
        # The worst state of each partition not being moved since the last reading; a moving
        # partition as it is now (whether submission waits is decided on the present).
        seen = worst_health(self._worst, present)
        health = (*(h for tp, h in seen.items() if tp not in moving), *(h for h in present if h.tp in moving))
        self._worst = {}
        found = admin.describe_partition_dirs(moving, within_s=ANSWER_WITHIN_S) if moving else {}
        sizes = replica_sizes(found)
        leaders = {h.tp: h.leader for h in present}
        offsets = self._offsets(admin, moves)
        # A broker that did not answer in time keeps its last figures (it copied nothing seen).
        last = self._last or Observation(now, {}, {}, {})
        self.silent = frozenset(b for m in moves for b in (*m.original, *m.adding) if b not in found)
        copied = {
            (m.tp, b): sizes.get(m.tp, {}).get(b, 0) if b in found else last.copied.get((m.tp, b), 0)
            for m in moves
            for b in m.adding
        }
        led = {m.tp: leader for m in moves if (leader := leaders.get(m.tp)) is not None}
        leader_bytes = {
            tp: sizes.get(tp, {}).get(leader, 0) if leader in found else last.leader_bytes.get(tp, 0)
            for tp, leader in led.items()
        }
        return Observation(now, copied, offsets, leader_bytes, led), health

    def _moving_health(self, admin: ClusterAdmin, moving: set[TopicPartition]) -> Sequence[PartitionHealth]:
        """The moving partitions' topics as they are now, while the census runs or waits its turn;
        the min ISR of a topic no census has read yet with them."""
        topics = {tp.topic for tp in moving}
        if unknown := topics - self._min_isr.keys():
            self._min_isr.update(admin.describe_min_insync(unknown))
        return admin.describe_health(topics) if topics else ()

    @staticmethod
    def _offsets(admin: ClusterAdmin, moves: Sequence[MoveLike]) -> Mapping[TopicPartition, LogOffsets]:
        """The moving partitions' offsets; none this period where a leader cannot say yet.

        A leader elected a moment ago answers OffsetNotAvailable until its high watermark is
        established, and kafka-python fails the whole request for one such partition: the
        period then goes without produce rates (no floor moves) rather than ending the run.
        """
        if not moves:
            return {}
        try:
            return admin.log_offsets([m.tp for m in moves], within_s=ANSWER_WITHIN_S)
        except KafkaError as exc:
            if not exc.transient:
                raise
            return {}

    def rates(self) -> dict[tuple[int, Role], int]:
        """The rate per broker and role the pace has set so far."""
        return {key: pace.rate for key, pace in self.paces.items()}

    def caps(self) -> dict[int, int]:
        """Moves per broker: the lower of its two roles' concurrency."""
        return ctl.broker_concurrency(self.paces)


def decide_round(lasts: Mapping[Key, Pace], found: Signals, bounds: Bounds) -> dict[Key, Pace]:
    """Every key's next pace: each reading told whether the throttle at the other end of its
    copies binds (by that key's last rate), then :func:`ctl.decide`; a key held by a partner
    that doubles, both in slow start, doubles with it (:func:`ctl.follow`)."""
    binding = {key for key, reading in found.readings.items() if ctl.binds(lasts[key].rate, reading)}
    partners = {key: found.partners.get(key, frozenset()) for key in found.readings}
    readings = {
        key: replace(reading, partner_binds=bool(partners[key] & binding))
        for key, reading in sorted(found.readings.items())
    }
    decisions = {key: ctl.decide(lasts[key], reading, bounds) for key, reading in readings.items()}
    # A raise is a binding throttle, so a partner that doubles is also one that binds.
    doubling = {
        key for key, pace in decisions.items() if pace.state is ctl.State.RAISE and not pace.backed_off
    }
    for key, pace in decisions.items():
        # Held only by a partner that doubles this round, in slow start itself: double with it.
        held = pace.state is ctl.State.HOLD and not pace.backed_off and not readings[key].silent
        if held and partners[key] & doubling:
            decisions[key] = ctl.follow(lasts[key], readings[key], bounds)
    return decisions


def _shown(pace: Pace) -> tuple[int, int, ctl.State]:
    return pace.rate, pace.concurrency, pace.state
