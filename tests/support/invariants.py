"""Reusable plan invariants (Yelp kafka-utils' assert_valid), independent of the planner's code."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ferry.model import ClusterSnapshot, Goal, Plan, RackMode, TopicPartition


def final_placement(snapshot: ClusterSnapshot, plan: Plan) -> dict[TopicPartition, tuple[int, ...]]:
    """Every partition's replicas once ``plan`` is applied."""
    placement = {p.tp: p.replicas for p in snapshot.partitions}
    for move in plan:
        assert placement[move.tp] == move.original, f"{move.tp}: original is not the current replicas"
        placement[move.tp] = move.target
    return placement


def targets_of(snapshot: ClusterSnapshot, goal: Goal) -> list[int]:
    if goal.replace:
        olds = {o for o, _ in goal.replace}
        return sorted((set(snapshot.broker_ids) - olds) | {n for _, n in goal.replace})
    return sorted(goal.brokers if goal.brokers is not None else snapshot.broker_ids)


def rack_caps(sizes: list[int], rf: int) -> tuple[int, list[tuple[int, int]]]:
    """(c, per-rack (lower, upper)): at most c per rack, as evenly as the rack sizes allow."""
    c = 1
    while sum(min(n, c) for n in sizes) < rf:
        c += 1
    return c, [(min(n, c - 1), min(n, c)) for n in sizes]


def assert_valid(snapshot: ClusterSnapshot, goal: Goal, plan: Plan) -> None:
    """RF as requested, only target brokers, no duplicates, the rack rule, untouched out of scope."""
    placement = final_placement(snapshot, plan)
    targets = set(targets_of(snapshot, goal))
    racks = snapshot.racks
    rack_names = sorted({racks[b] or f"b{b}" for b in targets})
    sizes = [sum(1 for b in targets if (racks[b] or f"b{b}") == r) for r in rack_names]
    for state in snapshot.partitions:
        final = placement[state.tp]
        if not goal.in_scope(state.tp.topic):
            assert final == state.replicas, f"{state.tp} is out of scope but moved"
            continue
        rf = goal.replication_factors.get(state.tp.topic, state.replication_factor)
        assert len(final) == rf, f"{state.tp}: RF {len(final)} != {rf}"
        assert len(set(final)) == rf, f"{state.tp}: duplicate replica in {final}"
        assert set(final) <= targets, f"{state.tp}: {final} not all on target brokers"
        if goal.rack_mode is RackMode.STRICT and not goal.replace:
            counts = Counter(racks[b] or f"b{b}" for b in final)
            _, caps = rack_caps(sizes, rf)
            for name, (lo, hi) in zip(rack_names, caps, strict=True):
                assert lo <= counts[name] <= hi, f"{state.tp}: {counts[name]} replicas in rack {name}"
        if state.isr and rf < state.replication_factor:
            kept = set(final) & set(state.replicas)
            in_sync = set(state.isr) & targets
            assert not (kept - in_sync) or kept & in_sync, f"{state.tp}: kept only out-of-sync replicas"


def spreads(snapshot: ClusterSnapshot, goal: Goal, plan: Plan) -> dict[str, int]:
    """Global, worst per-topic and leader spread over the target brokers, for in-scope partitions."""
    placement = final_placement(snapshot, plan)
    targets = targets_of(snapshot, goal)
    total: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    topic: dict[str, Counter[int]] = {}
    for tp, reps in placement.items():
        if goal.in_scope(tp.topic):
            total.update(reps)
            leaders[reps[0]] += 1
            topic.setdefault(tp.topic, Counter()).update(reps)

    def spread(c: Counter[int]) -> int:
        return max(c[b] for b in targets) - min(c[b] for b in targets)

    return {
        "global": spread(total),
        "topic": max((spread(c) for c in topic.values()), default=0),
        "leader": spread(leaders),
    }


def racks_bind(snapshot: ClusterSnapshot, goal: Goal) -> bool:
    """Whether the rack rule may force a spread above one (unequal racks that are too big or small).

    Sufficient test: for every topic, each rack can hold ``n_k * ceil(R / B)`` replicas and must hold
    no more than ``n_k * floor(R / B)``; then perfectly even loads are rack-legal.
    """
    if goal.rack_mode is RackMode.EVEN:
        return False
    targets = targets_of(snapshot, goal)
    racks = snapshot.racks
    names = sorted({racks[b] or f"b{b}" for b in targets})
    sizes = [sum(1 for b in targets if (racks[b] or f"b{b}") == r) for r in names]
    per_topic: dict[str, list[int]] = {}
    for p in snapshot.partitions:
        if goal.in_scope(p.tp.topic):
            rf = goal.replication_factors.get(p.tp.topic, p.replication_factor)
            per_topic.setdefault(p.tp.topic, []).append(rf)
    for rfs in per_topic.values():
        total, b = sum(rfs), len(targets)
        lo_level, hi_level = total // b, -(-total // b)
        for k, n in enumerate(sizes):
            lows = sum(rack_caps(sizes, rf)[1][k][0] for rf in rfs)
            highs = sum(rack_caps(sizes, rf)[1][k][1] for rf in rfs)
            if n * hi_level > highs or n * lo_level < lows:
                return True
    return False


def applied(snapshot: ClusterSnapshot, plan: Plan) -> ClusterSnapshot:
    """The cluster once ``plan`` ran: every moved partition in sync on its new replicas."""
    placement = final_placement(snapshot, plan)
    moved = {m.tp for m in plan.moves}
    parts = [
        replace(p, replicas=placement[p.tp], leader=placement[p.tp][0], isr=placement[p.tp])
        if p.tp in moved
        else p
        for p in snapshot.partitions
    ]
    return ClusterSnapshot.of(snapshot.brokers, parts)


def bytes_per_broker(
    snapshot: ClusterSnapshot, placement: Mapping[TopicPartition, Sequence[int]] | None = None
) -> dict[int, int]:
    """Bytes on each broker (of ``placement`` where given): a replica that stays weighs what it
    measured there, a new one its partition's size."""
    out = dict.fromkeys(snapshot.broker_ids, 0)
    for p in snapshot.partitions:
        for b in (placement or {}).get(p.tp, p.replicas):
            out[b] += p.bytes_on(b) if b in p.replicas else p.size
    return out
