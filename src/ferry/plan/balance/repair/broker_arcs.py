"""The arcs of an exact flow for topics whose partitions a rack may hold two replicas of (fewer
racks than replicas, racks of unequal size, or no racks at all: one rack of every broker).

The network of :mod:`ferry.plan.balance.repair.kept_flow` sends a partition's new replicas in a
rack to the rack as a whole. Where the rack may hold two replicas of the partition, two new ones
may then land on one broker, or a new one beside a kept one on its broker: the count is a
relaxation. On a removal of two brokers of ten over two racks at RF 3 it counted 126 kept replicas
for topics whose quotas keep 125, so the exact pass saw no topic short and the plan ended above
its bound (docs/benchmarks.md). Here each (partition, rack) pair reaches every broker of the rack
by its own arc of capacity one, kept or new::

    partition --[rack bounds]--> (partition, rack) --[1; cost -1 where it holds the broker]--> broker
    broker --[exactly its quota]--> sink

with arcs only to the brokers whose quota takes some of the topic. Partition by partition this is
the placement itself (no two replicas on a broker, each rack within its bounds, each broker at its
quota), so the count is exact. It costs an arc per partition and broker of the racks it may use,
which is why only the topics that need it are posed this way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ferry.plan.balance.repair.flat_layouts import FlatLayouts
from ferry.plan.consecutive import rank, spans, starts
from ferry.plan.prepare.demand import FreeLayouts
from ferry.plan.racks import RackLayout

Arcs = tuple[Any, ...]
"""Topic, tail, head, lower bound, capacity and cost (a value, or one per arc) of a kind of arcs."""


def crowds(layout: RackLayout, topic: FreeLayouts) -> bool:
    """Whether a rack may hold two replicas of one of the ``topic``'s partitions."""
    return any(hi >= 2 for rf in set(topic.rf) for _, hi in layout.bounds(rf))


def crowding(flat: FlatLayouts, part: np.ndarray, topics: int) -> np.ndarray:
    """Per topic, whether a rack may hold two replicas of one of its ``part`` partitions."""
    crowds = flat.hi[flat.rf[part]].max(axis=1, initial=0) >= 2
    found: np.ndarray = np.bincount(flat.topic[part], weights=crowds, minlength=topics) > 0
    return found


def broker_arcs(
    flat: FlatLayouts,
    part: np.ndarray,
    part_node: np.ndarray,
    first: np.ndarray,
    left: np.ndarray,
    rack_at: np.ndarray,
) -> tuple[list[Arcs], np.ndarray, list[np.ndarray]]:
    """The arcs of the ``part`` partitions (sorted, at local nodes ``part_node``) and their topics'
    brokers, with the nodes each topic's pairs and brokers take from ``first`` on.

    Returns the kinds of arcs, the nodes each topic adds, and per kind and arc the replica (flat
    index) the arc keeps in place, -1 for the others.
    """
    topics, brokers = left.shape
    racks = int(flat.hi.shape[1])
    ptopic = flat.topic[part]
    rows, rack = np.nonzero(flat.hi[flat.rf[part]] > 0)
    pair_topic = ptopic[rows]
    n_pairs = np.bincount(pair_topic, minlength=topics)
    pair_node = first[pair_topic] + rank(pair_topic, n_pairs)
    broker_first = first + n_pairs
    rf = flat.rf[part[rows]]
    # Only brokers whose quota takes the topic at all: most of a small topic's brokers take none
    # of it where there are many.
    placing = np.bincount(ptopic, minlength=topics) > 0
    room_topic, room_pos = np.nonzero((left > 0) & placing[:, None])
    room_key = room_topic * racks + rack_at[room_pos]
    by_key = room_pos[np.argsort(room_key, kind="stable")]
    width_of = np.bincount(room_key, minlength=topics * racks)
    key = pair_topic * racks + rack
    width = width_of[key]
    arc_pair = np.repeat(np.arange(len(rows)), width)
    pos = by_key[spans(starts(width_of)[key], width)]
    arc_topic = pair_topic[arc_pair]
    replica = _held(flat, part[rows[arc_pair]], pos, brokers)
    quota = left[room_topic, room_pos]
    kinds = [
        (pair_topic, part_node[rows], pair_node, flat.lo[rf, rack], flat.hi[rf, rack], 0),
        (
            arc_topic,
            pair_node[arc_pair],
            broker_first[arc_topic] + pos,
            np.zeros_like(pos),
            np.ones_like(pos),
            -(replica >= 0).astype(np.int64),
        ),
        (room_topic, broker_first[room_topic] + room_pos, np.full_like(room_pos, racks), quota, quota, 0),
    ]
    added = n_pairs + np.where(placing, brokers, 0)
    others = [np.full(len(k[0]), -1, dtype=np.int64) for k in kinds]
    return kinds, added, [others[0], replica, others[2]]


def _held(flat: FlatLayouts, part: np.ndarray, pos: np.ndarray, brokers: int) -> np.ndarray:
    """Per (partition, broker position), the replica (flat index) the partition holds there, -1
    where it holds none."""
    keys = flat.rep_part * brokers + flat.rep_pos
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    wanted = part * brokers + pos
    at = np.minimum(np.searchsorted(ordered, wanted), max(len(ordered) - 1, 0))
    found = (ordered[at] == wanted) if len(ordered) else np.zeros(len(wanted), dtype=bool)
    out: np.ndarray = np.where(found, order[at] if len(ordered) else -1, -1)
    return out
