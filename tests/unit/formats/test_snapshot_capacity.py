"""A broker's disk capacity in a snapshot: JSON and Parquet carry it, and a bad one is refused with
its place named."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.builders import partition, snapshot

from ferry.errors import InputError
from ferry.formats import dumps_json, parse_snapshot
from ferry.formats.parquet import load_parquet_snapshot, write_parquet_snapshot
from ferry.formats.snapshot_json import dump_snapshot
from ferry.model import Broker

CLUSTER = snapshot(
    [Broker(1, "a", capacity_bytes=2 * 10**12), Broker(2, "b", capacity_bytes=4 * 10**12), Broker(3, "a")],
    [partition("t", 0, [1, 2], size=10)],
)


def test_json_keeps_each_brokers_capacity_and_leaves_an_unknown_one_out() -> None:
    doc = dump_snapshot(CLUSTER)
    assert doc["brokers"] == [
        {"id": 1, "rack": "a", "capacity_bytes": 2 * 10**12},
        {"id": 2, "rack": "b", "capacity_bytes": 4 * 10**12},
        {"id": 3, "rack": "a"},
    ]
    assert parse_snapshot(dumps_json(doc), "s.json") == CLUSTER


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "s.json: brokers[0].capacity_bytes: expected an integer >= 1, got 0"),
        ("2TB", 's.json: brokers[0].capacity_bytes: expected an integer, got string "2TB"'),
        (1.5, "s.json: brokers[0].capacity_bytes: expected an integer, got number 1.5"),
    ],
)
def test_a_bad_capacity_is_refused_naming_its_place(value: object, expected: str) -> None:
    doc = dump_snapshot(CLUSTER)
    doc["brokers"][0]["capacity_bytes"] = value
    with pytest.raises(InputError) as refused:
        parse_snapshot(json.dumps(doc), "s.json")
    assert str(refused.value).startswith(expected)


def test_parquet_keeps_each_brokers_capacity(tmp_path: Path) -> None:
    write_parquet_snapshot(CLUSTER, tmp_path / "s")
    assert load_parquet_snapshot(tmp_path / "s") == CLUSTER


def test_parquet_without_the_capacity_column_still_loads(tmp_path: Path) -> None:
    write_parquet_snapshot(CLUSTER, tmp_path / "s")
    brokers = pq.read_table(tmp_path / "s" / "brokers.parquet").drop_columns(["capacity_bytes"])
    pq.write_table(brokers, tmp_path / "s" / "brokers.parquet")
    assert all(b.capacity_bytes is None for b in load_parquet_snapshot(tmp_path / "s").brokers)


def test_parquet_refuses_a_capacity_of_zero(tmp_path: Path) -> None:
    write_parquet_snapshot(CLUSTER, tmp_path / "s")
    brokers = pq.read_table(tmp_path / "s" / "brokers.parquet")
    column = pa.array([0, None, None], type=pa.int64())
    pq.write_table(brokers.set_column(2, "capacity_bytes", column), tmp_path / "s" / "brokers.parquet")
    with pytest.raises(InputError, match="row 0: capacity_bytes: expected a size > 0, got 0"):
        load_parquet_snapshot(tmp_path / "s")


def test_json_keeps_a_brokers_cordoned_log_dirs_and_refuses_a_bad_one() -> None:
    cluster = snapshot(
        [
            Broker(1, cordoned=True, cordoned_log_dirs=("/a", "/b")),
            Broker(2, cordoned_log_dirs=("/b",)),
            Broker(3),
        ],
        [partition("t", 0, [1, 2], size=10)],
    )
    doc = dump_snapshot(cluster)
    assert doc["brokers"][:2] == [
        {"id": 1, "cordoned": True, "cordoned_log_dirs": ["/a", "/b"]},
        {"id": 2, "cordoned_log_dirs": ["/b"]},
    ]
    assert parse_snapshot(dumps_json(doc), "s.json") == cluster
    doc["brokers"][1]["cordoned_log_dirs"] = ["/b", ""]
    with pytest.raises(InputError, match=r"^s.json: brokers\[1\].cordoned_log_dirs\[1\]: must not be empty"):
        parse_snapshot(json.dumps(doc), "s.json")
