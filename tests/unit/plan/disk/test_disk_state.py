"""What the byte balance works on (ferry.plan.disk.state): target bytes water-filled over racks, bytes
of partitions out of scope, and the Disk scratch state with its rack checks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.model import BalanceMode, Broker, ClusterSnapshot, Goal, PartitionState, RackMode, TopicPartition
from ferry.plan.disk.state import TOLERANCE, Disk, disk_targets, fixed_bytes
from ferry.plan.racks import RackLayout, may_take

Case = tuple[RackLayout, list[PartitionState], list[int]]
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)
MODES = st.sampled_from([RackMode.STRICT, RackMode.EVEN])


def part(
    topic: str, p: int, replicas: tuple[int, ...], size: int, measured: tuple[tuple[int, int], ...] = ()
) -> PartitionState:
    return PartitionState(TopicPartition(topic, p), replicas, size_bytes=size, replica_bytes=measured)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """2-7 target brokers in 1-3 racks, 1-8 partitions of 1-3 replicas, some on broker 9 (no target),
    some measured at another size than the partition's; bytes out of scope per broker."""
    n = draw(st.integers(2, 7))
    racks = draw(st.lists(st.sampled_from("abc"), min_size=n, max_size=n))
    parts = []
    for p in range(draw(st.integers(1, 8))):
        reps = tuple(draw(st.lists(st.sampled_from([*range(n), 9]), min_size=1, max_size=3, unique=True)))
        measured = tuple((b, draw(st.integers(0, 10**9))) for b in reps if draw(st.booleans()))
        parts.append(part("t", p, reps, draw(st.integers(0, 10**9)), measured))
    layout = RackLayout.of({**dict(enumerate(racks)), 9: "a"}, range(n))
    return layout, parts, draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n))


@SETTINGS
@given(cases(), MODES, st.booleans())
def test_targets_share_every_byte_each_rack_within_its_floor_and_ceiling_by_weight(
    case: Case, mode: RackMode, weighted: bool
) -> None:
    layout, parts, fixed = case
    capacity = {b: 1 + 3 * b for b in layout.brokers} if weighted else None
    factors = [min(len(p.replicas), len(layout.brokers)) for p in parts]
    aims = disk_targets(
        layout, parts, factors, fixed, Goal(rack_mode=mode, balance=BalanceMode.BYTES, capacity=capacity)
    )
    total = sum(p.size * rf for p, rf in zip(parts, factors, strict=True)) + sum(fixed)
    assert sum(aims.target) == pytest.approx(total, rel=1e-9, abs=1e-6)
    assert aims.weight == tuple(float(capacity[b]) if capacity else 1.0 for b in layout.brokers)
    for k, members in enumerate(layout.members):
        at = [layout.position[b] for b in members]
        bounds = [layout.bounds_under(rf, mode)[k] for rf in factors]
        floor = sum(fixed[i] for i in at) + sum(lo * p.size for p, (lo, _) in zip(parts, bounds, strict=True))
        ceiling = sum(fixed[i] for i in at) + sum(
            hi * p.size for p, (_, hi) in zip(parts, bounds, strict=True)
        )
        assert floor - 1e-6 <= sum(aims.target[i] for i in at) <= ceiling + 1e-6
        per_weight = [aims.target[i] / aims.weight[i] for i in at]
        assert max(per_weight) == pytest.approx(min(per_weight), rel=1e-9, abs=1e-9)
    assert all(
        aims.band(i) == pytest.approx((t * (1 - TOLERANCE), t * (1 + TOLERANCE)))
        for i, t in enumerate(aims.target)
    )


def test_strict_racks_hold_the_lone_broker_to_a_replica_of_every_partition_even_mode_does_not() -> None:
    layout = RackLayout.of({0: "a", 1: "a", 2: "b"}, [0, 1, 2])
    parts, goal = [part("t", 0, (0, 1), 600), part("t", 1, (0, 1), 300)], Goal(balance=BalanceMode.BYTES)
    assert disk_targets(layout, parts, [2, 2], [0, 0, 0], goal).target == pytest.approx((450, 450, 900))
    even = Goal(balance=BalanceMode.BYTES, rack_mode=RackMode.EVEN)
    assert disk_targets(layout, parts, [2, 2], [0, 0, 0], even).target == pytest.approx((600, 600, 600))


def test_fixed_bytes_count_out_of_scope_replicas_on_targets_as_measured_there() -> None:
    parts = [
        part("in", 0, (0, 1), 1000),
        part("out", 0, (0, 1, 3), 70, ((1, 65),)),
        part("out", 1, (2, 1), 5),
    ]
    cluster = ClusterSnapshot.of([Broker(b) for b in range(4)], parts)
    layout = RackLayout.of(cluster.racks, [0, 1, 2])  # broker 3 is no target
    assert fixed_bytes(cluster, Goal(topics=frozenset({"in"})), layout) == [70, 65 + 5, 5]
    assert fixed_bytes(cluster, Goal(), layout) == [0, 0, 0]


def _check(disk: Disk, fixed: list[int]) -> None:
    """Bytes are the fixed ones plus what each broker holds, held sorted and as the replicas say."""
    for i, (b, held) in enumerate(zip(disk.layout.brokers, disk.held, strict=True)):
        assert held == sorted(held) and disk.bytes[i] == fixed[i] + sum(n for n, _ in held)
        assert sorted(p for _, p in held) == [p for p, reps in enumerate(disk.replicas) if b in reps]
        assert all(n == disk.parts[p].bytes_on(b) for n, p in held)


@SETTINGS
@given(cases(), MODES, st.data())
def test_disk_add_then_drop_restores_bytes_and_holdings(
    case: Case, mode: RackMode, data: st.DataObject
) -> None:
    layout, parts, fixed = case
    disk = Disk(layout, parts, fixed, Goal(rack_mode=mode))
    assert disk.replicas == [[b for b in p.replicas if b != 9] for p in parts]  # broker 9 is no target
    _check(disk, fixed)
    for _ in range(data.draw(st.integers(1, 6))):
        p = data.draw(st.integers(0, len(parts) - 1))
        free = [b for b in layout.brokers if b not in disk.replicas[p]]
        if not free:
            continue
        b = data.draw(st.sampled_from(free))
        before = (list(disk.bytes), [list(h) for h in disk.held], sorted(disk.replicas[p]))
        disk.add(p, b)
        _check(disk, fixed)
        assert disk.bytes[layout.position[b]] == before[0][layout.position[b]] + parts[p].bytes_on(b)
        disk.drop(p, b)
        assert (disk.bytes, disk.held, sorted(disk.replicas[p])) == before
        if data.draw(st.booleans()):
            disk.add(p, b)  # and keep it: the next round starts from here
    _check(disk, fixed)


@SETTINGS
@given(cases(), MODES, st.data())
def test_may_move_and_may_add_agree_with_ferry_plan_racks_may_take(
    case: Case, mode: RackMode, data: st.DataObject
) -> None:
    layout, parts, fixed = case
    disk = Disk(layout, parts, fixed, Goal(rack_mode=mode))
    p = data.draw(st.integers(0, len(parts) - 1))
    rf = data.draw(st.integers(max(1, len(disk.replicas[p])), len(layout.brokers)))
    dest = data.draw(st.sampled_from(layout.brokers))
    assert disk.may_add(p, rf, dest) == may_take(layout, mode, disk.replicas[p], rf, dest)
    for source in disk.replicas[p]:
        assert disk.may_move(p, rf, source, dest) == may_take(
            layout, mode, disk.replicas[p], rf, dest, without=source
        )
    assert disk.bounds(rf) == layout.bounds_under(rf, mode) and disk.counts(p) == layout.counts(
        disk.replicas[p]
    )
