"""The log dir of every replica an inter-broker plan adds, on brokers with more than one open dir.

Largest move first, each new replica goes into its broker's emptiest open dir with room for it
(:meth:`~ferry.plan.log_dirs.loads.BrokerLoads.emptiest`, counting what the plan already sent
there), so the data is written once, into the dir that has the most room for it, rather than
wherever the broker would put it (Kafka picks the dir holding the fewest partitions, whatever
their size). A move that names a dir for a replica already keeps it; a broker whose dirs have no
room for the replica leaves the choice to the broker (``any``) and ``ferry execute``'s checks
decide.
"""

from __future__ import annotations

from dataclasses import replace

from ferry.model import ClusterSnapshot, Move, Plan
from ferry.model.plan import ANY_DIR
from ferry.plan.log_dirs.loads import BrokerLoads, held_in_dirs


def choose_dirs(plan: Plan, snapshot: ClusterSnapshot) -> Plan:
    """``plan`` with a dir named for each replica it adds on a broker of several open dirs."""
    loads = {
        b.id: BrokerLoads(b)
        for b in snapshot.brokers
        if b.alive and len([d for d in b.log_dirs if d.open]) > 1
    }
    if not loads or not any(b in loads for m in plan.moves for b in m.adding):
        return plan
    held_in_dirs(loads, snapshot)  # a replica in a dir its broker does not list is not refused here
    named: dict[int, dict[int, str]] = {}
    for i, move in sorted(enumerate(plan.moves), key=lambda x: (-x[1].size_bytes, x[1].tp)):
        chosen = dict(move.named_dirs)
        for broker in move.adding:
            if broker in loads and broker not in chosen:
                emptiest = loads[broker].emptiest(move.size_bytes)
                if emptiest is not None:
                    loads[broker].add(move.tp, emptiest, move.size_bytes)
                    chosen[broker] = emptiest
        named[i] = chosen
    return Plan(tuple(_named(m, named[i]) for i, m in enumerate(plan.moves)), plan.report)


def _named(move: Move, chosen: dict[int, str]) -> Move:
    if not chosen:
        return move
    return replace(move, log_dirs=tuple(chosen.get(b, ANY_DIR) for b in move.target))
