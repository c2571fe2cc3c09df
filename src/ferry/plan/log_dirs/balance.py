"""``--disks balance``: even out the bytes across the log dirs inside each broker, moving few bytes.

A dir is *in band* when its bytes are within :data:`TOLERANCE` of its share (its part of the
broker's bytes by size, :meth:`~ferry.plan.log_dirs.loads.BrokerLoads.shares`). The pass only
brings dirs into their band, never further: bytes moved beyond the band would be copied for
nothing. Per broker, one replica at a time:

1. *shed*: a dir over its band gives a replica to the open dir with the most room under its own
   band (never pushing the giver under its band, the taker over its band or past its free space
   less :data:`~ferry.model.cluster.DIR_MARGIN`): the smallest replica that brings the giver
   into its band, else the largest that fits;
2. *fill*: a dir under its band takes a replica, chosen the same way, from the dir furthest over
   its share;
3. *closer*: where neither finds a replica that fits, the move that most shortens the distance of
   the two dirs from their bands, even past the taker's band (a replica bigger than the band).

Each step shrinks the total distance of the dirs from their bands, so the pass ends; it ends with
every dir in band, or with no single replica able to bring one closer (a replica bigger than the
band's width). A replica moved twice is one move; one moved back is none.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from ferry.model import ClusterSnapshot, TopicPartition
from ferry.plan.log_dirs.loads import BrokerLoads, broker_loads

TOLERANCE = 0.05
"""How far a dir's bytes may be from its share, as a fraction of the share."""

Placed = dict[tuple[TopicPartition, int], str]
"""A replica (partition, broker) and the dir it goes into."""


def balance_dirs(snapshot: ClusterSnapshot, brokers: Collection[int] | None = None) -> Placed:
    """The replicas to move between the dirs of each broker (of ``brokers``; all when None).

    Raises:
        InputError: the snapshot does not list log dirs (see :func:`broker_loads`).
    """
    placed: Placed = {}
    for broker_id, load in sorted(broker_loads(snapshot, "--disks balance").items()):
        if brokers is None or broker_id in brokers:
            placed |= {(tp, broker_id): path for tp, path in balance_broker(load).items()}
    return placed


def balance_broker(load: BrokerLoads) -> dict[TopicPartition, str]:
    """Bring ``load``'s open dirs into their bands (changing ``load``); each moved replica's dir."""
    opened = [d.path for d in load.open_dirs()]
    if len(opened) < 2:
        return {}
    share = load.shares()
    origin = {tp: path for path in opened for tp in load.replicas.get(path, {})}
    moved: dict[TopicPartition, str] = {}
    for _ in range(4 * len(origin) + 1):  # each step shrinks the distance; this only bounds a bug
        step = _shed(load, share, opened) or _fill(load, share, opened) or _closer(load, share, opened)
        if step is None:
            break
        tp, source, target = step
        load.move(tp, source, target)
        moved[tp] = target
    return {tp: path for tp, path in moved.items() if origin[tp] != path}


Step = tuple[TopicPartition, str, str]


def _shed(load: BrokerLoads, share: Mapping[str, float], opened: list[str]) -> Step | None:
    held = {p: load.bytes_in(p) for p in opened}
    over = [p for p in opened if held[p] > _high(share, p)]
    for donor in sorted(over, key=lambda p: _relative(held, share, p), reverse=True):
        need, slack = held[donor] - _high(share, donor), held[donor] - _low(share, donor)
        takers = [p for p in opened if p != donor and held[p] < _high(share, p)]
        for taker in sorted(takers, key=lambda p: _relative(held, share, p)):
            cap = min(_high(share, taker) - held[taker], load.room(taker), slack)
            tp = _pick(load.replicas.get(donor, {}), need, cap)
            if tp is not None:
                return tp, donor, taker
    return None


def _fill(load: BrokerLoads, share: Mapping[str, float], opened: list[str]) -> Step | None:
    held = {p: load.bytes_in(p) for p in opened}
    under = [p for p in opened if held[p] < _low(share, p)]
    for taker in sorted(under, key=lambda p: _relative(held, share, p)):
        need = _low(share, taker) - held[taker]
        cap = min(_high(share, taker) - held[taker], load.room(taker))
        givers = [p for p in opened if p != taker and held[p] > share[p]]
        for giver in sorted(givers, key=lambda p: _relative(held, share, p), reverse=True):
            tp = _pick(load.replicas.get(giver, {}), need, min(cap, held[giver] - _low(share, giver)))
            if tp is not None:
                return tp, giver, taker
    return None


def _closer(load: BrokerLoads, share: Mapping[str, float], opened: list[str]) -> Step | None:
    """The move that brings the dirs closest to their bands, overshooting the taker's band if
    that still shortens the distance (a replica bigger than a band's room); None if none does."""
    held = {p: load.bytes_in(p) for p in opened}
    best: tuple[float, Step] | None = None
    for donor in (p for p in opened if held[p] > _high(share, p)):
        for taker in (p for p in opened if p != donor and held[p] < share[p]):
            before = _distance(share, donor, held[donor]) + _distance(share, taker, held[taker])
            for tp, size in load.replicas.get(donor, {}).items():
                if 0 < size <= load.room(taker):
                    after = _distance(share, donor, held[donor] - size) + _distance(
                        share, taker, held[taker] + size
                    )
                    gain = before - after
                    if gain > 0 and (best is None or (-gain, (tp, donor, taker)) < (-best[0], best[1])):
                        best = (gain, (tp, donor, taker))
    return None if best is None else best[1]


def _distance(share: Mapping[str, float], path: str, held: float) -> float:
    """How far ``held`` bytes are from ``path``'s band."""
    return max(0.0, held - _high(share, path)) + max(0.0, _low(share, path) - held)


def _pick(replicas: Mapping[TopicPartition, int], need: float, cap: float) -> TopicPartition | None:
    """The smallest replica of at least ``need`` bytes that fits under ``cap``, else the largest
    that fits (ties broken by partition, so plans repeat)."""
    fitting = [(size, tp) for tp, size in replicas.items() if 0 < size <= cap]
    if not fitting:
        return None
    enough = [x for x in fitting if x[0] >= need]
    return min(enough)[1] if enough else max(fitting)[1]


def _relative(held: Mapping[str, int], share: Mapping[str, float], path: str) -> float:
    return (held[path] - share[path]) / share[path] if share[path] else 0.0


def _high(share: Mapping[str, float], path: str) -> float:
    return share[path] * (1 + TOLERANCE)


def _low(share: Mapping[str, float], path: str) -> float:
    return share[path] * (1 - TOLERANCE)
