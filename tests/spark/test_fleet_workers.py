"""A fleet on the Spark engine is read by the workers: the driver reads only the clusters it plans
through the per-topic passes, and still fails a bad fleet whole, with every problem listed."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.clusters import generated
from support.plan_files import plan_files

from ferry.cli import fleet as fleet_module
from ferry.cli.main import main
from ferry.formats.sources import load_any, write_any
from ferry.model import ClusterSnapshot


def _fleet(folder: Path) -> Path:
    # One cluster holds most of the fleet's partitions: with 2 slots it goes through the passes
    # (more than a quarter of the fleet); the four small ones are a task each.
    write_any(generated(brokers=9, racks=3, topics=8, partitions=40, rf=3, seed=7, skew=1.0), folder / "big")
    for i in range(4):
        snapshot = generated(brokers=6 + i, racks=i % 3 + 1, topics=3, partitions=6, rf=2, seed=i, skew=1.5)
        write_any(snapshot, folder / f"small-{i}.json" if i % 2 else folder / f"small-{i}")
    return folder


@pytest.mark.usefixtures("spark")
def test_the_driver_reads_only_the_clusters_it_plans_through_the_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = _fleet(tmp_path / "fleet")
    read: list[str] = []

    def recorded(path: Path) -> ClusterSnapshot:
        read.append(path.name)
        return load_any(path)

    # Only this process sees the patch: the Spark workers are processes of their own.
    monkeypatch.setattr(fleet_module, "load_any", recorded)
    assert main(["plan", "--fleet", str(fleet), "--output-dir", str(tmp_path / "spark")]) == 0
    assert read == ["big"]
    local = ["plan", "--engine", "local", "--fleet", str(fleet), "--output-dir", str(tmp_path / "local")]
    assert main(local) == 0
    assert sorted(read) == ["big", "big", "small-0", "small-1.json", "small-2", "small-3.json"]
    assert plan_files(tmp_path / "spark") == plan_files(tmp_path / "local")
    assert len(plan_files(tmp_path / "spark")) == 15


@pytest.mark.usefixtures("spark")
def test_a_bad_fleet_fails_whole_on_the_workers_with_every_problem_named_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _fleet(tmp_path / "fleet")
    (fleet / "bad.json").write_text('{"version": 1, "brokers": [], "partitions": [{"topic": "t"}]}')
    (fleet / "worse.json").write_text("{not json")
    # Relative paths, from a folder the workers do not run in.
    monkeypatch.chdir(tmp_path)
    out = Path("out")
    assert main(["plan", "--fleet", "fleet", "--remove-brokers", "8", "--output-dir", str(out)]) == 3
    err = capsys.readouterr().err
    assert "fleet/bad.json: partitions[0]" in err
    assert "fleet/worse.json:" in err
    # The clusters of 6 to 8 brokers have no broker 8 to remove.
    assert "--remove-brokers: broker 8 is not in fleet/small-0" in err
    assert str(tmp_path) not in err
    assert not out.exists()


@pytest.mark.usefixtures("spark")
def test_relative_paths_reach_the_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fleet(tmp_path / "fleet")
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "--fleet", "fleet", "--output-dir", "out"]) == 0
    report = (tmp_path / "out" / "small-1" / "report.json").read_text()
    # The report names the snapshot as it was given.
    assert '"snapshot": "fleet/small-1.json"' in report
