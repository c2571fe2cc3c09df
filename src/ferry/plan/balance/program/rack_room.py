"""The balance program's rack-room rows (:mod:`ferry.plan.balance.program.integer_program`, module docstring):
what a rack must receive fits into open slots with room in it. Posed per (topic, rack) by
:func:`rack_room_row`; :func:`room_violations` tells which rows left out of a relaxed program its
solution breaks."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import compress

import numpy as np

from ferry.plan.balance.program.plain_rack_room import plain_violations
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.prepare.demand import TopicDemand


def rack_room_row(
    program: ProgramState,
    d: TopicDemand,
    k: int,
    extras: tuple[Mapping[int, int], list[int]],
    free_cols: Mapping[int, int],
    pinned_kept: list[int],
    pinned_room: list[int],
) -> None:
    """What rack ``k`` must receive fits into open slots with room in it (module docstring).

    ``sum_{b in k} (base + x - kept) - sum_b y[b, k] - sum_p w[p, k] <= rack_open[k]``, where the
    kept replicas of free partitions on ``b`` are ``f[b]`` (or all of them without a column) and
    ``extras`` are the topic's ``x`` columns per broker position and its pooled columns in ``k``.
    """
    layout = program.layout
    mine, pooled = extras
    terms: list[tuple[int, float]] = [(c, -1.0) for c in pinned_kept]
    terms += [(c, 1.0) for c in pooled]
    terms += [(w, -1.0) for w in pinned_room]
    bound = float(d.rack_open[k])
    for b in layout.members[k]:
        i = layout.position[b]
        bound -= d.quota.base[i]
        if i in mine:
            terms.append((mine[i], 1.0))
        if i in free_cols:
            terms.append((free_cols[i], -1.0))
        else:
            bound += d.free[i]
    for i, f in free_cols.items():
        room = d.rack_room[i][k]
        drops = d.free[i]  # at most this many free replicas leave broker i
        if room <= 0:
            continue
        if room >= drops:
            # y = drops = free - f
            terms.append((f, 1.0))
            bound += drops
        else:
            y = program.column(room, 0)
            program.row([(y, 1.0), (f, 1.0)], -np.inf, drops)
            terms.append((y, -1.0))
    program.row(terms, -np.inf, bound)


def room_violations(program: ProgramState) -> set[tuple[int, int]]:
    """The (topic, rack) pairs whose rack-room row the solution breaks even with the best
    ``y`` and ``w`` for it (the row's own columns, absent while the row is)."""
    out, checked = plain_violations(program)
    for t, d in enumerate(program.demands):
        if d.rack_room and not checked[t]:
            need, avail = _free_room(program, t, d)
            _group_room(program, t, d, need, avail)
            _pinned_room(program, t, need, avail)
            out |= {(t, k) for k in range(len(need)) if need[k] > avail[k] + 0.5}
    return out


def _free_room(program: ProgramState, t: int, d: TopicDemand) -> tuple[list[float], list[float]]:
    """Per rack: replicas it must receive, and open slots with room in it, from free partitions.

    Brokers holding nothing of the topic keep and drop nothing, so only holders and the brokers
    taking an extra are looked at: a small topic touches few of many brokers."""
    x, layout, free = program.solution, program.layout, d.free
    rack_at, base = layout.rack_at, d.quota.base
    need = [float(n) for n in layout.base_by_rack(d.quota.base)]
    extra = {i: float(x[c]) for i, c in program.extras.of(t)}
    if program.pools.into:
        extra.update(dict.fromkeys(program.pools.split[t], 1.0))  # pooled: idle brokers
    for i, v in extra.items():
        need[rack_at[i]] += v
    # Without a column, everything a broker holds of free partitions stays.
    kept = {i: float(free[i]) for i in compress(range(len(free)), free)}
    kept.update((i, float(x[c])) for i, c in program.free_at[t])
    kept.update((i, min(free[i], base[i] + extra.get(i, 0.0))) for i in program.implied_at[t])
    avail = [float(n) for n in d.rack_open]
    for i, k_i in kept.items():
        need[rack_at[i]] -= k_i
        drops = free[i] - k_i
        if drops > 0:
            avail = [a + min(r, drops) for a, r in zip(avail, d.rack_room[i], strict=True)]
    return need, avail


def _group_room(program: ProgramState, t: int, d: TopicDemand, need: list[float], avail: list[float]) -> None:
    for g, group in enumerate(d.shrink_groups):
        counts = program.group_counts(t, g, group)
        opened = group.rf * len(group.members) - sum(counts.values())
        for r, (_, hi) in enumerate(program.layout.bounds(group.rf)):
            here = sum(n for b, n in counts.items() if program.layout.rack_of[b] == r)
            need[r] -= here
            avail[r] += max(0, min(opened, hi * len(group.members) - here))


def _pinned_room(program: ProgramState, t: int, need: list[float], avail: list[float]) -> None:
    pins = program.pinned[t]
    if pins is None:
        return
    kept, room = pins.room(program.solution)
    for k, (v, r) in enumerate(zip(kept.tolist(), room.tolist(), strict=True)):
        need[k] -= v
        avail[k] += r
