"""The passes that give a partition a replica ask the one rack rule (ferry.plan.racks.may_take):
replace, the byte balance's scratch state, and placement, each on a case where a rule of its own
once answered differently from the rule."""

from __future__ import annotations

import itertools

from support.builders import broker, partition, snapshot

from ferry.model import Goal, RackMode
from ferry.plan.disk.state import Disk
from ferry.plan.place.placement import place
from ferry.plan.place.replace import plan_replace
from ferry.plan.planner import plan
from ferry.plan.racks import RackLayout, may_take
from ferry.plan.topic_work import TopicWork

# Three racks of two brokers; RF 4 puts one or two replicas in every rack: bounds (1, 2) each.
RACKS = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
BROKERS = [broker(b, r) for b, r in RACKS.items()]


def test_replace_never_leaves_a_rack_below_the_replicas_the_rule_asks_of_it() -> None:
    # Broker 3 is rack b's only replica of the partition. Its replacement 5 (rack c) still has room
    # under rack c's upper bound, but rack b would hold none: the replica goes to 4, rack b's other
    # broker, instead.
    cluster = snapshot(BROKERS, [partition("t", 0, [1, 2, 3, 6])])
    done = plan_replace(cluster, Goal(replace=((3, 5),)))
    ((_, replicas),) = done.planned
    assert replicas == (1, 2, 4, 6)
    layout = RackLayout.of(cluster.racks, done.targets)
    assert layout.outside(replicas) == 0


def test_replace_takes_the_new_broker_where_the_rule_allows_it() -> None:
    cluster = snapshot(BROKERS, [partition("t", 0, [1, 3, 4, 6])])
    done = plan_replace(cluster, Goal(replace=((4, 5),)))
    ((_, replicas),) = done.planned
    assert replicas == (1, 3, 5, 6)  # rack c may hold two; rack b keeps broker 3


def test_replace_under_even_racks_only_refuses_a_broker_holding_the_partition() -> None:
    cluster = snapshot(BROKERS, [partition("t", 0, [1, 2, 3, 6])])
    done = plan_replace(cluster, Goal(replace=((3, 5),), rack_mode=RackMode.EVEN))
    ((_, replicas),) = done.planned
    assert replicas == (1, 2, 5, 6)


def test_the_byte_balance_asks_the_rule_for_every_move_and_open_slot() -> None:
    parts = [partition("t", 0, [1, 2, 3, 6], size=10), partition("t", 1, [1, 3, 5], size=10)]
    cluster = snapshot(BROKERS, parts)
    for mode in RackMode:
        goal = Goal(rack_mode=mode)
        layout = RackLayout.of(cluster.racks, list(RACKS))
        disk = Disk(layout, cluster.partitions, [0] * len(RACKS), goal)
        for p, state in enumerate(cluster.partitions):
            rf = len(state.replicas) + (1 if p == 1 else 0)
            for dest in RACKS:
                assert disk.may_add(p, rf, dest) == may_take(layout, mode, state.replicas, rf, dest)
                for source in state.replicas:
                    rule = may_take(layout, mode, state.replicas, rf, dest, without=source)
                    assert disk.may_move(p, rf, source, dest) == rule


def test_placement_fills_open_slots_only_where_the_rule_allows() -> None:
    # RF 4 partitions holding one replica each; quotas room enough anywhere: every placed replica
    # set meets the rule's bounds under STRICT.
    parts = [partition("t", p, [1 + p % 6]) for p in range(6)]
    cluster = snapshot(BROKERS, parts)
    layout = RackLayout.of(cluster.racks, list(RACKS))
    work = TopicWork.start("t", cluster.partitions, [4] * 6, layout.position)
    quota = dict.fromkeys(RACKS, 4)
    assert place(work, layout, quota, RackMode.STRICT) == 0
    for slot in work.slots:
        assert len(set(slot.replicas)) == 4
        assert layout.outside(slot.replicas) == 0
        # No broker outside the partition could have taken one of its replicas' places and kept
        # the rule, unless the rule says so.
        for leaving, taking in itertools.product(slot.replicas, RACKS):
            if taking in slot.replicas:
                continue
            swapped = [taking if b == leaving else b for b in slot.replicas]
            assert may_take(layout, RackMode.STRICT, slot.replicas, 4, taking, without=leaving) == (
                layout.outside(swapped) == 0
            )


def test_targets_without_racks_plan_as_one_rack_under_the_same_rule() -> None:
    """No target broker has a rack: the passes see one rack of them all, the report a rack per
    broker. Both layouts give every pass the same answer: a broker may take a replica of a
    partition that is short of one (strict racks) and not on it already."""
    racks: dict[int, str | None] = dict.fromkeys(range(1, 6))
    one = RackLayout.of(racks, racks)
    apart = RackLayout.of(racks, racks, broker_racks=True)
    assert one.members == ((1, 2, 3, 4, 5),)
    assert apart.members == ((1,), (2,), (3,), (4,), (5,))
    for rf, mode in itertools.product(range(1, 6), RackMode):
        for n in range(rf + 1):
            for held, b in itertools.product(itertools.combinations(racks, n), racks):
                # Under even racks a full partition is not asked about: never two on one broker only.
                fits = b not in held and (n < rf or mode is RackMode.EVEN)
                assert may_take(one, mode, held, rf, b) is may_take(apart, mode, held, rf, b) is fits
                for leaving in held:
                    swap = b == leaving or b not in held
                    assert may_take(one, mode, held, rf, b, leaving) is may_take(
                        apart, mode, held, rf, b, leaving
                    )
                    assert may_take(one, mode, held, rf, b, leaving) is swap
                assert one.outside(held) == apart.outside(held) == 0
    # A broker with a rack keeps the others a rack each, as before.
    mixed = RackLayout.of({**racks, 6: "a"}, [*racks, 6])
    assert len(mixed.members) == 6


def test_a_cluster_without_racks_reports_no_spread_inside_a_rack() -> None:
    # Sixteen replicas over three brokers: five, five and six.
    cluster = snapshot([broker(b, None) for b in range(1, 4)], [partition("t", p, [1, 2]) for p in range(8)])
    after = plan(cluster, Goal()).report.balance["after"]
    assert after["replica_spread"] == after["topic_replica_spread_max"] == 1
    assert after["rack_replica_spread_max"] == after["topic_rack_spread_max"] == 0
