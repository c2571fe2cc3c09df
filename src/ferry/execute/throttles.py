"""Replication throttles for the moves in flight, merged with what the cluster already had (pure).

Kafka throttles replication with four dynamic configs (what kafka-reassign-partitions sets):

* per topic, ``leader.replication.throttled.replicas``: ``partition:broker`` for every *current*
  replica of a moving partition, because any of them may be the leader the new replicas copy from
  (and the new replicas too for a move made one replica at a time: a step's new replica may lead
  the next step);
* per topic, ``follower.replication.throttled.replicas``: ``partition:broker`` for every *adding*
  replica (the followers that copy);
* per broker, ``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate`` in
  bytes/s, on every broker a moving partition has a current or new replica on (a broker can lead
  one moving partition and follow another, so both rates go on all of them, as Kafka's tool does).

A move that copies replicas between the log dirs of a broker (JBOD) also sets, on that broker,
``replica.alter.log.dirs.io.max.bytes.per.second`` (the dir rate, ``--dir-throttle``).

Pre-existing values are kept, not clobbered: a replica list becomes the union of the old entries
and ours (``*``, "all replicas", stays ``*``); a rate becomes ours, because the operator asked for
this rate for this run. When a move finishes its entries are dropped; when the run ends every
config goes back to its pre-existing value, or is deleted if there was none. :func:`changes` turns
"what is applied" + "what should be" into the writes that get there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ferry.execute.records import ConfigKey, ResourceType
from ferry.execute.strategies import MoveLike

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
"""The broker config that throttles copies between its log dirs."""
ALL_REPLICAS = "*"

ReplicaEntries = frozenset[tuple[int, int]]
"""(partition, broker) pairs of a throttled-replicas config."""


@dataclass(frozen=True, slots=True)
class Throttles:
    """The throttle entries a set of moves needs, before merging with the cluster's values."""

    replicas: Mapping[ConfigKey, ReplicaEntries]
    rates: Mapping[ConfigKey, int]

    @property
    def keys(self) -> frozenset[ConfigKey]:
        return frozenset(self.replicas) | frozenset(self.rates)


def required(
    moves: Iterable[MoveLike],
    rate: int | None,
    paced: Mapping[tuple[int, str], int] | None = None,
    dir_rate: int | None = None,
) -> Throttles:
    """The throttles ``moves`` need at ``rate`` bytes/s (no replication throttle when ``rate`` is
    None); a broker's rate in ``paced`` (by broker and rate config, set by ``--pace auto``)
    replaces it. Brokers where a move names a log dir get ``dir_rate`` (none when None)."""
    replicas: dict[ConfigKey, set[tuple[int, int]]] = {}
    brokers: set[int] = set()
    dir_brokers: set[int] = set()
    for move in moves:
        dir_brokers.update(move.named_dirs)
        adding = move.adding
        if rate is None or not adding:
            continue  # a pure reorder copies nothing
        topic, p = move.tp.topic, move.tp.partition
        leader = ConfigKey(ResourceType.TOPIC, topic, LEADER_REPLICAS)
        follower = ConfigKey(ResourceType.TOPIC, topic, FOLLOWER_REPLICAS)
        # A move in single-replica steps (a TaskRecord's ``steps``) may be led by a new replica.
        may_lead = (*move.original, *adding) if len(getattr(move, "steps", ())) > 1 else move.original
        replicas.setdefault(leader, set()).update((p, b) for b in may_lead)
        replicas.setdefault(follower, set()).update((p, b) for b in adding)
        brokers.update(move.original)
        brokers.update(adding)
    paced = paced or {}
    rates = {
        ConfigKey(ResourceType.BROKER, str(b), key): paced.get((b, key), rate)
        for b in sorted(brokers)
        for key in (LEADER_RATE, FOLLOWER_RATE)
        if rate is not None
    }
    if dir_rate is not None:
        rates |= {ConfigKey(ResourceType.BROKER, str(b), DIR_RATE): dir_rate for b in sorted(dir_brokers)}
    return Throttles({k: frozenset(v) for k, v in replicas.items()}, rates)


def parse_replicas(value: str) -> ReplicaEntries | None:
    """``"0:1,1:2"`` -> {(0, 1), (1, 2)}; None for ``*`` (all replicas).

    Raises:
        ValueError: an entry is not ``partition:broker``.
    """
    text = value.strip()
    if text == ALL_REPLICAS:
        return None
    entries: set[tuple[int, int]] = set()
    for item in text.split(","):
        if not item.strip():
            continue
        partition, _, broker = item.strip().partition(":")
        entries.add((int(partition), int(broker)))
    return frozenset(entries)


def format_replicas(entries: Iterable[tuple[int, int]]) -> str:
    """{(1, 2), (0, 1)} -> ``"0:1,1:2"`` (sorted, so equal sets give equal strings)."""
    return ",".join(f"{p}:{b}" for p, b in sorted(entries))


def desired(throttles: Throttles, previous: Mapping[ConfigKey, str | None]) -> dict[ConfigKey, str]:
    """The config values to have on the cluster: ours merged with the pre-existing ones.

    Args:
        throttles: what the moves in flight need (:func:`required`).
        previous: the value each config had before ferry touched it (None or absent: no value).
    """
    values: dict[ConfigKey, str] = {}
    for key, ours in throttles.replicas.items():
        values[key] = _merge_replicas(previous.get(key), ours)
    for key, rate in throttles.rates.items():
        values[key] = str(rate)
    return values


def _merge_replicas(previous: str | None, ours: ReplicaEntries) -> str:
    if previous is None or not previous.strip():
        return format_replicas(ours)
    try:
        theirs = parse_replicas(previous)
    except ValueError:
        # Kafka validates this config, so this is unlikely; keeping theirs loses nothing.
        return previous
    if theirs is None:
        return ALL_REPLICAS
    return format_replicas(theirs | ours)


def changes(
    applied: Mapping[ConfigKey, str],
    wanted: Mapping[ConfigKey, str],
    previous: Mapping[ConfigKey, str | None],
) -> dict[ConfigKey, str | None]:
    """The writes that turn ``applied`` into ``wanted``: a value to SET, or None to DELETE.

    A config applied but no longer wanted goes back to its ``previous`` value (DELETE when it had
    none). Configs already at the wanted value are left alone.
    """
    writes: dict[ConfigKey, str | None] = {k: v for k, v in wanted.items() if applied.get(k) != v}
    for key in applied:
        if key not in wanted:
            writes[key] = previous.get(key)
    return writes
