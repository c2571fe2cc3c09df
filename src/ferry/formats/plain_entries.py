"""The common partition entry of a snapshot, read in one step.

Almost every entry of a snapshot file is plain: ``topic``, ``partition``, ``replicas`` and
optionally ``leader``, ``isr`` and ``size_bytes``, all valid. Read field by field, with a JSON path
made and a problem list checked per field (:mod:`ferry.formats.snapshot_json`), 1M of them took 27 s
of a 32 s load; :func:`plain_partition` checks the same rules with plain comparisons and gives up
at the first thing it does not expect, and only then is the entry read the careful way, which names
the problem and its place. So an entry read here is exactly one the careful reader accepts.
"""

from __future__ import annotations

from ferry.formats._problems import INT32_MAX, INT64_MAX
from ferry.model import PartitionState, TopicPartition

_PLAIN_KEYS = frozenset(("topic", "partition", "replicas", "leader", "isr", "size_bytes"))


def plain_partition(
    item: object, known: frozenset[int] | None
) -> tuple[TopicPartition, PartitionState] | None:
    """``item``'s topic-partition and partition if it is a plain, valid entry (module docstring),
    else ``None``. ``known``: the snapshot's broker ids (``None`` when unreadable: nothing is
    plain then). Few calls: it runs once per partition."""
    if type(item) is not dict or known is None or not _PLAIN_KEYS.issuperset(item):
        return None
    get = item.get
    topic, number, replicas = get("topic"), get("partition"), get("replicas")
    leader, isr, size = get("leader"), get("isr"), get("size_bytes")
    distinct = _replicas(replicas, known)
    plain = (
        distinct is not None
        and type(topic) is str
        and topic != ""
        and type(number) is int
        and 0 <= number <= INT32_MAX
        and (leader is None or (type(leader) is int and (leader == -1 or leader in distinct)))
        and (
            isr is None
            or (
                type(isr) is list
                and (not isr or set(map(type, isr)) == _INT)
                and len(set(isr)) == len(isr)
                and distinct.issuperset(isr)
            )
        )
        and (size is None or (type(size) is int and 0 <= size <= INT64_MAX))
    )
    if not plain:
        return None
    tp = TopicPartition(topic, number)  # type: ignore[arg-type]
    isr_tuple = None if isr is None else tuple(isr)
    return tp, PartitionState.checked(tp, tuple(replicas), leader, isr_tuple, size)  # type: ignore[arg-type]


def _replicas(replicas: object, known: frozenset[int]) -> set[int] | None:
    """The set of ``replicas`` if it is a non-empty list of distinct known broker ids. Known ids
    are integers within bounds, so replicas among them are too once each is an int (JSON's true
    and 1.0 equal 1 in Python)."""
    if type(replicas) is not list or set(map(type, replicas)) != _INT:
        return None
    distinct = set(replicas)
    return distinct if len(distinct) == len(replicas) and known.issuperset(distinct) else None


_INT = {int}
