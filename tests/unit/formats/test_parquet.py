"""Parquet snapshot directories: round trips, and one clear error per problem with file, row, column."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.builders import broker, partition, snapshot
from support.clusters import generated

from ferry.errors import InputError
from ferry.formats.parquet import (
    BROKERS_FILE,
    PARTITIONS_FILE,
    is_parquet_snapshot,
    load_parquet_snapshot,
    snapshot_tables,
    write_parquet_snapshot,
)
from ferry.formats.sources import fleet_members, load_any, write_any
from ferry.model import Broker, ClusterSnapshot, LogDir


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    snap = snapshot(
        [broker(1, "a"), broker(2, "b"), broker(3, "a")],
        [
            partition("t", 0, [1, 2], size=10, leader=2, isr=[2]),
            partition("t", 1, [2, 3]),
            partition("u", 0, [3], leader=-1, isr=[]),
        ],
    )
    write_parquet_snapshot(snap, tmp_path / "s")
    assert is_parquet_snapshot(tmp_path / "s")
    assert load_parquet_snapshot(tmp_path / "s") == snap


def test_dead_and_cordoned_brokers_survive_the_round_trip(tmp_path: Path) -> None:
    brokers = [
        Broker(1, "a", capacity_bytes=10**12),
        Broker(2, "b", alive=False),
        Broker(3, "a", cordoned=True, cordoned_log_dirs=("/d1", "/d2")),
        Broker(4, "b", cordoned_log_dirs=("/d2",)),
    ]
    snap = ClusterSnapshot.of(brokers, [partition("t", 0, [1, 2])])
    write_parquet_snapshot(snap, tmp_path / "s")
    loaded = load_parquet_snapshot(tmp_path / "s")
    assert loaded.brokers == tuple(brokers)


def test_a_brokers_file_of_an_older_ferry_loads_its_brokers_alive_and_not_cordoned(tmp_path: Path) -> None:
    write_parquet_snapshot(
        snapshot([broker(1, "a"), broker(2, "b")], [partition("t", 0, [1, 2])]), tmp_path / "s"
    )
    old = pa.table({"id": pa.array([1, 2], pa.int32()), "rack": ["a", "b"]})
    pq.write_table(old, tmp_path / "s" / BROKERS_FILE)
    loaded = load_parquet_snapshot(tmp_path / "s")
    assert all(b.alive and not b.cordoned and not b.cordoned_log_dirs for b in loaded.brokers)


def test_json_to_parquet_to_json_is_the_same_snapshot(tmp_path: Path) -> None:
    snap = generated(brokers=7, racks=3, topics=3, partitions=9, rf=3, seed=5)
    assert write_any(snap, tmp_path / "a.json") == "json"
    assert write_any(load_any(tmp_path / "a.json"), tmp_path / "p") == "parquet"
    assert write_any(load_any(tmp_path / "p"), tmp_path / "b.json") == "json"
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert load_any(tmp_path / "p") == snap


def _write_partitions(folder: Path, rows: dict[str, list[object]], schema: pa.Schema | None = None) -> Path:
    brokers, _ = snapshot_tables(snapshot([broker(1, "a"), broker(2, "b")], []))
    folder.mkdir()
    pq.write_table(brokers, folder / BROKERS_FILE)
    pq.write_table(pa.table(rows, schema=schema), folder / PARTITIONS_FILE)
    return folder


def _rows(**overrides: list[object]) -> dict[str, list[object]]:
    rows: dict[str, list[object]] = {
        "topic": ["t", "t"],
        "partition": [0, 1],
        "replicas": [[1, 2], [2, 1]],
    }
    return {**rows, **overrides}


def _schema(partition_type: pa.DataType | None = None) -> pa.Schema:
    partition_type = partition_type or pa.int32()
    return pa.schema(
        [("topic", pa.string()), ("partition", partition_type), ("replicas", pa.list_(pa.int32()))]
    )


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (_rows(replicas=[[1, 2], [2, 9]]), "row 1: replicas: broker 9 is not in brokers"),
        (_rows(replicas=[[1, 1], [2, 1]]), "row 0: replicas: duplicate broker in [1, 1]"),
        (_rows(replicas=[[], [2, 1]]), "row 0: replicas: expected a non-empty list of broker ids"),
        (_rows(partition=[0, -1]), "row 1: partition: expected a partition number >= 0, got -1"),
        (_rows(partition=[0, 0]), "duplicate topic-partition in snapshot"),
    ],
)
def test_bad_rows_are_named_by_file_row_and_column(
    tmp_path: Path, rows: dict[str, list[object]], message: str
) -> None:
    folder = _write_partitions(tmp_path / "s", rows, _schema())
    with pytest.raises(InputError) as caught:
        load_parquet_snapshot(folder)
    assert caught.value.message.startswith(f"{folder / PARTITIONS_FILE}: ")
    assert message in caught.value.message


def test_a_column_of_another_type_is_refused_before_any_row(tmp_path: Path) -> None:
    folder = _write_partitions(tmp_path / "s", _rows(), _schema(pa.int64()))
    with pytest.raises(InputError, match="column partition is int64, expected int32"):
        load_parquet_snapshot(folder)


def test_a_missing_required_column_is_named(tmp_path: Path) -> None:
    rows = _rows()
    del rows["replicas"]
    folder = _write_partitions(
        tmp_path / "s", rows, pa.schema([("topic", pa.string()), ("partition", pa.int32())])
    )
    with pytest.raises(InputError, match="missing column replicas"):
        load_parquet_snapshot(folder)


def test_optional_columns_may_be_absent(tmp_path: Path) -> None:
    folder = _write_partitions(tmp_path / "s", _rows(), _schema())
    loaded = load_parquet_snapshot(folder)
    assert [p.leader for p in loaded.partitions] == [None, None]


def test_a_directory_that_is_no_snapshot_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a Parquet snapshot"):
        load_any(tmp_path)


def test_fleet_members_are_json_files_and_parquet_dirs_by_name(tmp_path: Path) -> None:
    snap = generated(brokers=4, racks=2, topics=1, partitions=2, rf=2, seed=1)
    write_any(snap, tmp_path / "east.json")
    write_any(snap, tmp_path / "west")
    (tmp_path / "notes.txt").write_text("not a snapshot")
    (tmp_path / "empty").mkdir()
    assert fleet_members(tmp_path) == [("east", tmp_path / "east.json"), ("west", tmp_path / "west")]


def test_fleet_names_must_be_unique(tmp_path: Path) -> None:
    snap = generated(brokers=4, racks=2, topics=1, partitions=2, rf=2, seed=1)
    write_any(snap, tmp_path / "east.json")
    write_any(snap, tmp_path / "east")
    with pytest.raises(InputError, match="two snapshots are named east"):
        fleet_members(tmp_path)


def test_an_empty_fleet_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no snapshot JSON file or Parquet snapshot directory"):
        fleet_members(tmp_path)


def test_measured_replica_sizes_survive_the_round_trip_unmeasured_ones_stay_unknown(tmp_path: Path) -> None:
    measured = replace(partition("t", 0, [1, 2, 3], size=90), replica_bytes=((1, 90), (3, 70)))
    snap = snapshot([1, 2, 3], [measured, partition("t", 1, [2, 3], size=5)])
    write_parquet_snapshot(snap, tmp_path / "s")
    table = pq.read_table(tmp_path / "s" / PARTITIONS_FILE)
    assert table.column("replica_sizes").to_pylist() == [[90, None, 70], None]
    back = load_parquet_snapshot(tmp_path / "s")
    assert [p.replica_bytes for p in back.partitions] == [((1, 90), (3, 70)), ()]


def test_a_file_without_replica_sizes_still_loads(tmp_path: Path) -> None:
    snap = snapshot([1, 2], [partition("t", 0, [1, 2], size=10)])
    write_parquet_snapshot(snap, tmp_path / "s")
    path = tmp_path / "s" / PARTITIONS_FILE
    pq.write_table(pq.read_table(path).drop_columns(["replica_sizes"]), path)
    assert load_parquet_snapshot(tmp_path / "s") == snap


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        ([5], "row 0: replica_sizes: 1 sizes for 2 replicas [1, 2]"),
        ([5, -1], "row 0: replica_sizes: expected >= 0, got -1"),
    ],
)
def test_replica_sizes_that_do_not_fit_the_replicas_name_the_row(
    tmp_path: Path, sizes: list[int], expected: str
) -> None:
    snap = snapshot([1, 2], [partition("t", 0, [1, 2], size=10)])
    write_parquet_snapshot(snap, tmp_path / "s")
    path = tmp_path / "s" / PARTITIONS_FILE
    table = pq.read_table(path)
    column = pa.array([sizes], pa.list_(pa.int64()))
    pq.write_table(
        table.set_column(table.schema.get_field_index("replica_sizes"), "replica_sizes", column), path
    )
    with pytest.raises(InputError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        load_parquet_snapshot(tmp_path / "s")


def test_log_dirs_replica_dirs_and_tiered_topics_survive_the_round_trip_in_both_formats(
    tmp_path: Path,
) -> None:
    dirs = (LogDir("/a", 100, 40), LogDir("/b", None, None, offline=True), LogDir("/c", 9, 9, cordoned=True))
    placed = replace(partition("t", 0, [1, 2], size=10), replica_dirs=((1, "/b"), (2, "/a")))
    other = partition("u", 0, [2, 1], size=10)
    snap = ClusterSnapshot.of([Broker(1, "a", log_dirs=dirs), broker(2, "b")], [placed, other], ["t"])
    write_parquet_snapshot(snap, tmp_path / "s")
    table = pq.read_table(tmp_path / "s" / PARTITIONS_FILE)
    assert table.column("replica_dirs").to_pylist() == [["/b", "/a"], None]
    assert table.column("tiered").to_pylist() == [True, None]
    for loaded in (load_parquet_snapshot(tmp_path / "s"), _json_round_trip(snap, tmp_path)):
        assert loaded.brokers[0].log_dirs == dirs
        assert loaded.brokers[0].log_dir("/c") == dirs[2]
        assert loaded.partition(placed.tp).replica_dirs == ((1, "/b"), (2, "/a"))
        assert loaded.tiered_topics == frozenset({"t"})


def _json_round_trip(snap: ClusterSnapshot, tmp_path: Path) -> ClusterSnapshot:
    write_any(snap, tmp_path / "s.json")
    return load_any(tmp_path / "s.json")


def test_replica_dirs_that_do_not_fit_the_replicas_name_the_row(tmp_path: Path) -> None:
    snap = snapshot([1, 2], [partition("t", 0, [1, 2], size=10)])
    write_parquet_snapshot(snap, tmp_path / "s")
    path = tmp_path / "s" / PARTITIONS_FILE
    table = pq.read_table(path)
    column = pa.array([["/a"]], pa.list_(pa.string()))
    pq.write_table(
        table.set_column(table.schema.get_field_index("replica_dirs"), "replica_dirs", column), path
    )
    with pytest.raises(InputError, match="row 0: replica_dirs: 1 dirs for 2 replicas"):
        load_parquet_snapshot(tmp_path / "s")
