"""The whole plan as one integer program: the exact answer on small inputs the passes fall short on.

The passes decide one thing at a time: the balance program each broker's quota, placement the
replicas, the leader pass and :mod:`ferry.plan.leaders.swaps` the leaders. On a few small clusters that
misses a target: an even leader spread may need two replica changes at once, or even one move more
than the balance program's bound, which ignores leaders; and the program's rack-room rows are a
relaxation that can promise a placement the rack rule cannot realise, so placement pays moves
above the program's bound. When a plan misses a target and the input is small (at most
:data:`LIMIT` partition-broker pairs), :func:`solve_exactly` poses every choice at once, solved by
HiGHS (:mod:`ferry.plan.balance.solvers.highs`):

* ``r[p, b]`` in {0, 1}: partition ``p`` has a replica on target broker ``b``; ``l[p, b] <= r[p, b]``:
  ``b`` leads ``p``. Per partition: its replication factor in replicas, one leader, and (strict rack
  mode) every rack within its (lower, upper) bounds; when the replication factor goes down with a
  known ISR, an out-of-sync replica stays only beside an in-sync one.
* ``x[t, b]`` in {0, 1}: ``b`` holds one replica of topic ``t`` above its base, as in the balance
  program (:mod:`ferry.plan.balance.program.integer_program`): each topic's replicas on ``b`` are ``base[t, b]
  + x[t, b]``, each topic hands out exactly its extras within each rack's (min, max), and each broker's total
  load stays in the band of :func:`ferry.plan.balance.bands.broker_band` (widened as the balance program's
  ladder widens it, but only as far as the passes' plan already needed: see :func:`_slacks`).
* leaders: every broker leads ``floor(P / B)`` or ``ceil(P / B)`` partitions.
* maximise the replicas kept; tie-breaks worth less than one kept replica together favour keeping
  the bigger replicas and the current leaders and (even rack mode) putting the fewest replicas
  above a rack's bound.

These are the balance program's rules without its relaxations, plus the leader rule, so the optimum
is the fewest moves of any plan that meets every rule: the plan is that optimum and so is its lower
bound (:mod:`ferry.plan.planner`). No solution (the band cannot hold with those quotas) leaves the
plan of the passes as it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from ferry.model.cluster import PartitionState
from ferry.model.goal import Goal, RackMode
from ferry.plan.balance.bands import bands, broker_band
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.solvers import highs as solver
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout

LIMIT = 8_000
"""Largest ``partitions x target brokers`` solved exactly: the property tests' clusters (up to 144
partitions on 50 brokers) stay below it. The slowest solve measured (95 partitions on 44 brokers)
took 2.2 CPU s; larger inputs keep the passes' plan, which met every target on every larger input
measured (the benchmarks' 3k and 100k partitions)."""


NODE_LIMIT = 1_000
"""Branch-and-bound nodes the solver may explore before giving up (the plan of the passes stays).
A limit on nodes, not on time, keeps the outcome the same on every machine; every solve measured
(the property tests' clusters, the generated scenarios) closed at the root node."""


@dataclass(frozen=True, slots=True)
class Exact:
    """An optimal plan: per partition its replicas (kept ones first) and leader, and its moves."""

    replicas: list[tuple[int, ...]]
    leaders: list[int]
    moves: int


@dataclass(slots=True)
class _Program:
    """The program under construction: per column its gain and upper bound, per row its terms
    (column, coefficient) and its (low, high) range."""

    gain: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    terms: list[list[tuple[int, float]]] = field(default_factory=list)
    ranges: list[tuple[float, float]] = field(default_factory=list)

    def column(self, gain: float = 0.0, upper: float = 1.0) -> int:
        self.gain.append(gain)
        self.upper.append(upper)
        return len(self.gain) - 1

    def copy(self) -> _Program:
        return _Program(*(list(getattr(self, f.name)) for f in fields(self)))

    def row(self, terms: Iterable[tuple[int, float]], lo: float, hi: float) -> None:
        self.terms.append(list(terms))
        self.ranges.append((lo, hi))


@dataclass(frozen=True, slots=True)
class _Weights:
    """Tie-breaks, each family below 0.2 in total, so together they never outweigh a kept replica."""

    per_byte: float
    leader: float
    over_rack: float

    @classmethod
    def of(cls, states: Sequence[PartitionState]) -> _Weights:
        replicas = sum(s.replication_factor for s in states) + 1
        biggest = max((s.size for s in states), default=0) or 1
        return cls(0.2 / (biggest * replicas), 0.2 / (len(states) + 1), 0.2 / replicas)


@dataclass(frozen=True, slots=True)
class _Partition:
    """Columns of one partition, per broker in layout order."""

    replica: list[int]
    leader: list[int]


def solve_exactly(
    states: Sequence[PartitionState],
    replicas: Sequence[Sequence[int]],
    goal: Goal,
    layout: RackLayout,
    demands: Sequence[TopicDemand],
) -> Exact | None:
    """The plan with the fewest moves that meets every balance rule and the leader rule.

    Args:
        states: every in-scope partition, topic by topic in the planner's order.
        replicas: the passes' plan of each partition; the band widens no further than it needed.
        goal: the goal (replication factors, rack mode).
        layout: the target brokers.
        demands: per topic, in the order of ``states``, what it asked of the balance pass.

    Returns:
        ``None`` when no plan meets the rules (or the solver gives up).
    """
    demands = retarget(layout, demands)  # the quotas the balance program had
    program = _Program()
    weights = _Weights.of(states)
    rfs = [goal.replication_factors.get(s.tp.topic, s.replication_factor) for s in states]
    columns = [
        _partition(program, state, rf, layout, goal.rack_mode, weights)
        for state, rf in zip(states, rfs, strict=True)
    ]
    _quota_rows(program, columns, layout, demands)
    leads = divmod(len(states), len(layout.brokers))
    for i in range(len(layout.brokers)):
        program.row(((c.leader[i], 1.0) for c in columns), leads[0], leads[0] + (leads[1] > 0))
    for band, slack in _rungs(replicas, layout, demands):
        posed = program.copy()
        if slack is not None:
            for i, (lo, hi) in enumerate(band):
                posed.row(((c.replica[i], 1.0) for c in columns), lo - slack, hi + slack)
        solution = _solve(posed)
        if solution is not None:
            return _read(solution, states, layout, columns, sum(rfs))
    return None


def _rungs(
    replicas: Sequence[Sequence[int]], layout: RackLayout, demands: Sequence[TopicDemand]
) -> list[tuple[Sequence[tuple[int, int]], int | None]]:
    """(band, slack), strictest first, as on the balance program's ladder (its bands at slack 0, then
    the water-filled band at slack 1, then none), but never looser than the passes' plan: a band it
    meets is the only rung, and otherwise the slack stops at how far it left the water-filled band.
    The exact plan trades no cluster-wide balance for its leaders."""
    band = broker_band(layout, demands)
    tried = bands(layout, demands, band)
    met = [b for b in tried if _excess(replicas, layout, b) == 0]
    if met:
        return [(met[0], 0)]
    ladder: list[int | None] = [1, None]
    slacks = ladder[: min(_excess(replicas, layout, band), 2)]
    return [*((b, 0) for b in tried), *((band, s) for s in slacks)]


def _excess(replicas: Sequence[Sequence[int]], layout: RackLayout, band: Sequence[tuple[int, int]]) -> int:
    """How far the broker loads of ``replicas`` leave ``band`` at most."""
    load = Counter(b for reps in replicas for b in reps)
    return max(
        (max(lo - load[b], load[b] - hi, 0) for b, (lo, hi) in zip(layout.brokers, band, strict=True)),
        default=0,
    )


def _partition(
    program: _Program, state: PartitionState, rf: int, layout: RackLayout, mode: RackMode, weights: _Weights
) -> _Partition:
    """Columns and rows of one partition: its replicas, its leader, its racks and its ISR."""
    held = set(state.replicas)
    replica = [
        program.column(1.0 + weights.per_byte * state.size if b in held else 0.0) for b in layout.brokers
    ]
    leader = [program.column(weights.leader if b == state.current_leader else 0.0) for b in layout.brokers]
    program.row(((c, 1.0) for c in replica), rf, rf)
    program.row(((c, 1.0) for c in leader), 1, 1)
    for r, lead in zip(replica, leader, strict=True):
        program.row(((lead, 1.0), (r, -1.0)), -np.inf, 0)
    for k, (lo, hi) in enumerate(layout.bounds(rf)):
        terms = [(replica[layout.position[b]], 1.0) for b in layout.members[k]]
        if mode is RackMode.STRICT:
            program.row(terms, lo, hi)
        else:
            over = program.column(-weights.over_rack, np.inf)
            program.row([*terms, (over, -1.0)], -np.inf, hi)
    if state.isr and rf < state.replication_factor:
        in_sync = [
            (replica[layout.position[b]], -1.0) for b in sorted(held & set(state.isr)) if b in layout.position
        ]
        for b in sorted(held - set(state.isr)):
            if b in layout.position:
                program.row([(replica[layout.position[b]], 1.0), *in_sync], -np.inf, 0)
    return _Partition(replica, leader)


def _quota_rows(
    program: _Program, columns: Sequence[_Partition], layout: RackLayout, demands: Sequence[TopicDemand]
) -> None:
    """Each topic's quota: its base on every broker plus its extras, rack by rack."""
    start = 0
    for d in demands:
        topic = columns[start : start + d.partitions]
        start += d.partitions
        extras: dict[int, int] = {}
        takers = set(d.quota.extra_positions(layout))
        for i in range(len(layout.brokers)):
            terms = [(c.replica[i], 1.0) for c in topic]
            if i in takers:
                extras[i] = program.column()
                terms.append((extras[i], -1.0))
            program.row(terms, d.quota.base[i], d.quota.base[i])
        if d.quota.extras > 0:
            program.row(((x, 1.0) for x in extras.values()), d.quota.extras, d.quota.extras)
            for k, members in enumerate(layout.members):
                lo, hi = d.quota.rack_extras[k]
                mine = [extras[layout.position[b]] for b in members if layout.position[b] in extras]
                program.row(((x, 1.0) for x in mine), lo, hi)


def _solve(program: _Program) -> np.ndarray | None:
    # As in the balance program: scipy loads in about a second, so only a solve that runs pays for it.
    from scipy.sparse import coo_array

    n = len(program.gain)
    at = [(r, col, val) for r, terms in enumerate(program.terms) for col, val in terms]
    rows, cols, vals = (np.array(x) for x in zip(*at, strict=True)) if at else (np.zeros(0),) * 3
    matrix = coo_array((vals, (rows.astype(np.int64), cols.astype(np.int64))), shape=(len(program.terms), n))
    lows, highs = np.array(program.ranges).reshape(-1, 2).T
    problem = solver.Problem(matrix, lows, highs, np.array(program.upper), -np.array(program.gain))
    result = solver.solve(problem, integral=True, options={"mip_max_nodes": NODE_LIMIT})
    if result.x is None:
        return None
    solution: np.ndarray = np.rint(result.x)
    return solution


def _read(
    solution: np.ndarray,
    states: Sequence[PartitionState],
    layout: RackLayout,
    columns: Sequence[_Partition],
    total: int,
) -> Exact:
    replicas, leaders, kept = [], [], 0
    for state, c in zip(states, columns, strict=True):
        chosen = {b for b, col in zip(layout.brokers, c.replica, strict=True) if solution[col] > 0.5}
        stay = [b for b in state.replicas if b in chosen]
        kept += len(stay)
        replicas.append((*stay, *sorted(chosen.difference(stay))))
        leaders.append(
            next(b for b, col in zip(layout.brokers, c.leader, strict=True) if solution[col] > 0.5)
        )
    return Exact(replicas, leaders, total - kept)
