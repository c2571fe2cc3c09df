"""``--evacuate-dir BROKER:PATH``: every replica off one log dir.

Largest replica first, each goes to the open dir of the same broker that is emptiest after taking
it (by the share of its size it would fill), among those with room for it plus the margin
(:data:`~ferry.model.cluster.DIR_MARGIN`). A replica no other dir of the broker has room
for -- or every replica, when a dir of the broker is offline, since the broker then starts no
copy between its dirs -- moves to another broker instead: a live, uncordoned one the rack rule
lets take it (:func:`ferry.plan.racks.may_take`, with the evacuating broker's replica gone),
in the evacuating broker's own rack where possible so the rack counts stay as they are, the one
holding the fewest bytes, into its emptiest open dir with room.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ferry.errors import InputError, PreconditionError, and_more
from ferry.model import Broker, ClusterSnapshot, Move, PartitionState, RackMode, TopicPartition
from ferry.model.plan import ANY_DIR
from ferry.plan.log_dirs.loads import BrokerLoads, broker_loads, dir_moves
from ferry.plan.racks import RackLayout, may_take


@dataclass(frozen=True, slots=True)
class Evacuation:
    """The moves that empty a dir: within its broker, and to other brokers."""

    within: tuple[Move, ...]
    away: tuple[Move, ...]

    @property
    def moves(self) -> tuple[Move, ...]:
        return tuple(sorted((*self.within, *self.away), key=lambda m: m.tp))


def parse_dir_option(text: str) -> tuple[int, str]:
    """``"3:/data/b"`` -> (3, "/data/b").

    Raises:
        ValueError: not ``BROKER:PATH``.
    """
    broker, sep, path = text.partition(":")
    if not sep or not broker.strip().isdigit() or not path:
        raise ValueError(f"expected BROKER:PATH (e.g. 3:/data/b), got {text!r}")
    return int(broker), path


def evacuate_dir(snapshot: ClusterSnapshot, broker_id: int, path: str) -> Evacuation:
    """The moves that leave ``path`` of ``broker_id`` empty.

    Raises:
        InputError: the broker or the dir is unknown, or the snapshot lists no log dirs.
        PreconditionError: the broker is down, or some replica has nowhere to go.
    """
    option = f"--evacuate-dir {broker_id}:{path}"
    loads = broker_loads(snapshot, option)
    broker = next((b for b in snapshot.brokers if b.id == broker_id), None)
    if broker is None:
        raise InputError(f"{option}: broker {broker_id} is not in the snapshot")
    if not broker.alive:
        raise PreconditionError(f"{option}: broker {broker_id} is down: nothing can be copied off it")
    if broker.log_dir(path) is None:
        raise InputError(f"{option}: broker {broker_id} has no log dir {path}", hint=_dirs_hint(broker))
    load = loads[broker_id]
    leaving = sorted(load.replicas.get(path, {}).items(), key=lambda x: (-x[1], x[0]))
    stuck = any(d.offline for d in broker.log_dirs)
    within: dict[tuple[TopicPartition, int], str] = {}
    overflow: list[tuple[TopicPartition, int]] = []
    for tp, size in leaving:
        target = None if stuck else load.emptiest(size, exclude=path)
        if target is None:
            overflow.append((tp, size))
        else:
            load.move(tp, path, target)
            within[(tp, broker_id)] = target
    away = _away(snapshot, loads, broker_id, overflow, option)
    return Evacuation(dir_moves(snapshot, within), away)


def _away(
    snapshot: ClusterSnapshot,
    loads: Mapping[int, BrokerLoads],
    leaving: int,
    overflow: list[tuple[TopicPartition, int]],
    option: str,
) -> tuple[Move, ...]:
    live = [b for b in snapshot.brokers if b.alive and not b.cordoned]
    layout = RackLayout.of({b.id: b.rack for b in snapshot.brokers}, [b.id for b in live])
    held = Counter[int]()
    for p in snapshot.partitions:
        for b in p.replicas:
            held[b] += p.bytes_on(b)
    rack = {b.id: b.rack for b in snapshot.brokers}
    moves, nowhere = [], []
    for tp, size in overflow:
        state = snapshot.partition(tp)
        taker = _taker(state, layout, leaving, size, loads, held, rack)
        if taker is None:
            nowhere.append(f"{tp} ({size} bytes)")
            continue
        broker, path = taker
        held[broker] += size
        if path is not None:
            loads[broker].add(tp, path, size)
        target = tuple(broker if b == leaving else b for b in state.replicas)
        dirs = tuple(path if b == broker else ANY_DIR for b in target) if path is not None else None
        moves.append(Move(tp, state.replicas, target, size, dirs))
    if nowhere:
        raise PreconditionError(
            f"{option}: no other dir of broker {leaving} nor any other broker has room for "
            f"{and_more(nowhere)}",
            hint="add a disk or a broker, or free some space first",
        )
    return tuple(moves)


def _taker(
    state: PartitionState,
    layout: RackLayout,
    leaving: int,
    size: int,
    loads: Mapping[int, BrokerLoads],
    held: Counter[int],
    rack: Mapping[int, str | None],
) -> tuple[int, str | None] | None:
    """The broker (and its dir, where it lists dirs) to take a replica leaving ``leaving``."""
    inside = [b for b in state.replicas if b in layout.rack_of and b != leaving]
    options: list[tuple[tuple[bool, int, int], int, str | None]] = []
    for b in layout.brokers:
        if b == leaving or not may_take(layout, RackMode.STRICT, inside, len(state.replicas), b):
            continue
        path = loads[b].emptiest(size) if b in loads else None
        if b in loads and path is None:
            continue
        options.append(((rack.get(b) != rack.get(leaving), held[b], b), b, path))
    if not options:
        return None
    _, broker, path = min(options)
    return broker, path


def _dirs_hint(broker: Broker) -> str:
    return "its dirs: " + (", ".join(d.path for d in broker.log_dirs) or "none listed")
