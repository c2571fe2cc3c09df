"""Snapshot JSON v1: round trip, and one precise problem per mistake, all reported at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.builders import broker, partition, snapshot

from ferry.errors import InputError
from ferry.formats import (
    SnapshotDetails,
    dump_snapshot,
    load_snapshot,
    parse_snapshot,
    parse_snapshot_details,
    render_snapshot,
)
from ferry.model import Broker, TopicPartition

DATA = Path(__file__).resolve().parents[2] / "data"
SRC = "snapshot.json"


def doc(brokers: Any = None, partitions: Any = None, **extra: Any) -> dict[str, Any]:
    """A valid document (brokers 1-3, racks a/b/c) with the given parts swapped in."""
    return {
        "version": 1,
        "brokers": [{"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}, {"id": 3, "rack": "c"}]
        if brokers is None
        else brokers,
        "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]}]
        if partitions is None
        else partitions,
        **extra,
    }


def problems_of(data: object) -> tuple[str, ...]:
    with pytest.raises(InputError) as info:
        parse_snapshot(data, SRC)
    assert info.value.exit_code == 3
    return info.value.problems


def one_problem(data: object) -> str:
    problems = problems_of(data)
    assert len(problems) == 1, problems
    return problems[0]


def test_load_reads_every_field() -> None:
    snap = load_snapshot(DATA / "snapshot_small.json")
    assert snap.broker_ids == (1, 2, 3, 4)
    assert snap.racks == {1: "r1", 2: "r2", 3: "r1", 4: "r2"}
    assert snap.topics == ("orders", "payments")
    assert snap.partitions[2] == partition("orders", 2, [1, 2], size=3000, leader=2, isr=[2])
    # optional fields left out, and -1 (no leader) with an empty ISR, are both accepted
    assert snap.partitions[4] == partition("payments", 0, [1, 2])
    assert snap.partitions[5] == partition("payments", 1, [2, 1], leader=-1, isr=[])


def test_dump_then_parse_round_trips() -> None:
    snap = snapshot(
        [broker(2, "b"), broker(1, "a")],
        [partition("t", 1, [2, 1], size=5, leader=2, isr=[2, 1]), partition("t", 0, [1])],
    )
    dumped = dump_snapshot(snap)
    assert parse_snapshot(json.dumps(dumped), SRC) == snap
    assert dumped["partitions"][0] == {"topic": "t", "partition": 0, "replicas": [1]}


def test_brokers_without_racks_round_trip() -> None:
    snap = snapshot([1, 2], [partition("t", 0, [1, 2])])
    assert dump_snapshot(snap)["brokers"] == [{"id": 1}, {"id": 2}]
    assert parse_snapshot(dump_snapshot(snap), SRC) == snap


def test_null_optional_fields_count_as_absent() -> None:
    part = {"topic": "t", "partition": 0, "replicas": [1], "leader": None, "isr": None}
    snap = parse_snapshot(doc(brokers=[{"id": 1, "rack": None}], partitions=[part]), SRC)
    assert snap.partitions == (partition("t", 0, [1]),)


def test_not_json_names_line_and_column() -> None:
    message = one_problem('{"version": 1,\n  "brokers": [}')
    assert message.startswith("snapshot.json: line 2, column 15: not valid JSON")


def test_nan_is_not_json() -> None:
    assert "NaN" in one_problem('{"version": 1, "brokers": [], "partitions": [], "x": NaN}')


def test_not_utf8() -> None:
    assert "not UTF-8" in one_problem(b'{"version": 1, "brokers": ["\xff"]}')


def test_top_level_must_be_an_object() -> None:
    assert one_problem("[1, 2]") == "snapshot.json: expected a JSON object at the top level, got array"


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (2, "snapshot.json: version: unsupported version 2 (this ferry reads version 1)"),
        ("1", 'snapshot.json: version: expected an integer, got string "1"'),
        (True, "snapshot.json: version: expected an integer, got boolean true"),
    ],
)
def test_version_must_be_1(version: object, expected: str) -> None:
    # Only the version is reported: the rest of a file of another version would be noise.
    assert one_problem({"version": version, "brokers": "?"}) == expected


def test_missing_version() -> None:
    assert one_problem({"brokers": []}) == "snapshot.json: missing field 'version' (expected 1)"


def test_missing_top_level_fields() -> None:
    assert problems_of({"version": 1}) == (
        "snapshot.json: missing field 'brokers'",
        "snapshot.json: missing field 'partitions'",
    )


def test_unknown_field_is_refused() -> None:
    part = {"topic": "t", "partition": 0, "replicas": [1], "size": 10}
    assert one_problem(doc(partitions=[part])).startswith(
        "snapshot.json: partitions[0].size: unknown field (expected one of 'topic'"
    )


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        ({"partition": 0, "replicas": [1]}, "partitions[0]: missing field 'topic'"),
        ({"topic": "t", "replicas": [1]}, "partitions[0]: missing field 'partition'"),
        ({"topic": "t", "partition": 0}, "partitions[0]: missing field 'replicas'"),
        (
            {"topic": 5, "partition": 0, "replicas": [1]},
            "partitions[0].topic: expected a string, got integer 5",
        ),
        ({"topic": "", "partition": 0, "replicas": [1]}, "partitions[0].topic: must not be empty"),
        (
            {"topic": "t", "partition": True, "replicas": [1]},
            "partitions[0].partition: expected an integer, got boolean true",
        ),
        (
            {"topic": "t", "partition": 1.0, "replicas": [1]},
            "partitions[0].partition: expected an integer, got number 1.0",
        ),
        (
            {"topic": "t", "partition": -1, "replicas": [1]},
            "partitions[0].partition: expected a non-negative integer, got -1",
        ),
        (
            {"topic": "t", "partition": 2**31, "replicas": [1]},
            "partitions[0].partition: 2147483648 is larger than the maximum 2147483647",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": 1},
            "partitions[0].replicas: expected an array, got integer 1",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": []},
            "partitions[0].replicas: must list at least one replica",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": [1, 2, 1]},
            "partitions[0].replicas: broker 1 listed more than once",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": [2, 1, 2, 1]},
            "partitions[0].replicas: brokers 1, 2 listed more than once",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": [1, "2"]},
            'partitions[0].replicas[1]: expected an integer, got string "2"',
        ),
        (
            {"topic": "t", "partition": 0, "replicas": [1, -2]},
            "partitions[0].replicas[1]: expected a non-negative integer, got -2",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": [1, 9]},
            "partitions[0].replicas: broker 9 is not in brokers",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": [1, 2], "leader": 3},
            "partitions[0].leader: leader 3 is not one of replicas [1, 2]",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": [1], "leader": -2},
            "partitions[0].leader: expected an integer >= -1, got -2",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": [1, 2], "isr": [1, 3]},
            "partitions[0].isr: broker 3 is in isr but not in replicas",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": [1, 2], "isr": [1, 1]},
            "partitions[0].isr: broker 1 listed more than once",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": [1], "size_bytes": -1},
            "partitions[0].size_bytes: expected a non-negative integer, got -1",
        ),
        (
            {"topic": "t", "partition": 0, "replicas": [1], "size_bytes": "10"},
            'partitions[0].size_bytes: expected an integer, got string "10"',
        ),
        ("t-0", 'partitions[0]: expected an object, got string "t-0"'),
    ],
)
def test_partition_problems(part: object, expected: str) -> None:
    assert one_problem(doc(partitions=[part])) == f"{SRC}: {expected}"


def test_size_bytes_may_exceed_int32() -> None:
    part = {"topic": "t", "partition": 0, "replicas": [1], "size_bytes": 2**40}
    assert parse_snapshot(doc(partitions=[part]), SRC).partitions[0].size == 2**40


@pytest.mark.parametrize(
    ("brokers", "expected"),
    [
        ({"id": 1}, "brokers: expected an array, got object"),
        (
            [{"id": 1, "rack": "a"}, {"id": 1, "rack": "b"}],
            "brokers[1].id: duplicate broker id 1 (also brokers[0])",
        ),
        ([{"id": -1}], "brokers[0].id: expected a non-negative integer, got -1"),
        ([{"id": False}], "brokers[0].id: expected an integer, got boolean false"),
        ([{"rack": "a"}], "brokers[0]: missing field 'id'"),
        ([{"id": 1, "rack": 3}], "brokers[0].rack: expected a string, got integer 3"),
        ([{"id": 1, "rack": ""}], "brokers[0].rack: must not be empty"),
        (
            [{"id": 1, "rack": "a"}, {"id": 2}],
            "brokers: broker 2 has no rack while the others do; give every broker a rack or none",
        ),
        (
            [{"id": 1, "rack": "a"}, {"id": 2}, {"id": 3}],
            "brokers: brokers 2, 3 have no rack while the others do; give every broker a rack or none",
        ),
    ],
)
def test_broker_problems(brokers: object, expected: str) -> None:
    partitions = [{"topic": "t", "partition": 0, "replicas": [1]}]
    assert one_problem(doc(brokers=brokers, partitions=partitions)) == f"{SRC}: {expected}"


def test_duplicate_topic_partition_is_found_even_if_the_first_is_bad() -> None:
    parts = [
        {"topic": "t", "partition": 0, "replicas": [9]},
        {"topic": "t", "partition": 0, "replicas": [1]},
    ]
    assert problems_of(doc(partitions=parts)) == (
        "snapshot.json: partitions[0].replicas: broker 9 is not in brokers",
        "snapshot.json: partitions[1]: duplicate topic-partition t-0 (also partitions[0])",
    )


def test_every_problem_is_reported_and_the_message_counts_the_rest() -> None:
    with pytest.raises(InputError) as info:
        load_snapshot(DATA / "snapshot_bad.json")
    problems = info.value.problems
    assert len(problems) == 13
    assert all(p.startswith(f"{DATA / 'snapshot_bad.json'}: ") for p in problems)
    assert info.value.message == f"{problems[0]} (and 12 more)"
    assert any(p.endswith("partitions[0].replicas: broker 9 is not in brokers") for p in problems)


def test_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(InputError, match=r"nope\.json: cannot read: No such file or directory"):
        load_snapshot(missing)


def test_dead_broker_round_trips_and_may_lack_a_rack() -> None:
    snap = snapshot(
        [broker(1, "a"), broker(2, "b"), Broker(3, None, alive=False)],
        [partition("t", 0, [1, 3], leader=1, isr=[1])],
    )
    dumped = dump_snapshot(snap)
    assert dumped["brokers"][2] == {"id": 3, "alive": False}
    assert parse_snapshot(json.dumps(dumped), SRC) == snap
    assert snap.dead_broker_ids == (3,)


def test_live_details_round_trip() -> None:
    snap = snapshot([1, 2, 3], [partition("t", 0, [1, 2, 3], size=7), partition("t", 1, [2])])
    t0 = TopicPartition("t", 0)
    details = SnapshotDetails(
        replica_sizes={t0: {1: 7, 2: 5}},
        adding_replicas={t0: (3,)},
        removing_replicas={t0: (1,)},
        min_insync={"t": 2},
    )
    text = render_snapshot(dump_snapshot(snap, details))
    assert text.count("\n") == 13  # one line per broker and per partition, 8 for the frame
    assert parse_snapshot_details(text, SRC) == (snap, details)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"replica_sizes": {"x": 1}}, "partitions[0].replica_sizes.x: expected a broker id as the key"),
        (
            {"replica_sizes": {"3": 1}},
            "partitions[0].replica_sizes.3: broker 3 is not one of replicas [1, 2]",
        ),
        (
            {"replica_sizes": {"1": -5}},
            "partitions[0].replica_sizes.1: expected a non-negative integer, got -5",
        ),
        (
            {"adding_replicas": [3]},
            "partitions[0].adding_replicas: broker 3 is in adding_replicas but not in replicas",
        ),
        ({"removing_replicas": 1}, "partitions[0].removing_replicas: expected an array, got integer 1"),
    ],
)
def test_live_detail_problems(extra: dict[str, Any], expected: str) -> None:
    part = {"topic": "t", "partition": 0, "replicas": [1, 2], **extra}
    assert one_problem(doc(partitions=[part])) == f"{SRC}: {expected}"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"brokers": [{"id": 1, "alive": "no"}]},
            'brokers[0].alive: expected true or false, got string "no"',
        ),
        ({"min_insync_replicas": {"t": 0}}, "min_insync_replicas.t: expected an integer >= 1, got 0"),
        ({"min_insync_replicas": [2]}, "min_insync_replicas: expected an object, got array"),
    ],
)
def test_live_root_problems(data: dict[str, Any], expected: str) -> None:
    partitions = [{"topic": "t", "partition": 0, "replicas": [1]}]
    base = doc(partitions=partitions, brokers=data.pop("brokers", None), **data)
    assert one_problem(base) == f"{SRC}: {expected}"


@pytest.mark.parametrize(
    ("dirs", "expected"),
    [
        ([{"path": "/a"}, {"path": "/a"}], "brokers[0].log_dirs: a log dir is listed twice"),
        ([{"total_bytes": 5}], "brokers[0].log_dirs[0]: missing field 'path'"),
        ([{"path": "/a", "offline": "no"}], "brokers[0].log_dirs[0].offline: expected"),
        ([{"path": "/a", "usable_bytes": -1}], "brokers[0].log_dirs[0].usable_bytes: expected"),
        ({"path": "/a"}, "brokers[0].log_dirs: expected an array"),
    ],
)
def test_a_bad_log_dir_is_named_by_its_path(dirs: object, expected: str) -> None:
    brokers = [{"id": 1, "rack": "a", "log_dirs": dirs}, {"id": 2, "rack": "b"}]
    assert one_problem(doc(brokers=brokers)).startswith(f"{SRC}: {expected}")


def test_replica_dirs_name_only_replicas() -> None:
    partitions = [{"topic": "t", "partition": 0, "replicas": [1, 2], "replica_dirs": {"3": "/a", "1": 5}}]
    assert problems_of(doc(partitions=partitions)) == (
        f"{SRC}: partitions[0].replica_dirs.3: broker 3 is not one of replicas [1, 2]",
        f"{SRC}: partitions[0].replica_dirs.1: expected a string, got integer 5",
    )
