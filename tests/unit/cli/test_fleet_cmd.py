"""`ferry plan --fleet` and `ferry snapshot convert` in-process with the local engine (no Spark)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from support.clusters import generated

from ferry.cli.main import main
from ferry.formats.sources import write_any
from ferry.model import Broker, ClusterSnapshot, LogDir, PartitionState, TopicPartition


def fleet(folder: Path) -> Path:
    folder.mkdir()
    write_any(
        generated(brokers=6, racks=2, topics=3, partitions=8, rf=2, seed=1, skew=1.0), folder / "a.json"
    )
    write_any(generated(brokers=9, racks=3, topics=2, partitions=12, rf=3, seed=2, skew=2.0), folder / "b")
    return folder


def test_fleet_writes_each_clusters_plan_as_the_single_plan_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snaps = fleet(tmp_path / "fleet")
    out = tmp_path / "out"
    assert main(["plan", "--engine", "local", "--fleet", str(snaps), "--output-dir", str(out)]) == 0
    assert "Plans for 2 clusters:" in capsys.readouterr().out
    for name, source in (("a", snaps / "a.json"), ("b", snaps / "b")):
        single = tmp_path / f"single-{name}"
        args = ["plan", "--engine", "local", "--snapshot", str(source), "--output-dir", str(single)]
        assert main(args) == 0
        for file in ("reassignment.json", "rollback.json", "report.json"):
            assert (out / name / file).read_bytes() == (single / file).read_bytes(), (name, file)
    summary = json.loads((out / "fleet-summary.json").read_text())
    rows = list(csv.DictReader((out / "fleet-summary.csv").read_text().splitlines()))
    assert [r["cluster"] for r in summary["clusters"]] == [r["cluster"] for r in rows] == ["a", "b"]
    for row in summary["clusters"]:
        report = json.loads((out / row["cluster"] / "report.json").read_text())
        assert row["replica_moves"] == report["replica_moves"] > 0
        assert row["lower_bound"] == report["lower_bound"]
        assert row["replica_spread_after"] == report["balance"]["after"]["replica_spread"] <= 1
        assert row["seconds"] >= 0


def test_a_bad_snapshot_fails_the_fleet_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snaps = fleet(tmp_path / "fleet")
    (snaps / "c.json").write_text('{"version": 1, "brokers": [], "partitions": [{"topic": "t"}]}')
    out = tmp_path / "out"
    assert main(["plan", "--engine", "local", "--fleet", str(snaps), "--output-dir", str(out)]) == 3
    assert "c.json: partitions[0]" in capsys.readouterr().err
    assert not out.exists()


def test_spark_master_needs_the_spark_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "plan",
        "--example",
        "--engine",
        "local",
        "--spark-master",
        "local[1]",
        "--output-dir",
        str(tmp_path),
    ]
    assert main(args) == 2
    assert "--spark-master needs --engine spark" in capsys.readouterr().err


def test_snapshot_convert_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_any(generated(brokers=5, racks=0, topics=2, partitions=4, rf=2, seed=3), tmp_path / "s.json")
    assert main(["snapshot", "convert", str(tmp_path / "s.json"), str(tmp_path / "p")]) == 0
    assert main(["snapshot", "convert", str(tmp_path / "p"), str(tmp_path / "t.json")]) == 0
    assert (tmp_path / "s.json").read_bytes() == (tmp_path / "t.json").read_bytes()
    assert "-> " + str(tmp_path / "p") + " (parquet)" in capsys.readouterr().err


def test_snapshot_without_a_cluster_or_action_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "-o", "x.json"]) == 2
    assert "required: --bootstrap-server" in capsys.readouterr().err


def test_a_fleets_plans_name_the_dirs_of_new_replicas_as_a_single_plan_does(tmp_path: Path) -> None:
    # Brokers 1-3 with dirs /a and /b; broker 1 holds everything in /a and broker 3 nothing, so the
    # balance gives broker 3 new replicas, each into a dir the plan names.
    gb = 10**9
    brokers = [
        Broker(b, r, log_dirs=(LogDir("/a", 1000 * gb, 900 * gb), LogDir("/b", 1000 * gb, 990 * gb)))
        for b, r in ((1, "a"), (2, "b"), (3, "a"))
    ]
    parts = [
        PartitionState(
            TopicPartition("t", i), (1, 2), size_bytes=10 * gb, replica_dirs=((1, "/a"), (2, "/a"))
        )
        for i in range(6)
    ]
    snaps = tmp_path / "fleet"
    snaps.mkdir()
    write_any(ClusterSnapshot.of(brokers, parts), snaps / "jbod.json")
    out, single = tmp_path / "out", tmp_path / "single"
    assert main(["plan", "--engine", "local", "--fleet", str(snaps), "--output-dir", str(out)]) == 0
    args = ["plan", "--engine", "local", "--snapshot", str(snaps / "jbod.json"), "--output-dir", str(single)]
    assert main(args) == 0
    for file in ("reassignment.json", "rollback.json", "report.json"):
        assert (out / "jbod" / file).read_bytes() == (single / file).read_bytes(), file
    moves = json.loads((out / "jbod" / "reassignment.json").read_text())["partitions"]
    assert any(3 in m["replicas"] for m in moves)
    assert all(m["log_dirs"][m["replicas"].index(3)] in ("/a", "/b") for m in moves if 3 in m["replicas"])
    assert "log_dirs" in json.loads((out / "jbod" / "report.json").read_text())
