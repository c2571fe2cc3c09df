"""`ferry plan --drain-above F --capacity FILE`: the drain is written like any plan with its figures in
report.json and the summary; what it cannot go with is a usage error, an impossible drain exit 4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.builders import partition, snapshot

from ferry.cli.main import main
from ferry.formats import dumps_json
from ferry.formats.snapshot_json import dump_snapshot
from ferry.model import Broker


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["plan", "--engine", "local", "--example", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def disks(tmp_path: Path) -> Path:
    """50 GB for each broker of the bundled example (brokers 1-8; 1-6 hold 19-30 GB)."""
    path = tmp_path / "disks.json"
    path.write_text(json.dumps({str(b): 50 * 10**9 for b in range(1, 9)}))
    return path


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--drain-above", "1.5"], "argument --drain-above: expected a fraction in (0, 1], got '1.5'"),
        (["--drain-above", "0.8", "--remove-brokers", "1"], "it cannot go with --remove-brokers"),
        (["--drain-above", "0.8", "--balance", "bytes"], "it cannot go with --balance bytes"),
        (["--drain-above", "0.8", "--replace", "1=7"], "it cannot go with --replace"),
    ],
)
def test_what_a_drain_cannot_go_with_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], expected: str
) -> None:
    code, _, err = run(capsys, *args, "--output-dir", str(tmp_path / "out"))
    assert code == 2
    assert expected in err.splitlines()[0]
    assert not (tmp_path / "out").exists()


def test_a_drain_without_capacities_is_an_input_error_naming_the_brokers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "--drain-above", "0.8", "--output-dir", str(tmp_path / "out"))
    assert code == 3
    assert "six_brokers_add_two.json gives no capacity for broker 1 (and 7 more)" in err
    assert not (tmp_path / "out").exists()


def test_a_drain_reads_the_capacities_a_snapshot_records(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    disks = {1: 100, 2: 100, 3: 200, 4: 200}
    racks = {1: "a", 2: "b", 3: "a", 4: "b"}
    cluster = snapshot(
        [Broker(b, racks[b], capacity_bytes=n) for b, n in disks.items()],
        [partition("t", 0, [1, 2], size=60), partition("t", 1, [3, 4], size=10)],
    )
    (tmp_path / "s.json").write_text(dumps_json(dump_snapshot(cluster)))
    args = [
        "--snapshot",
        str(tmp_path / "s.json"),
        "--drain-above",
        "0.5",
        "--output-dir",
        str(tmp_path / "out"),
    ]
    assert main(["plan", "--engine", "local", *args]) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["drain"]["senders"] == [1, 2]
    assert report["goal"]["capacity"] == {str(b): n for b, n in disks.items()}
    moves = json.loads((tmp_path / "out" / "reassignment.json").read_text())["partitions"]
    assert moves == [{"topic": "t", "partition": 0, "replicas": [3, 4]}]


def test_a_drain_writes_only_the_senders_moves_and_its_figures(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, disks: Path
) -> None:
    out_dir = tmp_path / "out"
    code, out, _ = run(capsys, "--capacity", str(disks), "--drain-above", "0.5", "--output-dir", str(out_dir))
    assert code == 0
    report = json.loads((out_dir / "report.json").read_text())
    drain = report["drain"]
    assert report["goal"]["drain_above"] == 0.5
    assert drain["senders"] and all(drain["before"][str(b)] > 0.5 for b in drain["senders"])
    assert max(drain["after"].values()) <= 0.5
    assert 1.0 <= drain["bytes_moved_over_bound"] <= 1.15
    rollback = json.loads((out_dir / "rollback.json").read_text())["partitions"]
    planned = {
        (p["topic"], p["partition"]): p["replicas"]
        for p in json.loads((out_dir / "reassignment.json").read_text())["partitions"]
    }
    for entry in rollback:
        gone = set(entry["replicas"]) - set(planned[entry["topic"], entry["partition"]])
        assert gone <= set(drain["senders"])
    assert "drain above           50% of capacity; senders: " in out


def test_a_drain_no_plan_can_meet_is_exit_4_with_nothing_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, disks: Path
) -> None:
    code, _, err = run(
        capsys, "--capacity", str(disks), "--drain-above", "0.3", "--output-dir", str(tmp_path / "out")
    )
    assert code == 4
    assert err.splitlines()[0].startswith(
        "ferry: error: --drain-above 0.3: no plan gets every broker under 30 %"
    )
    assert not (tmp_path / "out").exists()
