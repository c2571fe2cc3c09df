"""The arcs of an exact flow for topics whose partitions a rack may hold two replicas of (fewer
racks than replicas, or no racks at all: one rack of every broker).

The network of :mod:`ferry.plan.balance.repair.kept_flow` sends a partition's new replicas in a
rack to the rack as a whole. Where the rack may hold two replicas of the partition, two new ones
may then land on one broker, or a new one beside a kept one on its broker: the count is a
relaxation. On a removal of two brokers of ten over two racks at RF 3 it counted 126 kept replicas
for topics whose quotas keep 125, so the exact pass saw no topic short and the plan ended above
its bound (docs/benchmarks.md). Here each (partition, rack) pair reaches every broker of the rack
by its own arc of capacity one, kept or new::

    partition --[rack bounds]--> (partition, rack) --[1; cost -1 where it holds the broker]--> broker
    broker --[exactly its quota]--> sink

with arcs only to the brokers whose quota takes some of the topic, and those of a rack that take
one replica and hold none of the partitions in the flow as one node (:func:`_fresh`). Partition by
partition this is the placement itself (no two replicas on a broker, each rack within its bounds,
each broker at its quota), so the count is exact. It costs an arc per partition and broker with
room of the racks it may use, which is why only the topics that need it are posed this way.
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
    two = flat.hi[flat.rf[part]].max(axis=1, initial=0) >= 2
    found: np.ndarray = np.bincount(flat.topic[part], weights=two, minlength=topics) > 0
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
    brokers with room, with the nodes each topic's pairs and such brokers take from ``first`` on.

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
    placing = np.bincount(ptopic, minlength=topics) > 0
    fresh = _fresh(flat, part, left, placing)
    # Only brokers with room (and not fresh): most of a small topic's brokers take none of it
    # where there are many.
    room_topic, room_pos = np.nonzero((left > 0) & placing[:, None] & ~fresh)
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
    # Numbered in their topic: a node per broker of every topic was most of the network's nodes
    # on a cluster of 200 brokers without racks.
    n_room = np.bincount(room_topic, minlength=topics)
    room_node = broker_first[room_topic] + rank(room_topic, n_room)
    arc_node = room_node[np.searchsorted(room_topic * brokers + room_pos, arc_topic * brokers + pos)]
    kinds = [
        (pair_topic, part_node[rows], pair_node, flat.lo[rf, rack], flat.hi[rf, rack], 0),
        (
            arc_topic,
            pair_node[arc_pair],
            arc_node,
            np.zeros_like(pos),
            np.ones_like(pos),
            -(replica >= 0).astype(np.int64),
        ),
        (room_topic, room_node, np.full_like(room_pos, racks), quota, quota, 0),
        *_fresh_arcs(fresh, rack_at, racks, pair_topic, pair_node, key),
    ]
    added = n_pairs + n_room
    others = [np.full(len(k[0]), -1, dtype=np.int64) for k in kinds]
    return kinds, added, [*others[:1], replica, *others[2:]]


def _fresh_arcs(
    fresh: np.ndarray,
    rack_at: np.ndarray,
    racks: int,
    pair_topic: np.ndarray,
    pair_node: np.ndarray,
    key: np.ndarray,
) -> list[Arcs]:
    """A rack's ``fresh`` brokers as one node, the rack's own local node (a topic posed broker by
    broker sends nothing to its racks otherwise): an arc from each (partition, rack) pair (``key``:
    topic and rack) to it, and from it to the sink exactly as many replicas as they take."""
    topics = len(fresh)
    fresh_topic, fresh_pos = np.nonzero(fresh)
    n_fresh = np.bincount(fresh_topic * racks + rack_at[fresh_pos], minlength=topics * racks)
    to = np.flatnonzero(n_fresh[key] > 0)
    taking = np.flatnonzero(n_fresh)
    rack = key[to] % racks
    return [
        (pair_topic[to], pair_node[to], rack, np.zeros_like(to), n_fresh[key[to]], 0),
        (taking // racks, taking % racks, np.full_like(taking, racks), n_fresh[taking], n_fresh[taking], 0),
    ]


def _fresh(flat: FlatLayouts, part: np.ndarray, left: np.ndarray, placing: np.ndarray) -> np.ndarray:
    """Per topic and broker position: the broker takes exactly one more replica of the topic and
    holds none of its ``part`` partitions. A rack's such brokers are one node of the flow: any
    partitions sending them ``d_p`` new replicas, ``d_p`` at most their number and as many in all,
    fill them one each on distinct brokers (one partition's after the other's), none beside a
    replica its partition keeps. On topics of a dozen partitions over 200 brokers most brokers
    with room are such."""
    moving = np.zeros(len(flat.rf), dtype=bool)
    moving[part] = True
    reps = moving[flat.rep_part]
    holds = np.zeros(left.shape, dtype=bool)
    holds[flat.topic[flat.rep_part[reps]], flat.rep_pos[reps]] = True
    fresh: np.ndarray = (left == 1) & ~holds & placing[:, None]
    return fresh


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
