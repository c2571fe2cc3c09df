"""Make the balance program's choice hold partition by partition where its rack-room rows were loose.

The program's rack-room rows (:mod:`ferry.plan.balance.program.rack_room`) count the open slots each rack can
fill, summed over a topic's partitions; which partition takes which slot they leave open. On a wide
cluster of small topics (10 partitions, 30 replicas over 200 brokers in 10 racks) a topic's quotas
can then keep fewer replicas than the program counted, and its placement moves more than the bound.

For the topics :attr:`~ferry.plan.prepare.demand.TopicDemand.layouts` describes (strict racks, every
partition free) this pass

1. finds each topic's most kept replicas under its quotas, exactly, by min-cost flow
   (:mod:`ferry.plan.balance.repair.kept_flow`);
2. solves the topics that fall short of the program's count again, a chunk at a time (with a few
   topics at their count to trade extras with, :func:`partner_order`), with every
   partition's kept replicas and additions per rack as columns and each broker's total over the
   chunk held as solved, so no row of the program changes (:mod:`ferry.plan.balance.repair.chunk_program`);
3. takes the new quotas, with every partition's kept replicas, where they keep more;
4. lets each topic still short swap one extra with another topic where that wins it back
   (:mod:`ferry.plan.balance.repair.swaps`).

Steps 2 to 4 stop as soon as the topics together keep the program's count (:func:`_reached`): a
chunk's trades often leave one topic a replica short and its partner one above its count, which
meets the bound as well. On the 100k skewed start of `benchmarks/plan_quality.py --shapes` the
later rounds and the swaps then only searched, in vain, for the short topics' own replicas
(docs/benchmarks.md, "The exact pass stops at the program's count").

The program's optimum stays the lower bound on moves: this pass only finds plans that reach it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.repair.chunk_program import rejoin
from ferry.plan.balance.repair.kept_flow import kept_per_topic
from ferry.plan.balance.repair.swaps import swap_extras
from ferry.plan.balance.solvers.side_by_side import side_by_side
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout

Mix = tuple[int, int, int]
"""Short topics per chunk; topics at their count solved with each chunk to trade extras with, of
the short topics' replication factors; and single-replica topics at their count besides
(:func:`_chunks`)."""

FIRST: Mix = (10, 4, 4)
"""The chunks of the first round, which solves every short topic: small ones, as a relaxation's
time grows faster than its topics (their extra columns span every broker).

`benchmarks/exact_pass.py --shape "racks of 30" --chunks 30+10,10+4/30+10` (docs/benchmarks.md,
"Smaller chunks first"): the pass took a quarter to a third less CPU time on the 100k draws and
the 1M one, every posed topic at its program count. Fewer partners per short topic (30 + 5) left
more topics short for later rounds."""

LATER: Mix = (30, 10, 4)
"""The chunks of the rounds after the first, over the few topics it left short (about a hundred of
9,817 on the 1M racks of 30 to 6): each short topic among more partners, which the first round's
small chunks could not give it (12 + 5 in every round kept two replicas fewer than the program
there)."""

ROUNDS = 6
"""Most passes over the topics still short, while a pass keeps more: a chunk's trades can leave a
partner short, and the next round gives it other partners (those above their count first). A
round after the first solves a chunk or two (tens of topics short, of thousands)."""


def realise(layout: RackLayout, demands: Sequence[TopicDemand], solved: Balance) -> Balance:
    """``solved`` with the quotas and keeps of its short topics solved again (module docstring)."""
    return realise_counting(layout, demands, solved)[0]


def realise_counting(
    layout: RackLayout, demands: Sequence[TopicDemand], solved: Balance, *, singles: bool = True
) -> tuple[Balance, int]:
    """:func:`realise`, and how many replicas fewer than the program counted its topics keep
    together (0: the plan can meet the lower bound). ``singles``: single-replica topics may trade
    extras, and so change how many leaders they pin per broker."""
    topics = [
        t
        for t, d in enumerate(demands)
        if exact_posed(d, solved.quotas[t]) and (singles or not d.single_replica)
    ]
    if not topics:
        return solved, 0
    exact = _kept(layout, demands, solved, topics)
    quotas, keeps = list(solved.quotas), [dict(k) for k in solved.keeps]
    counted = sum(solved.kept[t] for t in topics)
    for rounds in range(ROUNDS):
        if _reached(exact, counted):
            break  # no topic short, or every one short made up for by another above its count
        short = [t for t in topics if exact[t] < solved.kept[t]]
        # A short topic alone, every broker's total held, has nothing to trade with.
        partners = partner_order(layout, demands, topics, solved.kept, exact)
        mix = LATER if rounds else FIRST
        if not _round(layout, demands, short, partners, quotas, keeps, exact, mix=mix):
            break
    if not _reached(exact, counted):
        swap_extras(layout, demands, topics, solved.kept, quotas, keeps, exact)
    return Balance(quotas, list(solved.kept), keeps), max(0, counted - sum(exact.values()))


def _reached(exact: Mapping[int, int], counted: int) -> bool:
    """Whether the topics keep, together, the program's ``counted`` replicas: the lower bound on
    moves is a sum over topics, so it is then met, and a topic still short of its own count is made
    up for by another above its count (most often a partner that a chunk let keep more). The
    program's count is the most any plan can keep (its rows hold for every placement), so nothing
    is left to win."""
    return sum(exact.values()) >= counted


def _round(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    short: Sequence[int],
    partners: Sequence[int],
    quotas: list[tuple[int, ...]],
    keeps: list[dict[int, frozenset[int]]],
    exact: dict[int, int],
    *,
    mix: Mix,
) -> bool:
    """Solve ``short`` again a chunk at a time, ``mix`` of them and of the ``partners`` per chunk;
    update ``quotas``, ``keeps`` and ``exact`` where a chunk keeps more. Whether any did.

    Chunks that share no topic are solved side by side (:func:`_waves`): each reads only its own
    topics' quotas, so the answers are those of one chunk after the other."""
    chunks = _chunks(demands, short, partners, mix)

    def solve(chunk: list[int]) -> Balance | None:
        return rejoin(layout, [demands[t] for t in chunk], [quotas[t] for t in chunk])

    improved = False
    for wave in _waves(chunks):
        for chunk, found in zip(wave, side_by_side(solve, wave), strict=True):
            if found is None or sum(found.kept) <= sum(exact[t] for t in chunk):
                continue
            improved = True
            for j, t in enumerate(chunk):
                quotas[t], keeps[t], exact[t] = found.quotas[j], dict(found.keeps[j]), found.kept[j]
    return improved


def _chunks(
    demands: Sequence[TopicDemand], short: Sequence[int], partners: Sequence[int], mix: Mix
) -> list[list[int]]:
    """The ``short`` topics cut into chunks of ``mix``, each with its share of ``partners``: of the
    short topics' replication factors where there are any, and single-replica topics besides.

    A partner trades extras under the same rack bounds as the short topic only at its own
    replication factor: on three racks a topic at RF 3 holds one replica in each rack of every
    partition, so it cannot take the other side of an RF 2 topic's move across racks. Partners in
    one list for all, in :func:`partner_order`, were mostly such topics on a 100k skewed start of
    RF 2 and 3 over three racks, which then planned 68 moves above its bound.

    A single-replica partition has room in every rack it is not in, so such a topic takes the other
    side of most moves. Among partners of the same factor only, a 1M removal of 20 brokers of 200
    at RF 1 to 3 left one replica short, and the whole program was solved again for it
    (:func:`ferry.plan.balance.assign_extras._realised`; docs/benchmarks.md)."""
    size, partnered, singled = mix
    factors = {t: tuple(sorted(set(demands[t].layouts.rf))) for t in (*short, *partners)}
    singles = [t for t in partners if demands[t].single_replica]
    others = [t for t in partners if not demands[t].single_replica]
    groups: dict[tuple[int, ...], list[int]] = {}
    for t in short:
        groups.setdefault(factors[t], []).append(t)
    chunks = []
    for factor, group in groups.items():
        mates = [t for t in others if factors[t] == factor] or others
        chunks += [
            [
                *group[start : start + size],
                *_cycled(mates, n * partnered, partnered),
                *_cycled(singles, n * singled, singled),
            ]
            for n, start in enumerate(range(0, len(group), size))
        ]
    return chunks


def partner_order(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    topics: Sequence[int],
    counted: Sequence[int],
    exact: Mapping[int, int],
) -> list[int]:
    """The ``topics`` at their program count (``counted``) that have extras, in the order the
    chunks take them as partners: those above their count first, then those whose extras cover
    nearest half the brokers, then the smaller.

    A short topic wins a replica back by moving an extra from one broker to another; a partner
    takes the other side only where it has an extra on the second broker and none on the first.
    With extras on ``e`` of ``B`` brokers that is likeliest at ``e = B / 2``. Partners taken in
    topic order gained fewer replicas per chunk, so chunks needed more of them, and bigger
    programs (docs/benchmarks.md, "Partners with extras on half the brokers")."""
    brokers = len(layout.brokers)
    return sorted(
        (t for t in topics if exact[t] >= counted[t] and demands[t].quota.extras > 0),
        key=lambda t: (
            counted[t] - exact[t],
            abs(2 * demands[t].quota.extras - brokers),
            len(demands[t].layouts),
        ),
    )


def _waves(chunks: Sequence[list[int]]) -> list[list[list[int]]]:
    """``chunks`` in order, cut into runs of chunks that share no topic (partners wrap around when
    there are fewer of them than the chunks take)."""
    waves: list[list[list[int]]] = []
    seen: set[int] = set()
    for chunk in chunks:
        if not waves or seen.intersection(chunk):
            waves.append([])
            seen = set()
        waves[-1].append(chunk)
        seen.update(chunk)
    return waves


def _kept(
    layout: RackLayout, demands: Sequence[TopicDemand], solved: Balance, topics: list[int]
) -> dict[int, int]:
    """What each of ``topics`` keeps at best, or its program count once a lower bound reaches it."""
    lower = kept_per_topic(
        layout, [demands[t] for t in topics], [solved.quotas[t] for t in topics], fix_settled=True
    )
    exact = dict(zip(topics, lower, strict=True))
    below = [t for t in topics if exact[t] < solved.kept[t]]
    found = kept_per_topic(
        layout, [demands[t] for t in below], [solved.quotas[t] for t in below], fix_settled=False
    )
    exact.update(zip(below, found, strict=True))
    return exact


def _cycled(items: Sequence[int], start: int, count: int) -> list[int]:
    """``count`` of ``items`` from ``start`` on, wrapping around, each at most once."""
    if not items:
        return []
    return [items[(start + i) % len(items)] for i in range(min(count, len(items)))]


def exact_posed(d: TopicDemand, quota: Sequence[int]) -> bool:
    """Whether the topic is one this pass handles: all partitions described, quotas adding up.

    Single-replica topics are among them, as partners (:func:`_chunks`), although their rack-room
    rows are the program's (:attr:`~ferry.plan.prepare.demand.TopicDemand.exact`). Their quotas are
    also the leaders they pin, so a caller that must keep the program's leader rows can leave them
    out (:func:`realise_counting`)."""
    return len(d.layouts) == d.partitions > 0 and sum(quota) == sum(d.layouts.rf)
