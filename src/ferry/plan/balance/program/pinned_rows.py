"""The balance program's columns and rows of pinned partitions
(:mod:`ferry.plan.balance.program.integer_program`): those that cannot keep every replica (a lowered
replication factor, two replicas in one rack, a rack below its lower bound), one ``k[p, b]`` column per
replica they may keep; and each rack's capacity row, which counts what pinned partitions keep in the rack or
still owe it.

A partition owes a rack with a lower bound ``lo`` what it does not keep there: ``z >= lo - kept``.
Where it can keep no more than ``lo`` in the rack (it holds no more there, or the rack's upper bound
is ``lo``), kept plus owed is ``lo`` at some optimum (``z`` only costs room), so the capacity row
counts the constant ``lo`` and the partition gets no ``z`` there: on three racks at three replicas,
where every rack's bounds are (1, 1), a partition two to a rack needs no ``z`` at all.

Most topics get no rack-room rows in the first solve, and ask their pinned partitions either no
lower bound (more racks than replicas) or, in every rack with one, exactly as many replicas as the
rack's upper bound (three racks at three replicas): no ``z`` then. Their columns and rows are posed
in one go with numpy, in the order the loop over partitions would pose them, so the program and its
optimum are the same."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import compress

import numpy as np

from ferry.plan.balance.program.columns import extend_from
from ferry.plan.balance.program.pinned_set import PinnedSet
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.solvers.slots import PAIR
from ferry.plan.balance.solvers.transport import OTHER, RACK
from ferry.plan.prepare.demand import Pinned, TopicDemand
from ferry.plan.racks import RackLayout


@dataclass
class InRack:
    """What stays in a rack or is still owed to it, for its capacity row: columns, and a constant."""

    cols: list[int] = field(default_factory=list)
    owed: int = 0


def pinned_columns(
    program: ProgramState, t: int, d: TopicDemand
) -> tuple[dict[int, list[int]], dict[int, InRack], dict[int, list[int]], dict[int, list[int]]]:
    """Columns k[p, b] of the pinned partitions, per broker position; per rack with a lower
    bound, what stays in or is still owed to it; per rack, the k columns of what stays in it; and
    per rack the w[p, k] columns (new replicas the rack may take)."""
    layout = program.layout
    in_rack = {k: InRack() for k in binding_floors(layout, d)}
    if not d.pinned:
        return {}, in_rack, {}, {}
    if owes_plainly(program, t, d):
        on_broker, kept_in_rack = _in_bulk(program, t, d, in_rack)
        return on_broker, in_rack, kept_in_rack, {}
    on_broker, kept_in_rack, room_cols = _one_by_one(program, t, d, in_rack)
    return on_broker, in_rack, kept_in_rack, room_cols


def _one_by_one(
    program: ProgramState, t: int, d: TopicDemand, in_rack: dict[int, InRack]
) -> tuple[dict[int, list[int]], dict[int, list[int]], dict[int, list[int]]]:
    """:func:`pinned_columns` partition by partition, whatever the partitions ask; returns the
    columns per broker position, the kept columns per rack and the room columns per rack."""
    layout = program.layout
    on_broker: dict[int, list[int]] = {}
    kept_in_rack: dict[int, list[int]] = {}
    room_cols: dict[int, list[int]] = {}
    every: list[int] = []
    for pin, size in zip(d.pinned, d.sizes or [0] * len(d.pinned), strict=True):
        cols = {}
        for b in pin.replicas:
            i = layout.position[b]
            cols[b] = program.column(1, 1, size)
            program.kept.add_one(t, cols[b])
            on_broker.setdefault(i, []).append(cols[b])
        every.extend(cols.values())
        if pin.in_sync:
            # Never keep an out-of-sync replica while dropping every in-sync one.
            synced = [(cols[b], -1.0) for b in pin.in_sync]
            for b in pin.replicas:
                if b not in pin.in_sync:
                    program.row([(cols[b], 1.0), *synced], -np.inf, 0)
        _bounded(program, (t, pin), cols, in_rack)
        for b in pin.replicas:
            kept_in_rack.setdefault(layout.rack_of[b], []).append(cols[b])
        if d.rack_room and pin.bounds is not None:
            _room_rows(program, (t, pin), cols, room_cols)
    program.pinned[t] = PinnedSet.of(d.pinned, np.array(every, dtype=np.int64), layout)
    return on_broker, kept_in_rack, room_cols


def _room_rows(
    program: ProgramState,
    pinned: tuple[int, Pinned],
    cols: Mapping[int, int],
    room_cols: dict[int, list[int]],
) -> None:
    """Columns w[p, k] of the new replicas a bounded pinned partition may take in rack ``k``, for the
    rack-room rows, with their rows."""
    t, pin = pinned
    rack_of = program.layout.rack_of
    assert pin.bounds is not None
    for k, (_, hi) in enumerate(pin.bounds):
        if not program.wants_room(t, k):
            continue
        here = [(cols[b], 1.0) for b in pin.replicas if rack_of[b] == k]
        w = program.column(min(hi, pin.rf), 0)
        room_cols.setdefault(k, []).append(w)
        # w <= rf - kept (open slots) and w <= hi - kept in the rack (room)
        program.row([(w, 1.0), *((c, 1.0) for c in cols.values())], -np.inf, pin.rf)
        if here:
            program.row([(w, 1.0), *here], -np.inf, hi)


def owes_plainly(program: ProgramState, t: int, d: TopicDemand) -> bool:
    """Whether every pinned partition of the topic gets only its pair rows and its row of at most
    ``rf`` replicas (:func:`_in_bulk`): a rack asks no lower bound of it or one that is the rack's
    upper bound too (it then keeps no more there than it owes, so it owes the rack that bound, module
    docstring, and gets no ``z``), every replica is in sync (or none is told apart), and the topic
    gets no rack-room row."""
    bounds = {p.bounds for p in d.pinned}
    return _rows_alike(program, t, d) and all(lo in (0, hi) for b in bounds if b for lo, hi in b)


def _rows_alike(program: ProgramState, t: int, d: TopicDemand) -> bool:
    """Every replica of the pinned partitions in sync (or none told apart), and no rack-room row."""
    if d.rack_room and program.room_topics(t):
        return False
    return all(set(p.replicas) <= set(p.in_sync) for p in d.pinned if p.in_sync)


def _in_bulk(
    program: ProgramState, t: int, d: TopicDemand, in_rack: dict[int, InRack]
) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """The columns and rows :func:`pinned_columns` poses for a topic :func:`owes_plainly` admits, in the
    same order, with a few array operations instead of a loop per partition (most partitions of a skewed
    start are pinned); adds what the partitions owe racks to ``in_rack``; returns the columns per broker
    position and per rack."""
    layout = program.layout
    racks = len(layout.members)
    n = len(d.pinned)
    total = sum(len(p.replicas) for p in d.pinned)
    # The columns are the next ``total`` ones, a replica each in order.
    cols = len(program.upper) + np.arange(total)
    pins = program.pinned[t] = PinnedSet.of(d.pinned, cols, layout)
    sizes = np.asarray(d.sizes, dtype=np.int64) if d.sizes else np.zeros(n, dtype=np.int64)
    program.add_columns(np.ones(total), np.ones(total, dtype=np.int64), sizes[pins.pin])
    program.kept.extend(np.full(total, t), np.full(total, -1), cols)
    counts = pins.counts()
    owed = pins.lo > 0  # what is kept there counts in the rack's capacity row, not the replicas row
    # A pair row per rack a partition holds more replicas in than the rack's upper bound allows.
    over = pins.over(counts)
    per_pin = over.sum(axis=1)
    base = np.concatenate(([0], np.cumsum(per_pin + 1)[:-1]))
    pair_pin, pair_rack = np.nonzero(over)
    # Each partition's pair rows come first, by rack, then its row of at most ``rf`` replicas.
    pair_ids = base[pair_pin] + np.arange(len(pair_pin)) - np.searchsorted(pair_pin, pair_pin)
    pair_row = np.full((n, racks), -1, dtype=np.int64)
    pair_row[pair_pin, pair_rack] = pair_ids
    in_pair = pair_row[pins.pin, pins.rack]
    replicas_row = base + per_pin
    counted = ~owed[pins.pin, pins.rack]
    rows = np.concatenate((in_pair[in_pair >= 0], replicas_row[pins.pin[counted]]))
    order = np.argsort(rows, kind="stable")
    entry_cols = np.concatenate((cols[in_pair >= 0], cols[counted]))[order]
    nrows = n + len(pair_pin)
    lows, highs = np.full(nrows, -np.inf), np.empty(nrows)
    highs[pair_ids] = pins.hi[pair_pin, pair_rack]
    highs[replicas_row] = pins.rf - pins.lo.sum(axis=1)
    kinds = np.full(nrows, OTHER, dtype=object)
    kinds[pair_ids] = PAIR
    start = len(program.lows)
    program.add_rows((rows[order], entry_cols, np.ones(len(order))), (lows, highs), kinds.tolist())
    extend_from(program.grouped[0], start + pair_ids)
    extend_from(program.grouped[1], t * racks + pair_rack)
    extend_from(program.implied, start + replicas_row[~pins.binding(counts)])
    _owe(in_rack, pins.lo)
    return _grouped(pins.position, cols), _grouped(pins.rack, cols)


def _owe(in_rack: dict[int, InRack], lo: np.ndarray) -> None:
    """What partitions owe racks (``lo``: per partition and rack, the bound each owes), into
    ``in_rack`` as :func:`_bounded` adds it: a rack new to it in the order the partitions first owe
    one, then by rack."""
    racks = np.flatnonzero(lo.any(axis=0))
    first = (lo[:, racks] > 0).argmax(axis=0)
    totals = lo.sum(axis=0)
    for k in racks[np.lexsort((racks, first))].tolist():
        in_rack.setdefault(k, InRack()).owed += int(totals[k])


def _grouped(keys: np.ndarray, cols: np.ndarray) -> dict[int, list[int]]:
    """``cols`` by key, each list in the columns' order. A topic's pinned replicas are tens, where
    a loop costs less than the sorts and splits numpy would make of them."""
    out: dict[int, list[int]] = {}
    for key, col in zip(keys.tolist(), cols.tolist(), strict=True):
        out.setdefault(key, []).append(col)
    return out


def binding_floors(layout: RackLayout, d: TopicDemand) -> list[int]:
    """The racks with a floor (:attr:`~ferry.plan.prepare.demand.TopicDemand.rack_floor`) whose capacity row
    (:func:`rack_capacity`) the topic needs.

    Without pinned partitions or shrinking groups that row only asks for ``floor - base`` extras
    in the rack, which the topic's rack row already asks for where the quota's rack minimum covers
    the floor: always when every partition keeps its factor (the minimum is then the sum of the
    partitions' lower bounds), as on three racks at three replicas, where every topic has floors."""
    floored = [k for k, f in enumerate(d.rack_floor) if f > 0]
    if not floored or d.pinned or d.shrink_groups:
        return floored
    return _beyond_rack_rows(layout, d, [0] * len(layout.members))


def capacity_posed(layout: RackLayout, d: TopicDemand) -> bool:
    """Whether the topic poses a rack capacity row (:func:`rack_capacity`), where its pinned
    partitions owe racks only their upper bounds (:func:`owes_plainly`: no ``z``), and it has no
    shrinking group.

    A rack with a floor then counts only its extras, at least ``floor + owed - base`` of them, and
    the row is left out where the topic's rack row asks as many already: on three racks at three
    replicas, where every partition not pinned keeps one replica per rack and every pinned one owes
    each rack one, the floor and what is owed are the rack's base and least extras exactly. A rack
    without a floor that pinned partitions owe counts what free partitions keep there: posed where
    it holds any. Where it holds none (on a skewed start many small topics have every partition
    pinned, and no floor anywhere), the row counts extras alone, as a floored rack's does."""
    racks = len(layout.members)
    owed = [0] * racks
    for bounds, n in Counter(p.bounds for p in d.pinned if p.bounds).items():
        for k, (lo, _) in enumerate(bounds):
            owed[k] += lo * n
    floor = d.rack_floor or (0,) * racks
    bare = [k for k, (n, f) in enumerate(zip(owed, floor, strict=True)) if n > 0 and f == 0]
    if bare:
        held = _free_racks(layout, d.free)
        if any(held[k] for k in bare):
            return True
    return bool(_beyond_rack_rows(layout, d, owed))


def _free_racks(layout: RackLayout, free: tuple[int, ...]) -> list[bool]:
    """Per rack, whether any of its brokers holds ``free`` replicas."""
    held = [False] * len(layout.members)
    for i in compress(range(len(free)), free):
        held[layout.rack_at[i]] = True
    return held


def _beyond_rack_rows(layout: RackLayout, d: TopicDemand, owed: list[int]) -> list[int]:
    """The racks with a floor, or owed by pinned partitions, whose capacity row asks for more extras
    than the topic's rack row: at least ``floor + owed - base`` of them, ``owed`` what pinned
    partitions owe each rack."""
    base = layout.base_by_rack(d.quota.base)
    extras = d.quota.rack_extras
    floor = d.rack_floor or (0,) * len(layout.members)
    return [k for k, f in enumerate(floor) if (f > 0 or owed[k] > 0) and f + owed[k] - base[k] > extras[k][0]]


def _bounded(
    program: ProgramState, pinned: tuple[int, Pinned], cols: Mapping[int, int], in_rack: dict[int, InRack]
) -> None:
    """The rack and replica rows of a pinned partition (of topic ``t``: ``pinned`` is both); what it
    keeps in or owes each rack, into ``in_rack``."""
    pin = pinned[1]
    needs, owed = _rack_rows(program, pinned, cols)
    _replicas_row(program, pinned, cols, needs, owed)
    rack_of = program.layout.rack_of
    for k, z in needs:
        in_rack.setdefault(k, InRack()).cols.extend([z, *(cols[b] for b in pin.replicas if rack_of[b] == k)])
    for k, lo in owed.items():
        in_rack.setdefault(k, InRack()).owed += lo


def _rack_rows(
    program: ProgramState, pinned: tuple[int, Pinned], cols: Mapping[int, int]
) -> tuple[list[tuple[int, int]], dict[int, int]]:
    """Per-rack caps of a pinned partition; returns (rack, z column) for racks with a lower bound
    that it can keep more replicas in, and per rack with a lower bound that it can keep no more in,
    the bound (kept plus owed there: module docstring)."""
    t, pin = pinned
    needs: list[tuple[int, int]] = []
    owed: dict[int, int] = {}
    if pin.bounds is None:
        return needs, owed
    racks = len(program.layout.members)
    for k, (lo, hi) in enumerate(pin.bounds):
        mine = [(cols[b], 1.0) for b in pin.replicas if program.layout.rack_of[b] == k]
        if len(mine) > hi:
            program.row(mine, -np.inf, hi, PAIR, t * racks + k)
        if 0 < lo < min(len(mine), hi):
            z = program.column(lo, 0)
            needs.append((k, z))
            program.owing_row([*mine, (z, 1.0)], (lo, np.inf), (t, k), z)
        elif lo > 0:
            owed[k] = lo
    return needs, owed


def _replicas_row(
    program: ProgramState,
    pinned: tuple[int, Pinned],
    cols: Mapping[int, int],
    needs: list[tuple[int, int]],
    owed: Mapping[int, int],
) -> None:
    """At most ``rf`` replicas kept or still owed to racks below their lower bound; in a rack
    that ``owed`` names, that is its bound whatever is kept. ``pinned``: the partition and its topic."""
    t, pin = pinned
    implied = _never_binds(pin, program.layout)
    held_back = bool(needs) and program.defers(t)
    if implied and held_back:
        return  # the flow would leave it out, and it holds: nothing to check after solving
    rack_of = program.layout.rack_of
    kept = [(c, 1.0) for b, c in cols.items() if rack_of[b] not in owed]
    terms = [*kept, *((z, 1.0) for _, z in needs)]
    bounds = (-np.inf, pin.rf - sum(owed.values()))
    if held_back:
        program.deferred.add(terms, bounds, (t, 0))
        return
    if implied:
        program.implied.append(len(program.lows))
    program.row(terms, *bounds)


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


def rack_capacity(
    program: ProgramState,
    topic: tuple[int, TopicDemand],
    k: int,
    held: InRack,
    extras: tuple[Mapping[int, int], Mapping[int, int], list[int]],
    *,
    owing: bool = False,
) -> None:
    """A rack's quota must hold what stays in it plus what its lower bounds still ask for.
    ``extras``: the topic's ``x`` columns and ``f`` columns by broker position, and its pooled
    columns in the rack; ``owing``: the topic has partitions that still owe a rack (``z``), and the
    row is held back where the program defers such rows."""
    t, d = topic
    mine, free_cols, pooled = extras
    layout = program.layout
    floor = d.rack_floor[k] if d.rack_floor else 0
    terms = [(c, 1.0) for c in held.cols]
    terms += [(c, -1.0) for c in pooled]
    rack_at = layout.rack_at
    terms += [(c, -1.0) for i, c in mine.items() if rack_at[i] == k]
    room = layout.base_by_rack(d.quota.base)[k] - floor - held.owed
    if floor == 0:
        # Free partitions have no lower bound here: what they keep in the rack counts.
        for b in layout.members[k]:
            i = layout.position[b]
            if i in free_cols:
                terms.append((free_cols[i], 1.0))
            else:
                room -= d.free[i]
    if all(v == -1.0 for _, v in terms):
        # Extras alone: at least ``-room`` of them in rack k, a bound the flow can take; left out
        # where the topic's rack row, on the same columns, asks for as many already.
        if -room > (d.quota.rack_extras[k][0] if terms else 0):
            program.row([(c, 1.0) for c, _ in terms], -room, np.inf, RACK)
    elif owing:
        program.owing_row(terms, (-np.inf, room), (t, k))
    else:
        program.row(terms, -np.inf, room)
