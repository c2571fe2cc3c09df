"""Kafka reassignment JSON: what Kafka's tool writes loads, what ferry writes Kafka can read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.builders import broker, partition, snapshot

from ferry.errors import InputError
from ferry.formats import (
    ReassignmentEntry,
    dump_reassignment,
    dump_rollback,
    load_reassignment,
    parse_reassignment,
)
from ferry.formats.atomic import dumps_rows
from ferry.formats.reassignment_json import reassignment_text, rollback_text
from ferry.model import Move, Plan, TopicPartition

DATA = Path(__file__).resolve().parents[2] / "data"
SRC = "plan.json"


def tp(topic: str, p: int) -> TopicPartition:
    return TopicPartition(topic, p)


def sample_plan() -> Plan:
    return Plan.of(
        [
            Move(tp("b", 0), original=(1, 2), target=(3, 2), size_bytes=10),
            Move(tp("a", 1), original=(2, 1), target=(1, 3), log_dirs=("/d1", "any")),
        ]
    )


def one_problem(data: object) -> str:
    with pytest.raises(InputError) as info:
        parse_reassignment(data, SRC)
    assert info.value.exit_code == 3
    assert len(info.value.problems) == 1, info.value.problems
    return info.value.problems[0]


def test_dump_is_kafkas_format_sorted_with_log_dirs_only_where_known() -> None:
    assert dump_reassignment(sample_plan()) == {
        "version": 1,
        "partitions": [
            {"topic": "a", "partition": 1, "replicas": [1, 3], "log_dirs": ["/d1", "any"]},
            {"topic": "b", "partition": 0, "replicas": [3, 2]},
        ],
    }


def test_rollback_holds_the_original_replicas() -> None:
    assert dump_rollback(sample_plan()) == {
        "version": 1,
        "partitions": [
            {"topic": "a", "partition": 1, "replicas": [2, 1]},
            {"topic": "b", "partition": 0, "replicas": [1, 2]},
        ],
    }


def test_dump_then_load_round_trips() -> None:
    plan = sample_plan()
    loaded = parse_reassignment(json.dumps(dump_reassignment(plan)), SRC)
    assert loaded.targets == plan.targets
    assert loaded.entries[0] == ReassignmentEntry(tp("a", 1), (1, 3), ("/d1", "any"))
    assert parse_reassignment(dump_rollback(plan), SRC).targets == plan.originals


def test_loads_the_file_kafkas_tool_writes() -> None:
    loaded = load_reassignment(DATA / "reassignment_kafka.json")
    assert loaded.entries == (
        ReassignmentEntry(tp("orders", 0), (3, 4), ("any", "any")),
        ReassignmentEntry(tp("orders", 1), (4, 3), ("/var/kafka/a", "any")),
        ReassignmentEntry(tp("payments", 0), (1, 4)),
    )


def test_an_empty_reassignment_is_valid() -> None:
    # What `ferry plan` writes when nothing needs to move.
    assert parse_reassignment(dump_reassignment(Plan.of([])), SRC).entries == ()


def test_to_moves_takes_originals_and_sizes_from_the_snapshot() -> None:
    snap = snapshot([1, 2, 3, 4], [partition("orders", 0, [1, 2], size=7), partition("orders", 1, [2, 1])])
    loaded = parse_reassignment(
        {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [3, 2]}]}, SRC
    )
    assert loaded.to_moves(snap, SRC) == (Move(tp("orders", 0), (1, 2), (3, 2), size_bytes=7),)


def test_to_moves_reports_partitions_and_brokers_missing_from_the_snapshot() -> None:
    snap = snapshot([broker(1), broker(2)], [partition("orders", 0, [1, 2])])
    loaded = parse_reassignment(
        {
            "version": 1,
            "partitions": [
                {"topic": "orders", "partition": 0, "replicas": [1, 9]},
                {"topic": "orders", "partition": 5, "replicas": [1, 2]},
            ],
        },
        SRC,
    )
    with pytest.raises(InputError) as info:
        loaded.to_moves(snap, SRC)
    assert info.value.problems == (
        "plan.json: partitions[0].replicas: broker 9 is not in the snapshot",
        "plan.json: partitions[1]: partition orders-5 is not in the snapshot",
    )


def entry(**fields: Any) -> dict[str, Any]:
    return {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], **fields}]}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("{", "line 1, column 2: not valid JSON"),
        ("[]", "expected a JSON object at the top level, got array"),
        ({"version": 2, "partitions": []}, "version: unsupported version 2 (this ferry reads version 1)"),
        ({"partitions": []}, "missing field 'version' (expected 1)"),
        ({"version": 1}, "missing field 'partitions'"),
        ({"version": 1, "partitions": {}}, "partitions: expected an array, got object"),
        (entry(replicas=[]), "partitions[0].replicas: must list at least one replica"),
        (entry(replicas=[2, 2]), "partitions[0].replicas: broker 2 listed more than once"),
        (entry(replicas=[True]), "partitions[0].replicas[0]: expected an integer, got boolean true"),
        (entry(partition=-1), "partitions[0].partition: expected a non-negative integer, got -1"),
        (entry(topic=None), "partitions[0].topic: expected a string, got null"),
        (entry(log_dirs=["any"]), "partitions[0].log_dirs: 1 log dirs for 2 replicas (give one per replica)"),
        (entry(log_dirs=["any", 3]), "partitions[0].log_dirs[1]: expected a string, got integer 3"),
        (entry(log_dirs="any"), 'partitions[0].log_dirs: expected an array, got string "any"'),
        (entry(leader=1), "partitions[0].leader: unknown field (expected one of 'topic', 'partition',"),
    ],
)
def test_problems(data: object, expected: str) -> None:
    assert one_problem(data).startswith(f"{SRC}: {expected}")


def test_every_problem_is_reported_with_its_path() -> None:
    data = {
        "version": 1,
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [1, 1]},
            {"topic": "t", "partition": 0, "replicas": [1]},
            {"topic": "u", "partition": "0", "replicas": [1], "log_dirs": []},
        ],
    }
    with pytest.raises(InputError) as info:
        parse_reassignment(data, SRC)
    assert info.value.problems == (
        "plan.json: partitions[0].replicas: broker 1 listed more than once",
        "plan.json: partitions[1]: duplicate topic-partition t-0 (also partitions[0])",
        'plan.json: partitions[2].partition: expected an integer, got string "0"',
        "plan.json: partitions[2].log_dirs: 0 log dirs for 1 replicas (give one per replica)",
    )
    assert str(info.value) == f"{info.value.problems[0]} (and 3 more)"


_moves = st.lists(
    st.builds(
        lambda topic, partition, original, target, dirs: Move(
            tp(topic, partition),
            original=tuple(original),
            target=tuple(target),
            log_dirs=None
            if dirs is None
            else tuple(dirs[: len(target)] + ["any"] * (len(target) - len(dirs))),
        ),
        st.text(min_size=1, max_size=8),
        st.integers(0, 10**6),
        st.lists(st.integers(-1, 10**9), max_size=4),
        st.lists(st.integers(0, 10**9), min_size=1, max_size=4, unique=True),
        st.none() | st.lists(st.text(max_size=6), max_size=4),
    ),
    max_size=12,
    unique_by=lambda m: m.tp,
)


@settings(max_examples=300, deadline=None)
@given(_moves)
def test_plan_files_write_what_the_json_encoder_writes_byte_for_byte(moves: list[Move]) -> None:
    # Topics with quotes, backslashes, control characters and non-ASCII, log dirs of any text.
    plan = Plan.of(moves)
    assert reassignment_text(plan) == dumps_rows(dump_reassignment(plan))
    assert rollback_text(plan) == dumps_rows(dump_rollback(plan))
    assert json.loads(reassignment_text(plan)) == dump_reassignment(plan)
