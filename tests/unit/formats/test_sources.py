"""Sizing a fleet's snapshots without reading them: the count the driver plans a fleet by."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.clusters import generated

from ferry.formats import sources
from ferry.formats.sources import partitions_about, write_any


@pytest.mark.parametrize("name", ["c.json", "c"])
def test_the_count_is_the_snapshots_partitions_in_either_format(tmp_path: Path, name: str) -> None:
    snapshot = generated(brokers=6, racks=2, topics=7, partitions=13, rf=2, seed=3, skew=1.0)
    write_any(snapshot, tmp_path / name)
    assert partitions_about(tmp_path / name) == len(snapshot.partitions) == 91


@pytest.mark.parametrize("cut", range(1, 8))
def test_a_key_cut_between_two_chunks_is_counted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: int
) -> None:
    # Chunks of 16 bytes; the second key starts so that ``cut`` of its bytes end the first chunk.
    monkeypatch.setattr(sources, "_CHUNK", 16)
    head = b'{"topic"'
    text = head + b" " * (16 - len(head) - cut) + b'"topic" "topic" x'
    path = tmp_path / "s.json"
    path.write_bytes(text)
    assert partitions_about(path) == 3


def test_an_unreadable_snapshot_counts_nothing(tmp_path: Path) -> None:
    assert partitions_about(tmp_path / "missing.json") == 0
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "partitions.parquet").write_bytes(b"not parquet")
    assert partitions_about(tmp_path / "broken") == 0
