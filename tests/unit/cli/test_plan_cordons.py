"""`ferry plan` and cordoned brokers (Kafka 4.3): `--remove-brokers cordoned` drains them, and a plan
that would place new replicas on one is refused with exit 4, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.builders import partition, snapshot

from ferry.cli.main import main
from ferry.formats import dumps_json
from ferry.formats.snapshot_json import dump_snapshot
from ferry.model import Broker


def write(tmp_path: Path, cordoned: set[int]) -> Path:
    """Six brokers in two racks, brokers 5 and 6 new; the ``cordoned`` ones cordoned."""
    brokers = [Broker(b, f"r{b % 2}", cordoned=b in cordoned) for b in range(1, 7)]
    parts = [partition("t", p, [1 + p % 4, 1 + (p + 1) % 4], size=100) for p in range(8)]
    path = tmp_path / "s.json"
    path.write_text(dumps_json(dump_snapshot(snapshot(brokers, parts))))
    return path


def run(capsys: pytest.CaptureFixture[str], path: Path, out: Path, *args: str) -> tuple[int, str]:
    code = main(["plan", "--engine", "local", "--snapshot", str(path), "--output-dir", str(out), *args])
    return code, capsys.readouterr().err


def test_remove_brokers_cordoned_drains_every_cordoned_broker(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = run(capsys, write(tmp_path, {1, 6}), tmp_path / "out", "--remove-brokers", "cordoned")
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["target_brokers"] == [2, 3, 4, 5]
    moves = json.loads((tmp_path / "out" / "reassignment.json").read_text())["partitions"]
    assert all(1 not in m["replicas"] and 6 not in m["replicas"] for m in moves)


def test_remove_brokers_cordoned_with_none_cordoned_is_an_input_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = run(capsys, write(tmp_path, set()), tmp_path / "out", "--remove-brokers", "cordoned")
    assert code == 3
    assert "--remove-brokers cordoned: no broker of" in err.splitlines()[0]
    assert not (tmp_path / "out").exists()


def test_a_rebalance_places_nothing_on_a_cordoned_broker(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Broker 5 is new and cordoned: the rebalance fills broker 6 and leaves 5 empty.
    code, err = run(capsys, write(tmp_path, {5}), tmp_path / "out")
    assert code == 0, err
    moves = json.loads((tmp_path / "out" / "reassignment.json").read_text())["partitions"]
    assert moves and all(5 not in m["replicas"] for m in moves)
    assert any(6 in m["replicas"] for m in moves)


def test_a_plan_that_can_only_place_on_a_cordoned_broker_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Broker 2 (rack b) leaves, and rack b's only other broker, 3, is cordoned: RF 2 over two racks
    # needs a replica in rack b, so no other broker may take it.
    brokers = [Broker(1, "a"), Broker(2, "b"), Broker(3, "b", cordoned=True)]
    parts = [partition("t", p, [1, 2], size=100) for p in range(4)]
    path = tmp_path / "s.json"
    path.write_text(dumps_json(dump_snapshot(snapshot(brokers, parts))))
    code, err = run(capsys, path, tmp_path / "out", "--remove-brokers", "2")
    assert code == 4
    first = err.splitlines()[0]
    assert "the plan places replicas on cordoned brokers of" in first
    assert "which take no new partitions: broker 3 (4 new replicas)" in first
    assert not (tmp_path / "out").exists()
