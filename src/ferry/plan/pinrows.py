"""The balance program's columns and rows of pinned partitions (:mod:`ferry.plan.program`): those
that cannot keep every replica (a lowered replication factor, two replicas in one rack, a rack below
its lower bound), one ``k[p, b]`` column per replica they may keep."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ferry.plan.racks import RackLayout
from ferry.plan.terms import Pinned, TopicDemand

if TYPE_CHECKING:
    from ferry.plan.program import Program


def pinned_columns(
    program: Program, t: int, d: TopicDemand
) -> tuple[dict[int, list[int]], dict[int, list[int]], dict[int, list[int]], dict[int, list[int]]]:
    """Columns k[p, b] of the pinned partitions, per broker position; per rack with a lower
    bound, the columns of what stays in or is still owed to it; per rack, the k columns of what
    stays in it; and per rack the w[p, k] columns (new replicas the rack may take)."""
    layout = program.layout
    on_broker: dict[int, list[int]] = {}
    in_rack: dict[int, list[int]] = {k: [] for k in binding_floors(layout, d)}
    kept_in_rack: dict[int, list[int]] = {}
    room_cols: dict[int, list[int]] = {}
    for pin, size in zip(d.pinned, d.sizes or [0] * len(d.pinned), strict=True):
        cols = {}
        for b in pin.replicas:
            i = layout.position[b]
            cols[b] = program.column(1, 1, size)
            program.kept.add_one(t, cols[b])
            on_broker.setdefault(i, []).append(cols[b])
        if pin.in_sync:
            # Never keep an out-of-sync replica while dropping every in-sync one.
            synced = [(cols[b], -1.0) for b in pin.in_sync]
            for b in pin.replicas:
                if b not in pin.in_sync:
                    program.row([(cols[b], 1.0), *synced], -np.inf, 0)
        needs = _rack_rows(program, pin, cols)
        _replicas_row(program, pin, cols, needs)
        for k, z in needs:
            in_rack.setdefault(k, []).extend([z, *(cols[b] for b in pin.replicas if layout.rack_of[b] == k)])
        for b in pin.replicas:
            kept_in_rack.setdefault(layout.rack_of[b], []).append(cols[b])
        program.pinned_cols[t].append((pin, cols))
        if d.rack_room and pin.bounds is not None:
            for k, (_, hi) in enumerate(pin.bounds):
                if not program.wants_room(t, k):
                    continue
                here = [(cols[b], 1.0) for b in pin.replicas if layout.rack_of[b] == k]
                w = program.column(min(hi, pin.rf), 0)
                room_cols.setdefault(k, []).append(w)
                # w <= rf - kept (open slots) and w <= hi - kept in the rack (room)
                program.row([(w, 1.0), *((c, 1.0) for c in cols.values())], -np.inf, pin.rf)
                if here:
                    program.row([(w, 1.0), *here], -np.inf, hi)
    return on_broker, in_rack, kept_in_rack, room_cols


def binding_floors(layout: RackLayout, d: TopicDemand) -> list[int]:
    """The racks with a floor (:attr:`~ferry.plan.terms.TopicDemand.rack_floor`) whose capacity row
    (:meth:`~ferry.plan.program.Program._rack_capacity`) the topic needs.

    Without pinned partitions or shrinking groups that row only asks for ``floor - base`` extras
    in the rack, which the topic's rack row already asks for where the quota's rack minimum covers
    the floor: always when every partition keeps its factor (the minimum is then the sum of the
    partitions' lower bounds), as on three racks at three replicas, where every topic has floors."""
    floored = [k for k, f in enumerate(d.rack_floor) if f > 0]
    if not floored or d.pinned or d.shrink_groups:
        return floored
    base = [0] * len(layout.members)
    for k, b in zip(layout.rack_at, d.quota.base, strict=True):
        base[k] += b
    return [k for k in floored if d.rack_floor[k] > base[k] + d.quota.rack_extras[k][0]]


def _rack_rows(program: Program, pin: Pinned, cols: Mapping[int, int]) -> list[tuple[int, int]]:
    """Per-rack caps of a pinned partition; returns (rack, z column) for racks with a lower bound."""
    needs: list[tuple[int, int]] = []
    if pin.bounds is None:
        return needs
    for k, (lo, hi) in enumerate(pin.bounds):
        mine = [(cols[b], 1.0) for b in pin.replicas if program.layout.rack_of[b] == k]
        if len(mine) > hi:
            program.row(mine, -np.inf, hi)
        if lo > 0:
            z = program.column(lo, 0)
            needs.append((k, z))
            program.row([*mine, (z, 1.0)], lo, np.inf)
    return needs


def _replicas_row(
    program: Program, pin: Pinned, cols: Mapping[int, int], needs: list[tuple[int, int]]
) -> None:
    """At most ``rf`` replicas kept or still owed to racks below their lower bound."""
    if _never_binds(pin, program.layout):
        program.implied.append(len(program.lows))
    program.row([*((c, 1.0) for c in cols.values()), *((z, 1.0) for _, z in needs)], -np.inf, pin.rf)


def _never_binds(pin: Pinned, layout: RackLayout) -> bool:
    """Whether the partition's row of at most ``rf`` replicas (kept, and still owed to racks below
    their lower bound) is implied by its rack rows.

    An owed count ``z`` only costs room in its rack, so some optimum owes no more than the rack
    lacks: ``max(kept, lo)`` per rack. Where even keeping the most each rack allows adds up to no
    more than ``rf``, the row holds there (one replica per rack of three, say)."""
    if pin.bounds is None:
        return False
    here = [0] * len(pin.bounds)
    for b in pin.replicas:
        here[layout.rack_of[b]] += 1
    return sum(max(min(n, hi), lo) for n, (lo, hi) in zip(here, pin.bounds, strict=True)) <= pin.rf
