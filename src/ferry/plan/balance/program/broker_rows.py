"""The balance program's rows per broker (:mod:`ferry.plan.balance.program.integer_program`): its load band,
fed by extras and pooled extras, and the leader counts single-replica partitions must fit."""

from __future__ import annotations

import numpy as np

from ferry.plan.balance.program.columns import TopicColumns
from ferry.plan.balance.program.full_pools import saturation_rows
from ferry.plan.balance.program.pools import pool_rows
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.solvers.transport import BROKER
from ferry.plan.consecutive import runs
from ferry.plan.prepare.demand import base_loads


def band_rows(program: ProgramState, band: list[tuple[int, int]], slack: int) -> None:
    """Each broker's total load within ``band`` (widened by ``slack``): its extras, what its rack's
    pool passes on to it, and the base loads of the program's topics and of those held outside."""
    loads = base_load(program).tolist()
    by_broker = _extras_by_broker(program.extras)
    pool_rows(program, program.groups, program.pools, by_broker)
    saturation_rows(program, program.refined.saturate)
    for i in sorted(by_broker):
        lo_b, hi_b = band[i]
        program.ones(by_broker[i], lo_b - loads[i] - slack, hi_b - loads[i] + slack, BROKER)


def base_load(program: ProgramState) -> np.ndarray:
    """Per broker position, the base loads of the program's topics and of those held outside."""
    n = len(program.layout.brokers)
    out: np.ndarray = np.asarray(program.outside.load, dtype=np.int64) + base_loads(n, program.demands)
    return out


def _extras_by_broker(extras: TopicColumns) -> dict[int, list[int]]:
    """Per broker position, the columns of the extras it may take."""
    _, at, cols = extras.arrays()
    order = np.argsort(at, kind="stable")
    at, cols = at[order], cols[order]
    return {int(at[a]): cols[a:b].tolist() for a, b in runs(at)}


def leader_rows(program: ProgramState, low: int, extra: int) -> None:
    """A single-replica partition is led by its replica, so single-replica partitions must fit
    the leader counts: at most ``low`` per broker, ``low + 1`` on at most ``extra`` brokers."""
    demands = program.demands
    singles = [t for t, d in enumerate(demands) if d.single_replica]
    extras = {t: dict(program.extras.of(t)) for t in singles}
    lifted = []
    for i in range(len(program.layout.brokers)):
        fixed = program.outside.single[i] + sum(demands[t].quota.base[i] for t in singles)
        terms = [(extras[t][i], 1.0) for t in singles if i in extras[t]]
        if fixed + len(terms) <= low:
            continue
        u = program.column(1 if extra else 0, 0)
        lifted.append((u, 1.0))
        program.row([*terms, (u, -1.0)], -np.inf, low - fixed)
    if lifted:
        program.row(lifted, -np.inf, extra)
