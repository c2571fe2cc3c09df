"""The one entry of the planning kernel, ``plan(snapshot, goal) -> Plan``, and its phase API.

:func:`plan` runs the phases below in order, in process. A distributed engine (:mod:`ferry.pipeline`)
runs the same functions where the data is — the per-topic ones (:func:`start_topic` and
:func:`place_topic`, over the topics a worker holds) on workers, the global ones
(:func:`demands_of`, :func:`balance_topics`, :func:`assemble`) once — and imports nothing else from
:mod:`ferry.plan` (an import-linter contract holds it to that), so the phase order has one home:
change a phase here and both engines follow.

Phases, in order (each a subpackage of :mod:`ferry.plan`):

1. :mod:`~ferry.plan.prepare` — per topic, each target broker's base load and the extras to hand out
   (:mod:`~ferry.plan.prepare.quotas`), and what the topic asks of the balance pass
   (:mod:`~ferry.plan.prepare.topic_demand`; many topics at once:
   :mod:`~ferry.plan.prepare.bulk_demand`);
2. :mod:`~ferry.plan.balance` — which brokers take each topic's extras and which replicas stay, for
   all topics at once (:mod:`~ferry.plan.balance.assign_extras`), and topics whose quotas cannot keep
   what the program counted, solved again exactly (:mod:`~ferry.plan.balance.repair`);
3. :mod:`~ferry.plan.place` — forced and over-quota drops (smallest replicas first), then the open
   slots filled (:mod:`~ferry.plan.place.placement`);
4. :mod:`~ferry.plan.leaders` — preferred leaders spread evenly, current leaders kept where
   possible, and replica swaps of equal cost where the placement left no even leader choice;
5. :mod:`~ferry.plan.balance.repair.whole_plan` — only where the passes missed a target (moves above
   the bound, a replica above quota, leaders spread by more than one) on a small input: the whole
   plan as one integer program;
6. :mod:`~ferry.plan.measure` — the report.

Every pass that gives a partition a replica asks the one rack rule, :func:`ferry.plan.racks.may_take`.

Lower bound on replica moves: every replica slot of topic ``t`` not filled by a replica already there
is a move, so moves >= ``R_t - kept_t``. A broker keeps at most its quota of the topic's replicas
(replicas on removed brokers: none); a partition keeps at most its replication factor, at most a
rack's upper bound in each rack, and leaves a free slot for every replica a rack lacks to reach its
lower bound. The balance pass (:mod:`~ferry.plan.balance`) maximises ``kept`` under exactly these limits
together with per-topic, rack and cluster-wide balance, so ``sum_t R_t - kept_t`` bounds the moves of every
plan that meets those balance rules: it counts the replicas that must leave removed or over-full brokers
and those the rack rule or a lower replication factor forces out. The planner then realises those
quotas; a placement it has to force above a quota would be reported as a fallback.

That bound comes from a relaxation (the program's rack-room rows count open slots per rack, not
which partition takes which), and it ignores leaders, so on a few small inputs no plan meeting every
rule reaches it: the rack rule costs a move the rows did not see, or an even leader spread needs a
replica elsewhere. Where the passes miss a target on a small input, the whole-plan program solves the same
rules without the relaxation, leader spread included; its optimum is the fewest moves any plan
meeting every rule can make, so it is both the plan and the reported bound (never below the
program's, which relaxes the same rules). On larger inputs the program's bound stands.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ferry.model.cluster import ClusterSnapshot, PartitionState
from ferry.model.goal import BalanceMode, Goal, RackMode
from ferry.model.plan import Move, Plan
from ferry.model.report import PlanReport
from ferry.plan.balance.assign_extras import assign_extras, final_quota
from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.repair.whole_plan import LIMIT, solve_exactly
from ferry.plan.budget.step import take_step
from ferry.plan.disk.byte_balance import plan_disk
from ferry.plan.disk.drain import plan_drain
from ferry.plan.forked import aside, forked_map
from ferry.plan.gc_pause import pausing
from ferry.plan.leaders.swaps import leaders_with_swaps
from ferry.plan.measure.report import balance_after, balance_before, build_report
from ferry.plan.place.cordons import around_cordons
from ferry.plan.place.drops import apply_keeps, over_quota_drops
from ferry.plan.place.exact_keeps import place_again, worth_placing_again
from ferry.plan.place.placement import place
from ferry.plan.place.replace import plan_replace
from ferry.plan.prepare.bulk_demand import topic_demands
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.prepare.quotas import TopicQuota, topic_quota
from ferry.plan.prepare.scope import in_scope, target_brokers
from ferry.plan.prepare.topic_demand import topic_demand
from ferry.plan.racks import RackLayout
from ferry.plan.topic_work import TopicWork


@pausing
def plan(snapshot: ClusterSnapshot, goal: Goal) -> Plan:
    """Plan the reassignment that reaches ``goal`` with the fewest replica moves."""
    if goal.replace:
        # Keep in step with per_topic_phases.
        done = plan_replace(snapshot, goal)
        leaders = [reps[0] for _, reps in done.planned]
        return Plan.of(*_finished(snapshot, goal, done.targets, done.planned, leaders, done.bound))
    if goal.balance is BalanceMode.BYTES:
        return plan_bytes(snapshot, goal)
    if goal.drain_above is not None:
        return plan_drained(snapshot, goal)
    targets = target_brokers(snapshot, goal)
    layout = RackLayout.of(snapshot.racks, targets)
    topics = list(in_scope(snapshot, goal))
    # The report's figures before the plan read the snapshot alone: counted in a child of their own
    # while this process solves the balance program, much of it on one core.
    before = aside(lambda: report_before(snapshot, goal, targets), sum(map(len, topics)))
    demands = demands_of(topics, goal, layout)
    outcome = balance_topics(layout, demands)

    def placed(t: int) -> tuple[int, list[tuple[int, ...]]]:
        work = start_topic(topics[t], goal, layout)
        fallbacks = place_topic(work, layout, outcome.quotas[t], outcome.keeps[t], goal.rack_mode)
        return fallbacks, [tuple(slot.replicas) for slot in work.slots]

    # Topics are placed apart from each other, in forked processes where there are cores for them,
    # each starting its own topics' scratch state (a child's placement stays in the child: the
    # answers are read back, per partition in order).
    answers = forked_map(placed, [len(parts) for parts in topics])
    planned: list[Planned] = [
        (state, replicas)
        for parts, (_, placed_replicas) in zip(topics, answers, strict=True)
        for state, replicas in zip(parts, placed_replicas, strict=True)
    ]
    fallbacks = sum(count for count, _ in answers)
    return assemble(snapshot, goal, targets, planned, lower_bound(demands, outcome), fallbacks, before())


# The phase API (module docstring): run in plan()'s order, these give exactly what plan() gives.
# The types they take and return are re-exported, so an engine needs this module alone.
__all__ = [
    "Balance",
    "Planned",
    "RackLayout",
    "TopicDemand",
    "TopicQuota",
    "assemble",
    "balance_topics",
    "demands_of",
    "in_scope",
    "lower_bound",
    "pausing",
    "per_topic_phases",
    "place_topic",
    "plan",
    "planned_replicas",
    "prepare_topic",
    "report_before",
    "start_topic",
    "target_brokers",
]

Planned = tuple[PartitionState, tuple[int, ...]]
"""A partition and its planned replicas, kept ones first (the order the leader pass and moves use)."""


def per_topic_phases(goal: Goal) -> bool:
    """Whether :func:`plan` plans ``goal`` through the per-topic phases (the ones an engine may
    spread over workers). A replace, the byte balance and a drain are each one pass over the whole
    cluster: the byte balance weighs every replica against every broker at once."""
    return not goal.replace and goal.balance is not BalanceMode.BYTES and goal.drain_above is None


def prepare_topic(
    parts: Sequence[PartitionState], goal: Goal, layout: RackLayout
) -> tuple[TopicWork, TopicDemand]:
    """Per topic: its scratch state and what it asks of the global balance pass."""
    rfs = _factors(parts, goal)
    quota = topic_quota(layout, rfs, goal.rack_mode)
    work = TopicWork.start(parts[0].tp.topic, parts, rfs, layout.position)
    return work, topic_demand(work, layout, quota, goal.rack_mode)


def demands_of(
    topics: Sequence[Sequence[PartitionState]], goal: Goal, layout: RackLayout
) -> list[TopicDemand]:
    """What each of ``topics`` asks of the balance pass, worked out together
    (:mod:`ferry.plan.prepare.bulk_demand`), without the topics' scratch state: whatever places
    them builds its own (:func:`start_topic`)."""
    factors = [_factors(parts, goal) for parts in topics]
    quotas = [topic_quota(layout, rfs, goal.rack_mode) for rfs in factors]
    return topic_demands(topics, factors, layout, quotas, goal.rack_mode)


def start_topic(parts: Sequence[PartitionState], goal: Goal, layout: RackLayout) -> TopicWork:
    """The scratch state of :func:`prepare_topic` alone, for an engine that got the balance pass's
    decision from elsewhere: the demand (most of the cost of preparing) only feeds that pass."""
    return TopicWork.start(parts[0].tp.topic, parts, _factors(parts, goal), layout.position)


def _factors(parts: Sequence[PartitionState], goal: Goal) -> list[int]:
    topic = parts[0].tp.topic
    return [goal.replication_factors.get(topic, p.replication_factor) for p in parts]


def balance_topics(layout: RackLayout, demands: Sequence[TopicDemand]) -> Balance:
    """Once for all topics: which brokers take each topic's extras, and the replicas kept
    (:func:`ferry.plan.balance.assign_extras.assign_extras`)."""
    return assign_extras(layout, demands)


def place_topic(
    work: TopicWork,
    layout: RackLayout,
    quota: Sequence[int],
    keeps: Mapping[int, frozenset[int]],
    mode: RackMode,
) -> int:
    """Per topic, once the balance pass decided: drop and place replicas; returns the fallbacks.
    Where that loses kept replicas, the topic is placed again from an exact flow's
    (:mod:`ferry.plan.place.exact_keeps`)."""
    by_broker = final_quota(layout, quota)
    apply_keeps(work, keeps)
    over_quota_drops(work, by_broker)
    kept = work.kept
    fallbacks = place(work, layout, by_broker, mode)
    if worth_placing_again(work, kept, mode, fallbacks):
        fallbacks = place_again(work, layout, quota, by_broker, fallbacks)
    return fallbacks


def planned_replicas(work: TopicWork) -> list[Planned]:
    return [(slot.state, tuple(slot.replicas)) for slot in work.slots]


def lower_bound(demands: Sequence[TopicDemand], outcome: Balance) -> int:
    return sum(d.quota.total - kept for d, kept in zip(demands, outcome.kept, strict=True))


def assemble(
    snapshot: ClusterSnapshot,
    goal: Goal,
    targets: Sequence[int],
    planned: Sequence[Planned],
    bound: int,
    fallbacks: int,
    before: Mapping[str, int] | None = None,
) -> Plan:
    """Global finish: preferred leaders over every planned partition, the moves and the report; where
    the passes missed a target on a small input, the exact plan and its bound instead. ``before``:
    the report's figures before the plan, where counted already (:func:`report_before`)."""
    layout = RackLayout.of(snapshot.racks, targets)
    states = [state for state, _ in planned]
    replicas = [list(reps) for _, reps in planned]
    leaders = leaders_with_swaps(states, replicas, layout)
    planned = list(zip(states, map(tuple, replicas), strict=True))
    if _falls_short(planned, leaders, layout, bound, fallbacks) and len(planned) * len(targets) <= LIMIT:
        demands = [prepare_topic(parts, goal, layout)[1] for parts in in_scope(snapshot, goal)]
        exact = solve_exactly(states, replicas, goal, layout, demands)
        if exact is not None:
            planned = list(zip(states, exact.replicas, strict=True))
            leaders, bound, fallbacks = exact.leaders, exact.moves, 0
    moves, report = _finished(snapshot, goal, targets, planned, leaders, bound, before)
    return Plan.of(moves, replace(report, placement_fallbacks=fallbacks))


def report_before(snapshot: ClusterSnapshot, goal: Goal, targets: Sequence[int]) -> dict[str, int]:
    """The report's balance figures before the plan: they read the in-scope partitions as they are,
    so an engine may count them while the per-topic passes run elsewhere and hand them to
    :func:`assemble`."""
    placement = [(state.tp, state.replicas) for parts in in_scope(snapshot, goal) for state in parts]
    return balance_before(snapshot, targets, placement)


def _falls_short(
    planned: Sequence[Planned], leaders: Sequence[int], layout: RackLayout, bound: int, fallbacks: int
) -> bool:
    """Whether the passes missed a target: moves above the bound, a fallback, or leaders spread > 1."""
    moved = sum(1 for state, reps in planned for b in reps if b not in state.replicas)
    led = Counter(leaders)
    counts = [led[b] for b in layout.brokers]
    return moved > bound or fallbacks > 0 or (bool(counts) and max(counts) - min(counts) > 1)


def plan_bytes(snapshot: ClusterSnapshot, goal: Goal) -> Plan:
    """The byte balance (:mod:`ferry.plan.disk.byte_balance`) and its report."""
    targets = target_brokers(snapshot, goal)
    scope = [state for parts in in_scope(snapshot, goal) for state in parts]
    result = plan_disk(snapshot, goal, targets, scope)
    moves, report = _finished(snapshot, goal, targets, result.planned, result.leaders, 0)
    moved, stepped = _whole_and_step(report, moves, result.planned)
    # A step's bytes per broker are its own; the bound and the ratio to it are the full plan's.
    disk = result.figures if stepped is None else result.figures_of(stepped)
    bound = int(str(disk["bytes_lower_bound"]))
    disk["bytes_moved_over_bound"] = round(moved / bound, 4) if bound else None
    return Plan.of(moves, replace(report, disk=disk, placement_fallbacks=0))


def plan_drained(snapshot: ClusterSnapshot, goal: Goal) -> Plan:
    """The drain above a threshold (:mod:`ferry.plan.disk.drain`) and its report."""
    targets = target_brokers(snapshot, goal)
    scope = [state for parts in in_scope(snapshot, goal) for state in parts]
    result = plan_drain(snapshot, goal, targets, scope)
    leaders = [replicas[0] for _, replicas in result.planned]
    moves, report = _finished(snapshot, goal, targets, result.planned, leaders, 0)
    moved, stepped = _whole_and_step(report, moves, result.planned)
    # A step's fractions are its own; the ratio to what must leave is the whole drain's.
    drain = result.figures if stepped is None else result.figures_of(stepped)
    leave = int(str(drain["bytes_to_leave"]))
    drain["bytes_moved_over_bound"] = round(moved / leave, 4) if leave else None
    return Plan.of(moves, replace(report, drain=drain, placement_fallbacks=0))


def _whole_and_step(
    report: PlanReport, moves: Sequence[Move], planned: Sequence[Planned]
) -> tuple[int, list[Planned] | None]:
    """The bytes the whole plan moves and, for a budgeted step, the placement the step leaves
    (``None`` when the plan is whole)."""
    if report.budget is None:
        return report.bytes_moved, None
    moves_to = {m.tp: m.target for m in moves}
    stepped = [(state, moves_to.get(state.tp, state.replicas)) for state, _ in planned]
    return int(str(report.budget["full_plan_bytes"])), stepped


def _finished(
    snapshot: ClusterSnapshot,
    goal: Goal,
    targets: Sequence[int],
    planned: Sequence[Planned],
    leaders: Sequence[int],
    bound: int,
    before: Mapping[str, int] | None = None,
) -> tuple[list[Move], PlanReport]:
    """The moves and report of the full plan, or of the step of it that the goal's budget allows
    (:mod:`ferry.plan.budget`; the report's bound stays the full plan's). ``before``: the report's
    figures before the plan, where counted already (:func:`report_before`)."""
    full = [
        (state, (leader, *(b for b in replicas if b != leader)))
        for (state, replicas), leader in zip(planned, leaders, strict=True)
    ]
    cordoned = [b.id for b in snapshot.brokers if b.cordoned]
    if cordoned and not goal.replace:  # a replace moves exactly to NEW, or is refused
        full = around_cordons(full, RackLayout.of(snapshot.racks, targets), goal.rack_mode, cordoned)
    if not goal.budgeted:
        moves = _moves(full)
        return moves, build_report(snapshot, goal, targets, full, moves, bound, before)
    brokers = {b.id: b for b in snapshot.brokers}
    step = take_step(RackLayout.of(snapshot.racks, targets), goal, full, brokers)
    moves = _moves(step.planned)
    full_after = balance_after(snapshot, targets, [(state.tp, replicas) for state, replicas in full])
    figures = {**step.figures, "full_plan_after": full_after}
    report = build_report(snapshot, goal, targets, step.planned, moves, bound, before)
    return moves, replace(report, budget=figures)


def _moves(planned: Sequence[Planned]) -> list[Move]:
    """A move for every partition whose planned replicas (preferred leader first) differ."""
    return [
        Move(state.tp, state.replicas, target, state.size)
        for state, target in planned
        if target != state.replicas
    ]
