"""Byte balance (``--balance bytes``): even disk bytes per broker, moving as few bytes as possible.

Operators rebalance mostly because a disk fills up, and partitions differ in size a thousandfold,
so even replica counts can leave one disk twice as full as another. This planner evens the bytes
instead, with the same rack rule and the same even preferred leaders as the replica planner.

Targets. Every target broker should hold its share of the bytes: the cluster's bytes (those of the
partitions in scope as planned, plus those of the partitions out of scope, which stay) in
proportion to its weight, 1 or its disk capacity (``--capacity``: the same fraction in use
everywhere). The rack rule bounds each rack's bytes (RF 3 over three racks: every rack holds one
replica of every partition), so the shares are water-filled over racks as for replica counts
(:mod:`ferry.plan.prepare.quotas`), and a broker's target is its weight's part of its rack's share. A plan
is balanced when every broker ends within :data:`TOLERANCE` of its target.

Lower bound on bytes moved. A broker gains bytes only by receiving replicas, so a balanced plan
moves at least ``sum_b max(0, (1 - TOLERANCE) * target_b - held_b)`` bytes, where ``held_b`` is what
``b`` holds now; unless a replication factor goes down, a broker loses bytes only by sending
replicas, so at least ``sum_b max(0, held_b - (1 + TOLERANCE) * target_b)``; and a partition short
of replicas on target brokers (a removed broker, a higher replication factor, a rack over the
rule's bound) needs that many new copies of itself. The largest of the three is reported. When no
replica is small enough to bring a broker inside its band, the band's edge is replaced by where the
plan leaves that broker: the bound is then that of every plan at least as balanced as this one,
and never above the bytes this plan moves.

Plan. Replicas must leave brokers that are removed and racks over the rule's bound, and a lower
replication factor drops replicas (out-of-sync ones first, then on the fullest brokers); the open
slots go to the brokers furthest below their target. Then, while a broker is outside its band,
replicas move from the fullest brokers to the emptiest, each the largest that fits what both ends
lack, so that no byte is moved past the target: the bytes moved stay close to the bound.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence, Set
from dataclasses import dataclass

from ferry.errors import PreconditionError
from ferry.model.cluster import ClusterSnapshot, PartitionState
from ferry.model.goal import Goal
from ferry.plan.disk.state import TOLERANCE, Disk, DiskTargets, byte_changes, disk_targets, fixed_bytes
from ferry.plan.leaders.preferred import choose_leaders
from ferry.plan.racks import RackLayout

_SEARCH = 256
"""Replicas looked at per (donor, receiver) pair before giving up on it: keeps a step bounded on
brokers holding tens of thousands of replicas (almost always the first few fit)."""


@dataclass(frozen=True, slots=True)
class DiskPlan:
    """Per partition in scope: its planned replicas (kept ones first) and preferred leader; and the
    report's disk section."""

    planned: list[tuple[PartitionState, tuple[int, ...]]]
    leaders: list[int]
    figures: dict[str, object]
    layout: RackLayout
    aims: DiskTargets
    before: list[float]
    """Every target broker's bytes before the plan."""

    def figures_of(self, planned: Sequence[tuple[PartitionState, Sequence[int]]]) -> dict[str, object]:
        """The disk section for another placement of the same partitions (a budgeted step of
        this plan): its bytes per broker after, against the same targets and bound."""
        after = list(self.before)
        position = self.layout.position
        for b, change in byte_changes(planned).items():
            if b in position:
                after[position[b]] += change
        bound = int(str(self.figures["bytes_lower_bound"]))
        return _figures(self.layout, self.aims, self.before, after, bound)


def plan_disk(
    snapshot: ClusterSnapshot, goal: Goal, targets: Sequence[int], scope: Sequence[PartitionState]
) -> DiskPlan:
    """Plan the byte balance of the partitions in ``scope``; see the module docstring.

    Raises:
        PreconditionError: with ``goal.capacity``, the plan would fill a broker beyond
            ``goal.max_disk_fraction`` of its capacity.
    """
    layout = RackLayout.of(snapshot.racks, targets)
    factors = [goal.replication_factors.get(p.tp.topic, p.replication_factor) for p in scope]
    fixed = fixed_bytes(snapshot, goal, layout)
    aims = disk_targets(layout, scope, factors, fixed, goal)
    disk = Disk(layout, scope, fixed, goal)
    before = list(disk.bytes)
    copies = sum(_copies(disk, p, rf) * scope[p].size for p, rf in enumerate(factors))
    for p, rf in enumerate(factors):
        _shed(disk, aims, p, rf)
    for p in sorted(range(len(scope)), key=lambda p: (-scope[p].size, p)):
        _fill(disk, aims, p, factors[p])
    _balance(disk, aims, factors)
    leaders = _even_leaders(disk, factors)
    _check_capacity(disk, goal)
    shrinks = any(rf < p.replication_factor for rf, p in zip(factors, scope, strict=True))
    bound = max(copies, _balance_bound(aims, before, disk.bytes, shrinks=shrinks))
    planned = [(state, tuple(reps)) for state, reps in zip(scope, disk.replicas, strict=True)]
    return DiskPlan(planned, leaders, _figures(layout, aims, before, disk.bytes, bound), layout, aims, before)


def _even_leaders(disk: Disk, factors: Sequence[int]) -> list[int]:
    """Preferred leaders as even as the replicas allow (:func:`ferry.plan.leaders.preferred.choose_leaders`).

    Bytes decide where replicas go, so a broker holding few big replicas may hold too few to lead
    its share. Such a broker takes a replica of the smallest partition a broker leading two or more
    above it leads, and leads that partition; the bytes this shifts are the smallest there are."""
    current = [s.current_leader for s in disk.parts]
    brokers = disk.layout.brokers
    leaders = choose_leaders(disk.replicas, current, brokers)
    led = Counter({b: 0 for b in brokers})
    led.update(leaders)
    smallest = sorted(range(len(leaders)), key=lambda p: (disk.parts[p].size, p))
    cursor = dict.fromkeys(brokers, 0)
    stuck: set[int] = set()
    while len(stuck) < len(brokers):
        dest = min((b for b in brokers if b not in stuck), key=lambda b: (led[b], b))
        if max(led.values()) - led[dest] <= 1:
            break
        if not _lead_one_more(disk, factors, leaders, led, dest, smallest, cursor):
            stuck.add(dest)
    return leaders


def _lead_one_more(
    disk: Disk,
    factors: Sequence[int],
    leaders: list[int],
    led: Counter[int],
    dest: int,
    smallest: Sequence[int],
    cursor: dict[int, int],
) -> bool:
    """Give ``dest`` the lead of the next smallest partition led by a broker two or more above it,
    moving a replica there when it holds none; ``False`` when no partition is left to look at.

    ``cursor`` remembers, per broker, how far down ``smallest`` it has looked: a partition passed
    over stays passed over, which keeps the whole pass linear in the partitions per broker."""
    while cursor[dest] < len(smallest):
        p = smallest[cursor[dest]]
        cursor[dest] += 1
        giver = leaders[p]
        if led[giver] < led[dest] + 2:
            continue
        if dest not in disk.replicas[p]:
            # The giver's own replica first: then no third broker's bytes change.
            sources = sorted(disk.replicas[p], key=lambda b: b != giver)
            source = next((b for b in sources if disk.may_move(p, factors[p], b, dest)), None)
            if source is None:
                continue
            disk.drop(p, source)
            disk.add(p, dest)
        leaders[p] = dest
        led[giver] -= 1
        led[dest] += 1
        return True
    return False


def _balance_bound(
    aims: DiskTargets, before: Sequence[float], after: Sequence[float], *, shrinks: bool
) -> int:
    """Bytes any plan at least as balanced as this one moves (module docstring). A broker the plan
    leaves outside its band (no replica small enough to close the gap) counts only up to where it
    ends, so the bound never claims more than the plan reaches."""
    arriving = sum(max(0.0, min(aims.band(i)[0], after[i]) - held) for i, held in enumerate(before))
    if shrinks:
        # A lower replication factor sheds bytes without moving them anywhere.
        return int(arriving)
    # Otherwise a broker sheds bytes only by sending replicas, and every byte that leaves arrives.
    leaving = sum(max(0.0, held - max(aims.band(i)[1], after[i])) for i, held in enumerate(before))
    return int(max(arriving, leaving))


def _copies(disk: Disk, p: int, rf: int) -> int:
    """New replicas ``p`` needs at least: its replication factor less what it may keep on target
    brokers, at most a rack's bound in each rack."""
    bounds = disk.bounds(rf)
    keepable = sum(min(c, hi) for c, (_, hi) in zip(disk.counts(p), bounds, strict=True))
    return max(0, rf - keepable)


def _fullness(disk: Disk, aims: DiskTargets, broker: int) -> float:
    i = disk.layout.position[broker]
    return (disk.bytes[i] - aims.target[i]) / (aims.weight[i] or 1.0)


def _shed(disk: Disk, aims: DiskTargets, p: int, rf: int) -> None:
    """Drop the replicas ``p`` must lose: above a rack's bound; above its replication factor
    (out-of-sync replicas first, then those on the fullest brokers, never below a rack's bound);
    and, while a rack lacks replicas its bound asks for, one from a rack that can spare it."""
    bounds = disk.bounds(rf)
    isr = disk.parts[p].isr
    in_sync = set(isr) if isr is not None else set(disk.replicas[p])
    rack_of = disk.layout.rack_of
    while True:
        counts = disk.counts(p)
        over = [b for b in disk.replicas[p] if counts[rack_of[b]] > bounds[rack_of[b]][1]]
        spare = [b for b in disk.replicas[p] if counts[rack_of[b]] > bounds[rack_of[b]][0]]
        lacking = sum(max(0, lo - c) for (lo, _), c in zip(bounds, counts, strict=True))
        if over:
            choice = over
        elif len(disk.replicas[p]) > rf or (lacking > rf - len(disk.replicas[p]) and spare):
            choice = spare
        else:
            return
        disk.drop(p, max(choice, key=lambda b: (b not in in_sync, _fullness(disk, aims, b), b)))


def _fill(disk: Disk, aims: DiskTargets, p: int, rf: int) -> None:
    """Give each open slot of ``p`` to the allowed broker furthest below its target."""
    while len(disk.replicas[p]) < rf:
        allowed = [b for b in disk.layout.brokers if disk.may_add(p, rf, b)]
        if not allowed:
            raise RuntimeError(f"{disk.parts[p].tp}: no broker may take a replica under the rack rule")
        disk.add(p, min(allowed, key=lambda b: (_fullness(disk, aims, b), b)))


def _balance(disk: Disk, aims: DiskTargets, factors: Sequence[int]) -> None:
    """Move replicas until every broker is in its band, or no move brings one closer (a replica too
    big for what is left to even out)."""
    floor = -(-len(disk.parts) // max(1, len(disk.layout.brokers)))
    while True:
        move = _next_move(disk, aims, factors, floor)
        if move is None:
            return
        p, source, dest = move
        disk.drop(p, source)
        disk.add(p, dest)


def _next_move(
    disk: Disk, aims: DiskTargets, factors: Sequence[int], floor: int
) -> tuple[int, int, int] | None:
    """The next (partition, source, destination), or ``None`` when every broker is in its band or
    nothing helps.

    A move goes from a broker above its band's low end to one below its band's high end, one of the
    two outside its band, the furthest out first (racks may keep a broker's replicas from the brokers
    of other racks: then a broker of its own rack gives or takes). A move never takes a broker out of
    its band, and no byte of it is wasted: it is at most what the source has above its band or the
    destination lacks below it, whichever is more.

    Leaders: a broker leads its share of the partitions only if it holds that many, and brokers that
    fill up together (new ones) only if they hold that many different partitions. So a broker keeps
    ``floor`` replicas at least, and one below that takes smaller replicas, and none of a partition
    that another broker below ``floor`` holds.
    """
    gap = [_gap(disk, aims, i) for i in range(len(disk.layout.brokers))]
    over = [i for i, g in enumerate(gap) if g > 0]
    under = [i for i, g in enumerate(gap) if g < 0]
    if not over and not under:
        return None
    sources = sorted((i for i in range(len(gap)) if _spare(disk, aims, i) > 0), key=lambda i: (-gap[i], i))
    dests = sorted((i for i in range(len(gap)) if _room(disk, aims, i) > 0), key=lambda i: (gap[i], i))
    short = {b for i, b in enumerate(disk.layout.brokers) if len(disk.held[i]) < floor}
    for a in sources:
        if len(disk.held[a]) <= floor:
            continue
        for b in dests:
            if gap[a] <= 0 and gap[b] >= 0:
                continue  # both in their bands: moving between them helps no broker
            cap = min(_spare(disk, aims, a), _room(disk, aims, b), max(gap[a], -gap[b]))
            lacking = floor - len(disk.held[b])
            if lacking > 1:
                cap /= lacking
            p = _fitting(disk, factors, a, b, cap, short if lacking > 0 else frozenset())
            if p is not None:
                return p, disk.layout.brokers[a], disk.layout.brokers[b]
    return None


def _gap(disk: Disk, aims: DiskTargets, i: int) -> float:
    """Bytes above the band (positive), below it (negative), or 0 inside it."""
    lo, hi = aims.band(i)
    return max(0.0, disk.bytes[i] - hi) - max(0.0, lo - disk.bytes[i])


def _spare(disk: Disk, aims: DiskTargets, i: int) -> float:
    """Bytes broker ``i`` may give before it falls below its band."""
    return disk.bytes[i] - aims.band(i)[0]


def _room(disk: Disk, aims: DiskTargets, i: int) -> float:
    """Bytes broker ``i`` may take before it rises above its band."""
    return aims.band(i)[1] - disk.bytes[i]


def _fitting(disk: Disk, factors: Sequence[int], a: int, b: int, cap: float, avoid: Set[int]) -> int | None:
    """The partition with the largest replica on broker position ``a`` not above ``cap`` that may
    move to position ``b`` under the rack rule and has no replica on a broker in ``avoid``."""
    held = disk.held[a]
    start = bisect_right(held, (cap, len(disk.parts)))
    source, dest = disk.layout.brokers[a], disk.layout.brokers[b]
    for n, p in reversed(held[max(0, start - _SEARCH) : start]):
        if n <= 0 or (avoid and any(r in avoid and r != dest for r in disk.replicas[p])):
            continue
        if disk.may_move(p, factors[p], source, dest):
            return p
    return None


def _check_capacity(disk: Disk, goal: Goal) -> None:
    if not goal.capacity:
        return
    for i, broker in enumerate(disk.layout.brokers):
        limit = goal.capacity[broker] * goal.max_disk_fraction
        if disk.bytes[i] > limit:
            used = disk.bytes[i] / goal.capacity[broker]
            raise PreconditionError(
                f"broker {broker} would hold {int(disk.bytes[i]):,} bytes, {used:.1%} of its capacity, "
                f"above the largest fraction allowed ({goal.max_disk_fraction:.0%})",
                hint="add brokers or disk, or raise --max-disk-fraction",
            )


def _figures(
    layout: RackLayout, aims: DiskTargets, before: Sequence[float], after: Sequence[float], bound: int
) -> dict[str, object]:
    """The disk section of the report: bytes per broker before and after, their spread in bytes and
    as a fraction of the mean share (of capacity, with capacities), and the byte bound."""

    def figures(values: Sequence[float]) -> dict[str, object]:
        shares = [v / w for v, w in zip(values, aims.weight, strict=True)]
        mean = sum(shares) / len(shares) if shares else 0.0
        off = [abs(v - t) / t for v, t in zip(values, aims.target, strict=True) if t]
        return {
            "bytes": {str(b): int(v) for b, v in zip(layout.brokers, values, strict=True)},
            "spread_bytes": int(max(values, default=0.0) - min(values, default=0.0)),
            "spread_of_mean": round((max(shares) - min(shares)) / mean, 4) if mean else 0.0,
            "off_target_max": round(max(off, default=0.0), 4),
            "outside_band": sum(
                1 for i, v in enumerate(values) if not aims.band(i)[0] <= v <= aims.band(i)[1]
            ),
        }

    return {
        "tolerance": TOLERANCE,
        "target_bytes": {str(b): int(t) for b, t in zip(layout.brokers, aims.target, strict=True)},
        "before": figures(before),
        "after": figures(after),
        "bytes_lower_bound": bound,
    }
