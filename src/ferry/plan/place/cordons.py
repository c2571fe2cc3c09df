"""Cordoned brokers (Kafka 4.3, KIP-1066) keep what they hold and take nothing new.

The passes balance over every target broker, a cordoned one included, so a cordoned broker keeps
its replicas where balance allows; a replica the plan would add on it goes instead to the target
broker holding the fewest replicas that the rack rule (:func:`ferry.plan.racks.may_take`) allows
and that is not cordoned. The plan makes no more moves than before (one fewer where that broker
is one the partition was leaving, which then stays), and the cordoned broker ends below its share.
Where no broker may take such a replica the plan keeps it, and ``ferry plan`` refuses the plan,
naming the broker.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from functools import partial

from ferry.model.cluster import PartitionState
from ferry.model.goal import RackMode
from ferry.plan.place.takers import least_loaded
from ferry.plan.racks import RackLayout, may_take

Planned = tuple[PartitionState, tuple[int, ...]]


def around_cordons(
    full: Sequence[Planned], layout: RackLayout, mode: RackMode, cordoned: Collection[int]
) -> list[Planned]:
    """``full`` (every partition with its planned replicas, preferred leader first) with each replica
    it would add on a ``cordoned`` broker given to another broker, in partition order."""
    closed = set(cordoned) & set(layout.brokers)
    if not closed:
        return list(full)
    load = Counter(b for _, target in full for b in target)
    out = []
    for state, target in full:
        replicas = list(target)
        for b in [b for b in target if b in closed and b not in state.replicas]:
            others = [x for x in replicas if x != b and x in layout.rack_of]
            taker = least_loaded(layout, load, partial(_open_taker, layout, mode, closed, replicas, others))
            if taker is not None:
                replicas[replicas.index(b)] = taker
                load[b] -= 1
                load[taker] += 1
        out.append((state, tuple(replicas)))
    return out


def _open_taker(
    layout: RackLayout,
    mode: RackMode,
    closed: Collection[int],
    replicas: Sequence[int],
    others: Sequence[int],
    c: int,
) -> bool:
    """Whether ``c`` may take the replica: not cordoned, not holding one, and the rack rule allows it."""
    return c not in closed and c not in replicas and may_take(layout, mode, others, len(replicas), c)
