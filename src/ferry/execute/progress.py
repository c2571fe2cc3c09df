"""Progress maths (KIP-179): bytes copied per adding replica, roll-ups, rate and ETA (pure).

For every adding replica the numerator is its size on the new broker and the denominator the
leader's size (the data it must catch up with); the numerator is capped at the denominator, since
a follower may briefly hold more than a leader that just deleted a segment. A finished move counts
as complete with its recorded size. Roll-ups are plain sums, so partition, broker and request
totals always agree.

Rate and ETA come from samples of the request's copied bytes over time: the rate is the
least-squares slope over the recent window (robust to the jitter of sampling a few times a
second), the ETA the remaining bytes at that rate. A :class:`History` also keeps the samples of
each receiving broker, and its ETA is never sooner than the busiest broker can finish at its own
rate: throttles are per broker, so when brokers have unequal shares the request's rate drops as
the lighter ones finish, and the request ends with its busiest broker, not when its remaining
bytes at its current rate say. A receiving broker cannot copy faster than its throttle lets it,
and under Kafka's replication quota it sustains only about :data:`THROTTLE_SHARE` of it, so with a
throttle known a broker's rate is capped there: a burst or a well-timed stall in the samples no
longer promises an end sooner than the throttle allows (docs/benchmarks.md, "Execute throughput",
has the measurements). No clock is read here; samples carry times.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ferry.execute.strategies import MoveLike
from ferry.model import TopicPartition

DEFAULT_WINDOW_S = 60.0

ANSWER_WITHIN_S = 3.0
"""Seconds a run waits for a broker's log dirs at a poll: a broker under a reassignment's load
answers DescribeLogDirs of the moving topics well within it; one that does not is stopped, down
or stalled, and waiting for it would stop the run's every poll with it."""

THROTTLE_SHARE = 10 / 11
"""The share of its throttle a receiving broker is assumed to sustain, at most.

Kafka enforces a replication quota over 11 one-second windows (``replication.quota.window.num``
and ``.size.seconds``): a follower that went over it stops fetching until its rate is back under,
and the execute benchmark shows a stall of about a second every 11 s, the busiest broker's whole
copy at 0.89-0.95 of the throttle. Capping at the throttle itself left the ETA short at half way
(replayed over 14 recorded runs: 19 % worst error at 50 %, 11 % with this share).
"""


@dataclass(frozen=True, slots=True)
class Progress:
    """``done`` of ``total`` bytes."""

    done: int
    total: int

    def __post_init__(self) -> None:
        if not 0 <= self.done <= self.total:
            raise ValueError(f"progress {self.done}/{self.total} out of range")

    def __add__(self, other: Progress) -> Progress:
        return Progress(self.done + other.done, self.total + other.total)

    @property
    def fraction(self) -> float:
        """Between 0 and 1; an empty total (nothing to copy) is complete."""
        return 1.0 if self.total == 0 else self.done / self.total

    @property
    def remaining(self) -> int:
        return self.total - self.done


@dataclass(frozen=True, slots=True)
class ReplicaProgress:
    """One adding replica of one partition."""

    tp: TopicPartition
    broker: int
    progress: Progress


def replica_progress(
    move: MoveLike,
    sizes: Mapping[int, int],
    leader: int | None,
    *,
    finished: bool = False,
    to_copy: Mapping[int, int] | None = None,
) -> tuple[ReplicaProgress, ...]:
    """Progress of each adding replica of ``move``.

    Args:
        move: the move (original and target replicas, planned size).
        sizes: bytes on disk of this partition per broker (DescribeLogDirs).
        leader: the current leader; when unknown or without a size, the largest original replica
            stands in, then the planned size.
        finished: the move is done: every replica counts as complete.
        to_copy: per adding broker, the bytes it copies where that is not the leader's size (a
            tiered topic's new replica that starts at the last uploaded offset).
    """
    whole = _denominator(move, sizes, leader)
    result = []
    for broker in move.adding:
        total = (to_copy or {}).get(broker, whole)
        done = total if finished else min(sizes.get(broker, 0), total)
        result.append(ReplicaProgress(move.tp, broker, Progress(done, total)))
    return tuple(result)


def _denominator(move: MoveLike, sizes: Mapping[int, int], leader: int | None) -> int:
    if leader is not None and leader in sizes:
        return sizes[leader]
    originals = [sizes[b] for b in move.original if b in sizes]
    return max(originals) if originals else move.size_bytes


def total(replicas: Iterable[ReplicaProgress]) -> Progress:
    """The request's progress: the sum over all adding replicas."""
    return sum((r.progress for r in replicas), Progress(0, 0))


def by_partition(replicas: Iterable[ReplicaProgress]) -> dict[TopicPartition, Progress]:
    """Progress per partition (sum over its adding replicas)."""
    rolled: dict[TopicPartition, Progress] = {}
    for r in replicas:
        rolled[r.tp] = rolled.get(r.tp, Progress(0, 0)) + r.progress
    return rolled


def by_broker(replicas: Iterable[ReplicaProgress]) -> dict[int, Progress]:
    """Progress per receiving broker (sum over the replicas it is adding)."""
    rolled: dict[int, Progress] = {}
    for r in replicas:
        rolled[r.broker] = rolled.get(r.broker, Progress(0, 0)) + r.progress
    return rolled


@dataclass(frozen=True, slots=True)
class Sample:
    """Bytes copied so far (``done``) at time ``at`` (seconds, any epoch)."""

    at: float
    done: int


@dataclass(frozen=True, slots=True)
class Estimate:
    """Rate in bytes/s and seconds left; None while there is not enough data to tell."""

    rate: float | None
    eta_s: float | None


def estimate(samples: Sequence[Sample], remaining: int, window_s: float = DEFAULT_WINDOW_S) -> Estimate:
    """Rate from the samples of the last ``window_s`` seconds and the ETA for ``remaining`` bytes.

    Samples before the bytes first grew in the window do not count (see :func:`_window`).

    Samples must be in time order. With fewer than two samples in the window, or a window of zero
    length, the rate is unknown; with no progress in the window the ETA is unknown (not infinite).
    """
    if remaining <= 0:
        return Estimate(_slope(_window(samples, window_s)), 0.0)
    rate = _slope(_window(samples, window_s))
    if rate is None or rate <= 0:
        return Estimate(rate, None)
    return Estimate(rate, remaining / rate)


@dataclass(frozen=True, slots=True)
class History:
    """A request's measurements so far: bytes copied over time, in all and per receiving broker.

    Only the last ``window_s`` seconds are kept; older samples take no part in the rate.
    ``throttle`` is the request's replication throttle in bytes/s per broker (None: unthrottled).
    """

    total: tuple[Sample, ...] = ()
    brokers: Mapping[int, tuple[Sample, ...]] = field(default_factory=dict)
    window_s: float = DEFAULT_WINDOW_S
    throttle: int | None = None

    def add(self, at: float, replicas: Iterable[ReplicaProgress]) -> History:
        """This history with the measurement ``replicas`` taken at ``at`` (later than the others)."""
        replicas = tuple(replicas)
        start = at - self.window_s
        brokers = {
            b: (*(s for s in self.brokers.get(b, ()) if s.at >= start), Sample(at, p.done))
            for b, p in by_broker(replicas).items()
        }
        recent = (*(s for s in self.total if s.at >= start), Sample(at, total(replicas).done))
        return replace(self, total=recent, brokers=brokers)

    def estimate(self, replicas: Iterable[ReplicaProgress]) -> Estimate:
        """Rate and ETA for what ``replicas`` (the latest measurement) still has to copy.

        The rate is the request's, as measured. The ETA is the longest of the receiving brokers'
        remaining bytes at their own rates, counted from when their bytes began to grow, and
        capped at :data:`THROTTLE_SHARE` of the throttle. While a broker with bytes to take has no
        rate yet (its moves wait for a slot), the request's remaining bytes at the request's rate
        stand in for it when they take longer, and so does its own remaining bytes at the cap.
        """
        replicas = tuple(replicas)
        overall = estimate(self.total, total(replicas).remaining, self.window_s)
        if not overall.eta_s:
            return overall
        cap = None if self.throttle is None else self.throttle * THROTTLE_SHARE
        slowest, unrated = 0.0, False
        for broker, progress in by_broker(replicas).items():
            if progress.remaining <= 0:
                continue
            rate = _slope(_window(self.brokers.get(broker, ()), self.window_s))
            if rate is None or rate <= 0:
                unrated, rate = True, cap
            elif cap is not None:
                rate = min(rate, cap)
            if rate:
                slowest = max(slowest, progress.remaining / rate)
        return Estimate(overall.rate, max(slowest, overall.eta_s) if unrated else slowest)


def _window(samples: Sequence[Sample], window_s: float) -> Sequence[Sample]:
    """The samples of the last ``window_s`` seconds, from the last one before the bytes grew.

    The flat start is dropped: time before the first byte arrived (the copy starting up, or a
    broker whose moves waited for a slot) does not come back, and counted in the slope it drew
    the rate down and the ETA out (a broker that waited 5 s for its first move showed twice its
    real ETA in the integration test).
    """
    if not samples:
        return samples
    start = samples[-1].at - window_s
    recent = [s for s in samples if s.at >= start]
    first_growth = next((i for i in range(len(recent) - 1) if recent[i + 1].done != recent[i].done), 0)
    return recent[first_growth:]


def _slope(samples: Sequence[Sample]) -> float | None:
    if len(samples) < 2:
        return None
    n = len(samples)
    mean_t = sum(s.at for s in samples) / n
    mean_d = sum(s.done for s in samples) / n
    var = sum((s.at - mean_t) ** 2 for s in samples)
    if var == 0:
        return None
    cov = sum((s.at - mean_t) * (s.done - mean_d) for s in samples)
    return cov / var


# How many polls per --poll-interval once the last bytes are due (see next_poll_in).
END_POLLS_PER_INTERVAL = 4


def next_poll_in(poll_interval_s: float, eta_s: float | None) -> float:
    """The wait before the next poll: a poll, or a quarter of one once the last bytes are due.

    The end of a move is only seen at a poll, and until then its slot, its throttles and the
    run's exit wait. Within the last poll the ETA cannot say when: bytes arrive in fetch-sized
    steps, a quota stall may come first, and the move ends only once its new replicas joined the
    ISR. In four benchmark runs the last byte came 0.1-0.7 s before the last ETA said, which
    waiting for the ETA would miss by that much. Polling four times as often from then on sees
    the end within a quarter of a poll, for a few cheap extra polls per run.
    """
    if eta_s is None or eta_s > poll_interval_s:
        return poll_interval_s
    return poll_interval_s / END_POLLS_PER_INTERVAL
