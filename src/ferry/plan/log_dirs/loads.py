"""Bytes per log dir of one broker, as a dir plan changes them.

A dir's *share* is its part of the broker's bytes in proportion to its size: ``total bytes of the
broker's open dirs x dir size / size of its open dirs``. Open dirs are online and not cordoned;
an offline dir serves nothing and a cordoned one takes nothing new, so neither takes part in a
balance (a cordoned dir is emptied with ``--evacuate-dir``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ferry.errors import InputError
from ferry.model import Broker, ClusterSnapshot, LogDir, Move, TopicPartition
from ferry.model.plan import ANY_DIR


@dataclass
class BrokerLoads:
    """One broker's dirs, the replicas in each (partition -> bytes) and the bytes they hold."""

    broker: Broker
    replicas: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)

    @property
    def dirs(self) -> tuple[LogDir, ...]:
        return self.broker.log_dirs

    def bytes_in(self, path: str) -> int:
        return sum(self.replicas.get(path, {}).values())

    def open_dirs(self) -> list[LogDir]:
        return [d for d in self.dirs if d.open]

    def shares(self) -> dict[str, float]:
        """Each open dir's share of the bytes in the open dirs, by its size (equal sizes where a
        dir does not say)."""
        opened = self.open_dirs()
        sizes = {d.path: float(d.total_bytes or 1) for d in opened}
        if any(d.total_bytes is None for d in opened):
            sizes = dict.fromkeys(sizes, 1.0)
        held = sum(self.bytes_in(p) for p in sizes)
        whole = sum(sizes.values())
        return {p: held * size / whole for p, size in sizes.items()}

    def room(self, path: str) -> float:
        """Bytes that may still go into ``path``: its free space less the margin (unbounded where
        the dir does not say)."""
        found = self.broker.log_dir(path)
        room = found.room if found is not None else None
        return float("inf") if room is None else room

    def move(self, tp: TopicPartition, source: str, target: str) -> int:
        """Move ``tp``'s replica from ``source`` to ``target``; its bytes. Free space follows."""
        size = self.replicas[source].pop(tp)
        self._free(source, size)
        self.add(tp, target, size)
        return size

    def add(self, tp: TopicPartition, path: str, size: int) -> None:
        """A replica of ``size`` bytes arrives in ``path``."""
        self.replicas.setdefault(path, {})[tp] = size
        self._free(path, -size)

    def emptiest(self, size: int, exclude: str | None = None) -> str | None:
        """The open dir (not ``exclude``) with room for ``size`` more bytes that keeps the largest
        share of its size free after taking them (by the bytes it holds where it does not say
        how much is free); None when no dir has room."""
        options = [d for d in self.open_dirs() if d.path != exclude and self.room(d.path) >= size]
        if not options:
            return None

        def fill(d: LogDir) -> float:
            whole = float(d.total_bytes or 1)
            if d.usable_bytes is not None and d.total_bytes:
                return 1 - (d.usable_bytes - size) / whole
            return (self.bytes_in(d.path) + size) / whole

        return min(options, key=lambda d: (fill(d), d.path)).path

    def _free(self, path: str, delta: int) -> None:
        dirs = tuple(
            replace(d, usable_bytes=d.usable_bytes + delta)
            if d.path == path and d.usable_bytes is not None
            else d
            for d in self.broker.log_dirs
        )
        self.broker = replace(self.broker, log_dirs=dirs)


def broker_loads(snapshot: ClusterSnapshot, option: str) -> dict[int, BrokerLoads]:
    """Every live broker with log dirs, and the replicas in each of its dirs.

    Raises:
        InputError: the snapshot lists no log dirs, or a replica of a broker that has them is in
            no dir it lists (``option`` names the command line option in the message).
    """
    loads = {b.id: BrokerLoads(b) for b in snapshot.brokers if b.alive and b.log_dirs}
    if not loads:
        raise InputError(
            f"{option}: the snapshot lists no log dirs",
            hint="take it from the cluster (ferry snapshot, or ferry plan --bootstrap-server): Kafka 3.3+",
        )
    strays = held_in_dirs(loads, snapshot)
    if strays:
        tp, broker, path = strays[0]
        raise InputError(f"{option}: {tp} on broker {broker} is in {path}, not one of its log dirs")
    return loads


def held_in_dirs(
    loads: Mapping[int, BrokerLoads], snapshot: ClusterSnapshot
) -> list[tuple[TopicPartition, int, str]]:
    """Every replica of ``snapshot`` on a broker of ``loads`` counted in its dir; the replicas in a
    dir their broker does not list (counted there all the same)."""
    strays = []
    for p in snapshot.partitions:
        for broker, path in p.replica_dirs:
            if broker in loads:
                if loads[broker].broker.log_dir(path) is None:
                    strays.append((p.tp, broker, path))
                loads[broker].replicas.setdefault(path, {})[p.tp] = p.bytes_on(broker)
    return strays


def dir_moves(
    snapshot: ClusterSnapshot, placed: Mapping[tuple[TopicPartition, int], str]
) -> tuple[Move, ...]:
    """One move per partition of ``placed`` (replica -> its new dir): same replicas, the new dirs
    named and ``any`` for the replicas that stay where they are."""
    by_tp: dict[TopicPartition, dict[int, str]] = {}
    for (tp, broker), path in placed.items():
        by_tp.setdefault(tp, {})[broker] = path
    moves = []
    for tp, dirs in sorted(by_tp.items()):
        state = snapshot.partition(tp)
        named = tuple(dirs.get(b, ANY_DIR) for b in state.replicas)
        moves.append(Move(tp, state.replicas, state.replicas, state.size, named))
    return tuple(moves)
