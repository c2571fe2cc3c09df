"""Topics of the balance program solved again, every other topic held as solved: where an optimum of a
relaxation breaks rows it left out (:mod:`ferry.plan.balance.assign_extras`), the topics breaking them
alone, under all their rows. If they keep as many replicas, the whole keeps the relaxation's optimum
and meets every row: it is the optimum."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.program.integer_program import solve
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.setting import Outside, Setting
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


@dataclass(frozen=True)
class Again:
    """How topics are solved again (:func:`resolve`): the size terms' weight, and with ``lean`` the
    rack-room rows of topics the exact pass solves are left out (in a program of more than
    :data:`~ferry.plan.balance.assign_extras.ESCALATED` topics the rounds leave those rows to that
    pass anyway, and posed they make each program an integer one)."""

    scale: float
    lean: bool = False


def repair(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    solved: Balance,
    topics: Sequence[int],
    setting: Setting,
    again: Again,
) -> Balance | None:
    """Re-solve only ``topics``, with all their rack-room rows, every other topic held as solved.

    The relaxed optimum has many equal alternatives (which brokers take a topic's extras rarely
    changes how many replicas stay), and the solver picks one that breaks a few topics' rows. If those
    topics alone can meet their rows and keep as many replicas, the whole keeps the relaxation's
    optimum and meets every row: it is the optimum. Otherwise ``None`` (the caller adds the rows).

    One topic at a time first (:func:`each`): with room rows the program branches, and 26 topics at
    once took 8 s where one at a time takes a fraction of one; all together only if one alone cannot
    keep as many.
    """
    one_by_one, failed = each(layout, demands, solved, topics, setting, (again, True))
    if not failed or len(topics) == 1:
        return None if failed else one_by_one
    return together(layout, demands, solved, topics, setting, again)


def settle(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    solved: Balance,
    topics: Sequence[int],
    setting: Setting,
    again: Again,
) -> Balance | None:
    """Re-solve the topics whose held-back rows an optimum breaks
    (:mod:`ferry.plan.balance.program.deferred_rows`) under those rows, every other topic held as
    solved: each alone, then those that could not keep as many alone all together; ``None`` where
    they cannot.

    On the 100k "skewed rebalance, 2 racks of 20" of `benchmarks/plan_quality.py --shapes`, 741 of
    1,212 such topics kept as many alone (2.8 s), the other 471 together (1.0 s); all 1,212 together
    took 9.6 s."""
    one_by_one, failed = each(layout, demands, solved, topics, setting, (again, False))
    if not failed:
        return one_by_one
    return together(layout, demands, one_by_one, failed, setting, again)


def each(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    solved: Balance,
    topics: Sequence[int],
    setting: Setting,
    how: tuple[Again, bool],
) -> tuple[Balance, list[int]]:
    """``solved`` with each of ``topics`` solved again on its own, under all its rows, every other
    topic held as solved so far; and the topics that kept fewer replicas alone than in ``solved``
    (left as they were). ``how``: the :class:`Again`, and whether to stop at the first such topic."""
    again, stop = how
    everyone = Outside.of(len(layout.brokers), demands, solved.quotas)
    # One copy of the answer, each topic's part written in: a copy per topic costs O(topics), and
    # the 12,168 re-solves of a 1M two-rack skewed start (80,000 topics) took 65 s with it, 32 s without.
    quotas, kept, keeps = list(solved.quotas), list(solved.kept), list(solved.keeps)
    failed = []
    for t in topics:
        # Every topic but t as solved so far: O(brokers) per topic, not O(topics * brokers).
        outside = everyone.shifted(quotas[t], single=demands[t].single_replica, sign=-1)
        part = _part(layout, demands, (kept[t], [t]), setting, (again, outside))
        if part is None:
            failed.append(t)
            if stop:
                break
            continue
        everyone = outside.shifted(part.quotas[0], single=demands[t].single_replica, sign=1)
        quotas[t], kept[t], keeps[t] = part.quotas[0], part.kept[0], part.keeps[0]
    return Balance(quotas, kept, keeps), failed


def together(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    solved: Balance,
    topics: Sequence[int],
    setting: Setting,
    again: Again,
) -> Balance | None:
    """``solved`` with ``topics`` solved again in one program, every other topic held as solved."""
    outside = Outside.of(len(layout.brokers), demands, solved.quotas)
    for t in topics:
        outside = outside.shifted(solved.quotas[t], single=demands[t].single_replica, sign=-1)
    return resolve(layout, demands, solved, topics, setting, (again, outside))


def resolve(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    solved: Balance,
    topics: Sequence[int],
    setting: Setting,
    held: tuple[Again, Outside],
) -> Balance | None:
    """``solved`` with ``topics`` solved again under all their rows (:class:`Again` says which),
    every other topic held as ``held[1]`` says; ``None`` if they keep fewer replicas than in
    ``solved``."""
    part = _part(layout, demands, (sum(solved.kept[t] for t in topics), topics), setting, held)
    if part is None:
        return None
    quotas, kept, keeps = list(solved.quotas), list(solved.kept), list(solved.keeps)
    for j, t in enumerate(topics):
        quotas[t], kept[t], keeps[t] = part.quotas[j], part.kept[j], part.keeps[j]
    return Balance(quotas, kept, keeps)


def _part(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    wanted: tuple[int, Sequence[int]],
    setting: Setting,
    held: tuple[Again, Outside],
) -> Balance | None:
    """The answer for ``topics`` alone (``wanted``: the replicas they must keep, and the topics),
    solved under all their rows, every other topic held as ``held[1]`` says; ``None`` if they keep
    fewer."""
    again, outside = held
    need, topics = wanted
    racks = range(len(layout.members))
    # Lean: rack-room rows only for the topics the exact pass cannot solve.
    rows = {(j, k) for j, t in enumerate(topics) if not demands[t].exact for k in racks}
    sub = ProgramState(
        layout,
        [demands[t] for t in topics],
        voluntary=setting.voluntary,
        outside=outside,
        scale=again.scale,
        room_rows=rows if again.lean else None,
    )
    sub.need = need  # keeping fewer, the answer is None whatever it is: the solver may stop early
    part = solve(sub, setting)
    return None if part is None or sum(part.kept) < need else part
