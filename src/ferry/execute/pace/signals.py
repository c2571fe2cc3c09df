"""What the controller reads, worked out from two observations of the cluster (pure).

An :class:`Observation` is what one control period reads through the Admin API: the bytes each
new replica holds (DescribeLogDirs, read for progress anyway), the moving partitions' log offsets
on their leaders (ListOffsets) and their leaders' local bytes. From two of them:

* **produce rate** of a moving partition: what its leader's local log grew by over the period,
  where the same leader holds it and no segment was deleted meanwhile (its local start offset did
  not move): that is exactly the bytes produced. Otherwise its log end offset's advance times its
  bytes per offset (the leader's local bytes over its local offsets; where that span is empty, the
  mean of the topic's other moving partitions): a log whose record sizes changed (a bulk load,
  then small messages) reads off there, and a compacted topic, with gaps in its offsets, reads low.
* **achieved copy rate** per broker and role: what the new replicas on a broker gained
  (follower), and what the new replicas of the partitions a broker leads gained (leader);
* **partners**: the other end of every copy (a follower's leaders, a leader's followers), so a
  throttle that does not bind can tell a partner's binding throttle from another limit.

Health comes from one DescribeTopicPartitions of every topic (:class:`~ferry.kafka.admin.PartitionHealth`)
with each topic's min ISR. A partition the request is moving is not collateral: its new replicas
are out of the ISR by design; if it is under min ISR the plan itself pushed it there, and it is
listed apart (:attr:`Signals.under_min_isr`) so the request can stop submitting until it recovers.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ferry.execute.pace.controller import Health, Reading, Role
from ferry.execute.strategies import MoveLike
from ferry.kafka.admin import LogOffsets, PartitionHealth
from ferry.model import TopicPartition

Key = tuple[int, Role]
"""A broker and one of its two throttles."""


@dataclass(frozen=True, slots=True)
class Observation:
    """One control period's reading of the moving partitions."""

    at: float
    """Executor clock, seconds."""
    copied: Mapping[tuple[TopicPartition, int], int]
    """Bytes each new replica (partition, broker) holds."""
    offsets: Mapping[TopicPartition, LogOffsets]
    leader_bytes: Mapping[TopicPartition, int]
    """The leader's local bytes of each moving partition."""
    leaders: Mapping[TopicPartition, int] = field(default_factory=dict)
    """Which broker ``leader_bytes`` were read on."""


@dataclass(frozen=True, slots=True)
class Signals:
    """The controller's input for one period."""

    readings: Mapping[Key, Reading]
    under_min_isr: tuple[TopicPartition, ...] = ()
    """Moving partitions under min ISR (or with eligible leader replicas): the plan's doing."""
    produce: Mapping[TopicPartition, float] = field(default_factory=dict)
    """Bytes/s produced into each moving partition."""
    partners: Mapping[Key, frozenset[Key]] = field(default_factory=dict)
    """The other end of each copy through a key: a follower's leaders, a leader's followers."""


def produce_rates(before: Observation, now: Observation) -> dict[TopicPartition, float]:
    """Bytes/s produced into each partition both observations read (see the module's docstring)."""
    elapsed = now.at - before.at
    if elapsed <= 0:
        return {}
    per_offset = _bytes_per_offset(now)
    rates: dict[TopicPartition, float] = {}
    for tp, offsets in now.offsets.items():
        earlier = before.offsets.get(tp)
        if earlier is None:
            continue
        grown = now.leader_bytes.get(tp, 0) - before.leader_bytes.get(tp, 0)
        same_log = tp in now.leaders and now.leaders.get(tp) == before.leaders.get(tp)
        if same_log and offsets.local_start == earlier.local_start and grown >= 0:
            rates[tp] = grown / elapsed
            continue
        advance = max(0, offsets.end - earlier.end)
        rates[tp] = advance * per_offset.get(tp, 0.0) / elapsed
    return rates


def _bytes_per_offset(now: Observation) -> dict[TopicPartition, float]:
    own: dict[TopicPartition, float] = {}
    by_topic: dict[str, tuple[int, int]] = {}
    for tp, offsets in now.offsets.items():
        span, size = offsets.end - offsets.local_start, now.leader_bytes.get(tp, 0)
        if span > 0 and size > 0:
            own[tp] = size / span
            total_size, total_span = by_topic.get(tp.topic, (0, 0))
            by_topic[tp.topic] = (total_size + size, total_span + span)
    for tp in now.offsets:
        if tp not in own and tp.topic in by_topic:
            total_size, total_span = by_topic[tp.topic]
            own[tp] = total_size / total_span
    return own


def signals(
    moves: Sequence[MoveLike],
    health: Iterable[PartitionHealth],
    min_isr: Mapping[str, int],
    before: Observation,
    now: Observation,
    silent: frozenset[int] = frozenset(),
) -> Signals:
    """The readings of every broker a move copies through, in both roles, and the partitions the
    plan pushed under min ISR; a broker in ``silent`` did not answer this reading in time."""
    moving = {m.tp: m for m in moves}
    elapsed = max(now.at - before.at, 1e-9)
    produce = produce_rates(before, now)
    broker_health: dict[int, _Counts] = {}
    achieved: defaultdict[Key, float] = defaultdict(float)
    inflow: defaultdict[Key, float] = defaultdict(float)
    copying: Counter[Key] = Counter()
    pairs: defaultdict[Key, set[Key]] = defaultdict(set)
    under: list[TopicPartition] = []
    for state in health:
        floor = min_isr.get(state.tp.topic, 1)
        move = moving.get(state.tp)
        if move is None:
            _count_collateral(state, floor, broker_health)
            continue
        if len(state.isr) < floor or state.elr:
            under.append(state.tp)
        fetching = [b for b in move.adding if b not in state.isr]
        rate = produce.get(state.tp, 0.0)
        for b in move.adding:
            gained = max(0, now.copied.get((state.tp, b), 0) - before.copied.get((state.tp, b), 0)) / elapsed
            for key in _path(b, state.leader):
                achieved[key] += gained
        for b in fetching:
            for key in _path(b, state.leader):
                inflow[key] += rate
                copying[key] += 1
            if state.leader is not None:
                pairs[(b, Role.FOLLOWER)].add((state.leader, Role.LEADER))
                pairs[(state.leader, Role.LEADER)].add((b, Role.FOLLOWER))
    keys = keys_of(moves) | set(achieved) | set(copying)
    readings = {
        key: Reading(
            achieved=achieved.get(key, 0.0),
            produce=inflow.get(key, 0.0),
            moving=copying.get(key, 0),
            health=broker_health.get(key[0], _Counts()).frozen(),
            silent=key[0] in silent,
        )
        for key in keys
    }
    partners = {key: frozenset(found) for key, found in pairs.items()}
    return Signals(readings, tuple(sorted(under)), produce, partners)


@dataclass
class _Counts:
    isr_loss: int = 0
    at_min_isr: int = 0
    under_min_isr: int = 0
    elr: int = 0

    def frozen(self) -> Health:
        return Health(self.isr_loss, self.at_min_isr, self.under_min_isr, self.elr)


def _count_collateral(state: PartitionHealth, floor: int, counts: dict[int, _Counts]) -> None:
    """Count a partition the request does not move against the brokers it troubles."""
    isr = set(state.isr)
    missing = [b for b in state.replicas if b not in isr]
    # The lagging replica's broker fetches too slowly, or its leader serves too slowly.
    for b in {*missing, *([state.leader] if missing and state.leader is not None else [])}:
        counts.setdefault(b, _Counts()).isr_loss += 1
    for b in state.replicas:
        c = counts.setdefault(b, _Counts())
        if missing and len(isr) == floor:
            c.at_min_isr += 1
        if len(isr) < floor:
            c.under_min_isr += 1
        if state.elr:
            c.elr += 1


def worst_health(
    seen: Mapping[TopicPartition, PartitionHealth], fresh: Iterable[PartitionHealth]
) -> dict[TopicPartition, PartitionHealth]:
    """Each partition's worse state of ``seen`` (earlier readings) and ``fresh``: the smaller ISR,
    then more eligible leader replicas; the fresh one where its replicas changed meanwhile."""
    worst = dict(seen)
    for state in fresh:
        earlier = worst.get(state.tp)
        if earlier is None or earlier.replicas != state.replicas or _worse(state, earlier):
            worst[state.tp] = state
    return worst


def _worse(a: PartitionHealth, b: PartitionHealth) -> bool:
    return (len(a.isr), -len(a.elr)) <= (len(b.isr), -len(b.elr))


def _path(follower: int, leader: int | None) -> list[Key]:
    """What a new replica copies passes through its broker (follower) and its leader (leader)."""
    return [(follower, Role.FOLLOWER)] + ([(leader, Role.LEADER)] if leader is not None else [])


def keys_of(moves: Iterable[MoveLike]) -> set[Key]:
    """Both roles of every broker a move holds a replica on or adds one to."""
    return {(b, role) for m in moves for b in (*m.original, *m.adding) for role in Role}
