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
