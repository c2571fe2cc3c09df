"""`ferry plan --balance bytes` in process: usage, capacity refusals, and disks that end even."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from support.clusters import generated

from ferry.cli.main import main
from ferry.formats import load_reassignment
from ferry.formats.sources import write_any
from ferry.model import ClusterSnapshot

BYTES = ("--balance", "bytes")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["plan", "--engine", "local", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cluster(tmp_path: Path) -> tuple[ClusterSnapshot, Path]:
    """Nine brokers in three racks, the last three empty, partitions of random sizes."""
    snap = generated(brokers=9, racks=3, topics=6, partitions=40, rf=3, seed=4, occupied=6)
    path = tmp_path / "snap.json"
    write_any(snap, path)
    return snap, path


def _disks(snap: ClusterSnapshot, targets: dict[object, tuple[int, ...]]) -> Counter[int]:
    used: Counter[int] = Counter({b: 0 for b in snap.broker_ids})
    for p in snap.partitions:
        for b in targets.get(p.tp, p.replicas):
            used[b] += p.size
    return used


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--capacity", "c.json"], "--capacity needs --balance bytes"),
        (["--max-disk-fraction", "0.9"], "--max-disk-fraction needs --balance bytes"),
        ([*BYTES, "--max-disk-fraction", "0.9"], "--max-disk-fraction needs --capacity"),
        ([*BYTES, "--replace", "1=8"], "--balance bytes cannot be combined with --replace"),
        ([*BYTES, "--max-disk-fraction", "1.5"], "expected a fraction in (0, 1], got '1.5'"),
        ([*BYTES, "--max-disk-fraction", "most"], "expected a fraction such as 0.85, got 'most'"),
        (["--balance", "leaders"], "argument --balance: invalid choice: 'leaders'"),
    ],
)
def test_bad_balance_usage_exits_2_and_writes_nothing(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    cluster: tuple[ClusterSnapshot, Path],
    args: list[str],
    expected: str,
) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "--snapshot", str(cluster[1]), *args, "--output-dir", str(out_dir))
    assert code == 2
    assert expected in err.splitlines()[0]
    assert out == ""
    assert not out_dir.exists()


def test_bytes_balance_evens_the_disks_the_files_say_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: tuple[ClusterSnapshot, Path]
) -> None:
    snap, path = cluster
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "--snapshot", str(path), *BYTES, "--output-dir", str(out_dir))
    assert (code, err) == (0, "")
    targets = load_reassignment(out_dir / "reassignment.json").targets
    after = _disks(snap, targets)
    mean = sum(after.values()) / len(after)
    assert (max(after.values()) - min(after.values())) / mean <= 0.05
    report = json.loads((out_dir / "report.json").read_text())
    assert report["goal"]["balance"] == "bytes"
    disk = report["disk"]
    assert disk["after"]["bytes"] == {str(b): n for b, n in sorted(after.items())}
    assert disk["before"]["bytes"] == {str(b): n for b, n in sorted(_disks(snap, {}).items())}
    assert disk["bytes_lower_bound"] <= report["bytes_moved"] <= 1.15 * disk["bytes_lower_bound"]
    assert report["balance"]["after"]["rack_violations"] == 0
    assert report["balance"]["after"]["leader_spread"] <= 1
    assert "disk spread" in out
    assert "lower bound" in out


def test_a_capacity_that_would_overfill_a_broker_is_refused_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: tuple[ClusterSnapshot, Path]
) -> None:
    snap, path = cluster
    total = sum(p.size * p.replication_factor for p in snap.partitions)
    # RF 3 over three racks puts a third of the bytes in every rack, whatever the disks; rack r1's
    # (brokers 1, 4, 7) hold exactly that, so they would end full, above 85 %.
    sizes = {b: total // 9 if b % 3 == 1 else total for b in snap.broker_ids}
    capacity = tmp_path / "disks.json"
    capacity.write_text(json.dumps({str(b): n for b, n in sizes.items()}))
    out_dir = tmp_path / "out"
    code, out, err = run(
        capsys, "--snapshot", str(path), *BYTES, "--capacity", str(capacity), "--output-dir", str(out_dir)
    )
    assert code == 4
    first = err.splitlines()[0]
    assert re.match(r"ferry: error: broker [147] would hold [\d,]+ bytes, 100\.\d% of its capacity", first)
    assert first.endswith("above the largest fraction allowed (85%)")
    assert out == ""
    assert not out_dir.exists()


def test_capacities_even_the_fraction_in_use(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: tuple[ClusterSnapshot, Path]
) -> None:
    snap, path = cluster
    total = sum(p.size * p.replication_factor for p in snap.partitions)
    # Brokers 0, 1 and 2, one in each rack, have disks twice as big: they should take twice the bytes.
    sizes = {b: total // 3 if b < 3 else total // 6 for b in snap.broker_ids}
    capacity = tmp_path / "disks.json"
    capacity.write_text(json.dumps({str(b): n for b, n in sizes.items()}))
    out_dir = tmp_path / "out"
    code, _, err = run(
        capsys, "--snapshot", str(path), *BYTES, "--capacity", str(capacity), "--output-dir", str(out_dir)
    )
    assert (code, err) == (0, "")
    after = _disks(snap, load_reassignment(out_dir / "reassignment.json").targets)
    fractions = [after[b] / sizes[b] for b in snap.broker_ids]
    assert (max(fractions) - min(fractions)) / (sum(fractions) / len(fractions)) <= 0.05
    goal = json.loads((out_dir / "report.json").read_text())["goal"]
    assert goal["capacity"] == {str(b): n for b, n in sorted(sizes.items())}
    assert goal["max_disk_fraction"] == 0.85


@pytest.mark.parametrize(
    ("capacity", "expected"),
    [
        ({"99": 10**15}, "--capacity {disks}: broker 99 is not in {snap}"),
        ({str(b): 10**15 for b in range(8)}, "--capacity {disks}: no capacity given for target broker 8"),
    ],
)
def test_a_capacity_file_that_does_not_fit_the_cluster_exits_3(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    cluster: tuple[ClusterSnapshot, Path],
    capacity: dict[str, int],
    expected: str,
) -> None:
    path = cluster[1]
    disks = tmp_path / "disks.json"
    disks.write_text(json.dumps(capacity))
    code, _, err = run(
        capsys, "--snapshot", str(path), *BYTES, "--capacity", str(disks), "--output-dir", str(tmp_path / "o")
    )
    assert code == 3
    assert expected.format(snap=path, disks=disks) in err
    assert not (tmp_path / "o").exists()


def test_bytes_balance_needs_sizes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    snap = generated(brokers=6, racks=3, topics=2, partitions=6, rf=2, seed=1)
    unsized = ClusterSnapshot.of(snap.brokers, [replace(p, size_bytes=None) for p in snap.partitions])
    path = tmp_path / "snap.json"
    write_any(unsized, path)
    code, _, err = run(capsys, "--snapshot", str(path), *BYTES, "--output-dir", str(tmp_path / "o"))
    assert code == 3
    assert f"--balance bytes: no partition of {path} has a size" in err
    assert not (tmp_path / "o").exists()


def test_a_replica_plan_reports_no_byte_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: tuple[ClusterSnapshot, Path]
) -> None:
    code, _, _ = run(capsys, "--snapshot", str(cluster[1]), "--output-dir", str(tmp_path / "o"))
    assert code == 0
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert "balance" not in report["goal"]
    assert "disk" not in report
