"""The quick reader of plain partition entries accepts exactly the entries the careful reader
accepts without a problem, and reads them alike."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.formats._problems import INT32_MAX, INT64_MAX, Problems
from ferry.formats.plain_entries import plain_partition, plain_partitions
from ferry.formats.snapshot_json import _Details, _parse_partition

KNOWN = frozenset({1, 2, 3, 4})

good: dict[str, Any] = {
    "topic": st.just("t"),
    "partition": st.integers(0, 5),
    "replicas": st.lists(st.integers(1, 4), min_size=1, max_size=4, unique=True),
    "leader": st.one_of(st.none(), st.integers(-1, 4)),
    "isr": st.one_of(st.none(), st.lists(st.integers(1, 4), max_size=4, unique=True)),
    "size_bytes": st.one_of(st.none(), st.integers(0, 10**6)),
    "replica_sizes": st.just({"1": 5}),
    "bogus": st.just(1),
}
"""Each field's values: mostly well formed (a leader or isr outside the replicas included)."""
odd_ids = st.lists(st.sampled_from([0, 5, 1, 1, True, 1.0, -1, INT32_MAX + 1, "1", None]), max_size=4)
bad: dict[str, Any] = {
    "topic": st.sampled_from(["", 3, None, ["t"]]),
    "partition": st.sampled_from([-1, True, 1.0, INT32_MAX, INT32_MAX + 1, "0"]),
    "replicas": st.one_of(odd_ids, st.just("1,2"), st.just([])),
    "leader": st.sampled_from([-2, True, 1.0, "1", 5]),
    "isr": st.one_of(odd_ids, st.just("1")),
    "size_bytes": st.sampled_from([-1, INT64_MAX, INT64_MAX + 1, 1.5, True]),
    "replica_sizes": st.just({"1": 5}),
    "bogus": st.just(1),
}


@st.composite
def entries(draw: st.DrawFn) -> object:
    """Mostly plain entries, some with a wrong value, a missing or an extra field; a few not
    objects at all."""
    if draw(st.integers(0, 20)) == 0:
        return draw(st.sampled_from([[], "entry", 3, None]))
    optional = st.sampled_from(["leader", "isr", "size_bytes", "replica_sizes", "bogus"])
    keys = ["topic", "partition", "replicas", *draw(st.lists(optional, unique=True, max_size=3))]
    if draw(st.integers(0, 5)) == 0:
        keys.remove(draw(st.sampled_from(keys)))
    return {key: draw(bad[key] if draw(st.integers(0, 7)) == 0 else good[key]) for key in keys}


@settings(max_examples=400)
@given(entries(), st.booleans())
def test_the_quick_reader_accepts_exactly_the_careful_readers_plain_entries(
    item: object, known: bool
) -> None:
    brokers = KNOWN if known else None
    problems = Problems("snapshot.json")
    careful = _parse_partition(item, "partitions[0]", brokers, problems, _Details())
    quick = plain_partition(item, brokers)
    if quick is not None:
        tp, state = quick
        assert careful is not None and not problems.items
        assert state == careful and tp == careful.tp
        assert (state.replica_bytes, state.replica_dirs, state.untiered_bytes) == ((), (), None)
        return
    plain = isinstance(item, dict) and set(item) <= {
        "topic",
        "partition",
        "replicas",
        "leader",
        "isr",
        "size_bytes",
    }
    # Only an entry the careful reader refuses, or one it reads with more than plain fields, or
    # one read without a broker list to check it against, takes the careful way alone.
    assert careful is None or problems.items or not plain or brokers is None


def test_a_live_snapshots_entry_is_read_quickly_and_a_measured_one_carefully() -> None:
    entry = {"topic": "t", "partition": 0, "replicas": [1, 2], "leader": 2, "isr": [2], "size_bytes": 7}
    quick = plain_partition(entry, KNOWN)
    assert quick is not None and quick[1].leader == 2 and quick[1].isr == (2,) and quick[1].size == 7
    assert plain_partition({**entry, "replica_sizes": {"1": 5}}, KNOWN) is None
    assert plain_partition({**entry, "replicas": [1, True]}, KNOWN) is None
    assert plain_partition({**entry, "isr": [2.0]}, KNOWN) is None


BASE = {"topic": "t", "partition": 1, "replicas": [1, 2, 3], "leader": 1, "isr": [1, 3], "size_bytes": 9}
ONE_WRONG = [
    ("topic", ""),
    ("topic", 3),
    ("partition", -1),
    ("partition", True),
    ("partition", 1.0),
    ("partition", INT32_MAX + 1),
    ("replicas", []),
    ("replicas", [1, 1]),
    ("replicas", [1, 5]),
    ("replicas", [1, True]),
    ("replicas", [1, 2.0]),
    ("replicas", [1, INT32_MAX + 1]),
    ("replicas", "1,2"),
    ("leader", 4),
    ("leader", -2),
    ("leader", True),
    ("leader", 1.0),
    ("isr", [4]),
    ("isr", [1, 1]),
    ("isr", [True]),
    ("isr", [1.0]),
    ("isr", "1"),
    ("size_bytes", -1),
    ("size_bytes", INT64_MAX + 1),
    ("size_bytes", 1.5),
    ("size_bytes", True),
]


@pytest.mark.parametrize(("key", "value"), ONE_WRONG)
def test_an_entry_with_one_wrong_value_is_left_to_the_careful_reader(key: str, value: object) -> None:
    item = {**BASE, key: value}
    problems = Problems("snapshot.json")
    assert _parse_partition(item, "partitions[0]", KNOWN, problems, _Details()) is None and problems.items
    assert plain_partition(item, KNOWN) is None
    assert plain_partition(BASE, KNOWN) is not None


@settings(max_examples=300)
@given(st.lists(entries(), max_size=6), st.booleans())
def test_the_bulk_reader_reads_a_list_exactly_when_every_entry_is_read_quickly(
    items: list[object], known: bool
) -> None:
    brokers = KNOWN if known else None
    quick = [plain_partition(item, brokers) for item in items]
    tps = [q[0] for q in quick if q is not None]
    every = bool(items) and None not in quick and len(set(tps)) == len(tps)
    bulk = plain_partitions(items, brokers)
    if not every:
        assert bulk is None
        return
    assert bulk is not None
    assert bulk == [q[1] for q in quick if q is not None]
    for state in bulk:
        assert (state.replica_bytes, state.replica_dirs, state.untiered_bytes) == ((), (), None)


@pytest.mark.parametrize(("key", "value"), ONE_WRONG)
def test_one_wrong_value_anywhere_in_the_list_leaves_it_to_the_entry_reader(key: str, value: object) -> None:
    items = [{**BASE, "partition": n} for n in range(5)]
    assert plain_partitions(items, KNOWN) is not None
    items[3] = {**items[3], key: value}
    assert plain_partitions(items, KNOWN) is None


def test_a_repeated_partition_leaves_the_list_to_the_entry_reader() -> None:
    assert plain_partitions([BASE, {**BASE, "size_bytes": 1}], KNOWN) is None
