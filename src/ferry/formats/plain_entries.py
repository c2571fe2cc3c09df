"""The common partition entry of a snapshot, read in one step.

Almost every entry of a snapshot file is plain: ``topic``, ``partition``, ``replicas`` and
optionally ``leader``, ``isr`` and ``size_bytes``, all valid. Read field by field, with a JSON path
made and a problem list checked per field (:mod:`ferry.formats.snapshot_json`), 1M of them took 27 s
of a 32 s load; :func:`plain_partition` checks the same rules with plain comparisons and gives up
at the first thing it does not expect, and only then is the entry read the careful way, which names
the problem and its place. So an entry read here is exactly one the careful reader accepts.
"""

from __future__ import annotations

from itertools import chain, repeat
from typing import Any

from ferry.formats._problems import INT32_MAX, INT64_MAX
from ferry.model import PartitionState, TopicPartition

_PLAIN_KEYS = frozenset(("topic", "partition", "replicas", "leader", "isr", "size_bytes"))


def plain_partitions(items: object, known: frozenset[int] | None) -> list[PartitionState] | None:
    """Every entry of ``items`` as :func:`plain_partition` reads it, if every one is plain and no
    topic-partition repeats, else ``None`` (then each entry is read on its own).

    The same rules, checked a field at a time over all entries (``map`` and set operations, which
    loop in C) instead of an entry at a time: a million entries in about 1 s less.
    """
    if type(items) is not list or known is None or not _plain_dicts(items):
        return None
    columns: list[list[Any]] = [list(map(dict.get, items, repeat(key))) for key in _COLUMNS]
    topics, numbers, replicas, leaders, isrs, sizes = columns
    if not (_named(topics, numbers) and _held(replicas, leaders, isrs, known) and _sized(sizes)):
        return None
    tps = list(map(TopicPartition, topics, numbers))
    if len(set(tps)) != len(tps):
        return None
    isr_tuples = [None if isr is None else tuple(isr) for isr in isrs]
    return list(map(PartitionState.checked, tps, map(tuple, replicas), leaders, isr_tuples, sizes))


def _plain_dicts(items: list[Any]) -> bool:
    return _TYPES_DICT.issuperset(map(type, items)) and _PLAIN_KEYS.issuperset(chain.from_iterable(items))


def _named(topics: list[Any], numbers: list[Any]) -> bool:
    """Topics non-empty strings, partition numbers ints from 0 to INT32_MAX."""
    return (
        (not topics or set(map(type, topics)) == _STR)
        and "" not in topics
        and _ints_within(numbers, INT32_MAX)
    )


def _held(replicas: list[Any], leaders: list[Any], isrs: list[Any], known: frozenset[int]) -> bool:
    """Replicas distinct known ids; each leader -1 or one of them; each isr distinct and among them."""
    isr_lists = [_NO_ISR if isr is None else isr for isr in isrs]
    return (
        _distinct_known(replicas, known)
        and _TYPES_LEADER.issuperset(map(type, leaders))
        and all(
            lead is None or lead == -1 or lead in held for lead, held in zip(leaders, replicas, strict=True)
        )
        and _TYPES_ISR.issuperset(map(type, isrs))
        and _distinct_known(isr_lists, None, empty=True)
        # Sets made and dropped a row at a time: a million kept at once would cost ~200 MB.
        and all(map(set.issuperset, map(set, replicas), isr_lists))
    )


def _sized(sizes: list[Any]) -> bool:
    """Sizes missing or ints from 0 to INT64_MAX."""
    return _TYPES_LEADER.issuperset(map(type, sizes)) and _ints_within(
        [size for size in sizes if size is not None], INT64_MAX, typed=True
    )


def _ints_within(values: list[Any], most: int, *, typed: bool = False) -> bool:
    """Whether every value is an int (not a bool) from 0 to ``most``; ``typed``: known ints."""
    if not values:
        return True
    if not typed and set(map(type, values)) != _INT:
        return False
    return bool(min(values) >= 0 and max(values) <= most)


def _distinct_known(lists: list[Any], known: frozenset[int] | None, *, empty: bool = False) -> bool:
    """Whether every one is a list of distinct ints (non-empty unless ``empty``), all in ``known``
    where given."""
    if set(map(type, lists)) != _LIST:
        return False
    flat = list(chain.from_iterable(lists))
    if flat and set(map(type, flat)) != _INT:
        return False
    sizes = list(map(len, lists))
    if not empty and 0 in sizes:
        return False
    if list(map(len, map(set, lists))) != sizes:
        return False
    return known is None or known.issuperset(flat)


_COLUMNS = ("topic", "partition", "replicas", "leader", "isr", "size_bytes")
_TYPES_DICT = frozenset((dict,))
_TYPES_LEADER = frozenset((int, type(None)))
_TYPES_ISR = frozenset((list, type(None)))
_STR = {str}
_LIST = {list}
_NO_ISR: list[int] = []
"""Stands for a missing isr in the checks (never changed)."""


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
