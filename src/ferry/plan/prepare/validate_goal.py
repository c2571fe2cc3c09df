"""Check a Goal against the snapshot it will be planned on, before any planning starts.

A Goal is well-formed on its own (``Goal.__post_init__``); whether its brokers and topics exist,
and whether enough target brokers remain for each replication factor, depends on the snapshot.
Every problem is reported at once, named after the command-line option that caused it, so the
user fixes them in one pass. Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from ferry.errors import InputError
from ferry.model import ClusterSnapshot, Goal
from ferry.plan.prepare.scope import target_brokers


def validate_goal(snapshot: ClusterSnapshot, goal: Goal, *, source: str) -> None:
    """Raise an InputError listing every way ``goal`` does not fit ``snapshot``.

    Args:
        snapshot: the cluster the goal will be planned on.
        goal: the request, already well-formed on its own.
        source: the snapshot's name (usually its file name), used in messages.

    Raises:
        InputError: an unknown broker or topic, a replace pair that cannot work, a replication
            factor above the number of target brokers, or nothing in scope.
    """
    problems = [
        *_broker_problems(snapshot, goal, source),
        *_replace_problems(snapshot, goal, source),
        *_topic_problems(snapshot, goal, source),
        *_capacity_problems(snapshot, goal, source),
    ]
    # The capacity and scope checks read the target brokers and topics just checked; after a
    # problem there they would only repeat it in other words.
    if not problems:
        problems = _rf_problems(snapshot, goal)
        if not any(goal.in_scope(t) for t in snapshot.topics):
            problems.append(f"nothing to plan: no topic of {source} is in scope")
    if problems:
        raise InputError.of(problems)


def _broker_problems(snapshot: ClusterSnapshot, goal: Goal, source: str) -> list[str]:
    known = set(snapshot.broker_ids)
    unknown = sorted((goal.brokers or frozenset()) - known)
    return [f"--brokers: broker {b} is not in {source}" for b in unknown]


def _capacity_problems(snapshot: ClusterSnapshot, goal: Goal, source: str) -> list[str]:
    """Every target broker needs a capacity: a fraction in use means nothing without one."""
    if goal.capacity is None:
        return []
    known = set(snapshot.broker_ids)
    unknown = [f"--capacity: broker {b} is not in {source}" for b in sorted(set(goal.capacity) - known)]
    missing = sorted(set(target_brokers(snapshot, goal)) & known - set(goal.capacity))
    return unknown + [f"--capacity: no capacity given for target broker {b}" for b in missing]


def _replace_problems(snapshot: ClusterSnapshot, goal: Goal, source: str) -> list[str]:
    known = set(snapshot.broker_ids)
    olds = {old for old, _ in goal.replace}
    problems: list[str] = []
    replaced_by: dict[int, list[int]] = defaultdict(list)
    for old, new in goal.replace:
        option = f"--replace {old}={new}"
        if old not in known:
            problems.append(f"{option}: broker {old} is not in {source}")
        if new not in known:
            # A new, empty broker still appears in the snapshot's broker list; ferry places
            # replicas only on brokers it knows the rack of.
            problems.append(f"{option}: broker {new} is not in {source} (list new brokers in its 'brokers')")
        if new in olds:
            problems.append(f"{option}: broker {new} is itself being replaced")
        replaced_by[new].append(old)
    for new, sources in sorted(replaced_by.items()):
        if len(sources) > 1:
            listed = " and ".join(str(o) for o in sorted(sources))
            problems.append(f"--replace: broker {new} cannot replace both {listed}")
    return problems


def _topic_problems(snapshot: ClusterSnapshot, goal: Goal, source: str) -> list[str]:
    known = set(snapshot.topics)
    problems = _unknown_topics("--topics", goal.topics or (), known, source)
    problems += _unknown_topics("--exclude-topics", goal.exclude_topics, known, source)
    for topic, rf in sorted(goal.replication_factors.items()):
        option = f"--replication-factor {topic}={rf}"
        if topic not in known:
            problems.append(f"{option}: topic '{topic}' is not in {source}")
        elif not goal.in_scope(topic):
            problems.append(f"{option}: topic '{topic}' is excluded by --topics/--exclude-topics")
    return problems


def _unknown_topics(option: str, topics: Iterable[str], known: set[str], source: str) -> list[str]:
    return [f"{option}: topic '{t}' is not in {source}" for t in sorted(set(topics) - known)]


def _rf_problems(snapshot: ClusterSnapshot, goal: Goal) -> list[str]:
    targets = len(target_brokers(snapshot, goal))
    problems: list[str] = []
    for topic, current in sorted(_max_rf_by_topic(snapshot, goal).items()):
        wanted = goal.replication_factors.get(topic)
        if wanted is not None and wanted > targets:
            problems.append(f"--replication-factor {topic}={wanted}: only {targets} target brokers")
        elif wanted is None and current > targets:
            problems.append(
                f"topic '{topic}' has replication factor {current} but only {targets} target"
                f" brokers (keep more brokers or lower it: --replication-factor {topic}={targets})"
            )
    return problems


def _max_rf_by_topic(snapshot: ClusterSnapshot, goal: Goal) -> Mapping[str, int]:
    """The largest current replication factor of each topic in scope."""
    max_rf: dict[str, int] = {}
    for state in snapshot.partitions:
        topic = state.tp.topic
        if goal.in_scope(topic):
            max_rf[topic] = max(max_rf.get(topic, 0), state.replication_factor)
    return max_rf
