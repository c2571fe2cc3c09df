"""`ferry plan --disks balance` and `--evacuate-dir`: written like any plan (log_dirs in
reassignment.json, bytes per dir in report.json, a summary); usage and input errors are one line;
an inter-broker plan on a JBOD snapshot names the new replicas' dirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ferry.cli.main import main
from ferry.formats import dumps_json
from ferry.formats.snapshot_json import dump_snapshot
from ferry.model import Broker, ClusterSnapshot, LogDir, PartitionState, TopicPartition

GB = 10**9


def _jbod(tmp_path: Path) -> Path:
    """Brokers 1-3 (racks a, b, a), dirs /a and /b of 1 TB each; broker 1 holds all of its
    partitions' 60 GB in /a."""
    brokers = [
        Broker(b, r, log_dirs=(LogDir("/a", 1000 * GB, 900 * GB), LogDir("/b", 1000 * GB, 990 * GB)))
        for b, r in ((1, "a"), (2, "b"), (3, "a"))
    ]
    parts = [
        PartitionState(
            TopicPartition("t", i),
            (1, 2),
            size_bytes=10 * GB,
            replica_dirs=((1, "/a"), (2, "/b" if i % 2 else "/a")),
        )
        for i in range(6)
    ]
    path = tmp_path / "jbod.json"
    path.write_text(dumps_json(dump_snapshot(ClusterSnapshot.of(brokers, parts))))
    return path


def _plan(capsys: pytest.CaptureFixture[str], snapshot: Path, out: Path, *args: str) -> tuple[int, str]:
    code = main(["plan", "--engine", "local", "--snapshot", str(snapshot), "--output-dir", str(out), *args])
    return code, capsys.readouterr().err


def test_disks_balance_evens_each_brokers_dirs_and_reports_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = _plan(capsys, _jbod(tmp_path), tmp_path / "out", "--disks", "balance", "--html")
    assert code == 0, err
    moves = json.loads((tmp_path / "out" / "reassignment.json").read_text())["partitions"]
    assert len(moves) == 3 and all(m["log_dirs"][0] == "/b" and m["log_dirs"][1] == "any" for m in moves)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert (report["disks"], report["replica_moves"], report["bytes_moved"]) == ("balance", 3, 30 * GB)
    broker_1 = {
        r["path"]: (r["bytes_before"], r["bytes_after"]) for r in report["log_dirs"] if r["broker"] == 1
    }
    assert broker_1 == {"/a": (60 * GB, 30 * GB), "/b": (0, 30 * GB)}
    assert "chart-dirs" in (tmp_path / "out" / "report.html").read_text()


def test_evacuate_dir_empties_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = _plan(capsys, _jbod(tmp_path), tmp_path / "out", "--evacuate-dir", "2:/a")
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    after = {r["path"]: r["bytes_after"] for r in report["log_dirs"] if r["broker"] == 2}
    assert after == {"/a": 0, "/b": 60 * GB}
    assert report["evacuate_dir"] == {"broker": 2, "path": "/a"} and report["to_other_brokers"] == 0


@pytest.mark.parametrize(
    ("args", "code", "expected"),
    [
        (
            ["--disks", "balance", "--remove-brokers", "1"],
            2,
            "--disks balance plans the log dirs inside brokers: it cannot go with --remove-brokers",
        ),
        (
            ["--evacuate-dir", "2:/a", "--max-moves", "3"],
            2,
            "--evacuate-dir plans the log dirs inside brokers: it cannot go with --max-moves",
        ),
        (["--disks", "balance", "--evacuate-dir", "2:/a"], 2, "two plans"),
        (["--evacuate-dir", "/a"], 2, "expected BROKER:PATH"),
        (["--evacuate-dir", "2:/nope"], 3, "--evacuate-dir 2:/nope: broker 2 has no log dir /nope"),
    ],
)
def test_what_a_dir_plan_refuses_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], code: int, expected: str
) -> None:
    got, err = _plan(capsys, _jbod(tmp_path), tmp_path / "out", *args)
    assert got == code
    assert expected in err.splitlines()[0]
    assert not (tmp_path / "out").exists()


def test_a_snapshot_without_dirs_is_an_input_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        [
            "plan",
            "--engine",
            "local",
            "--example",
            "--output-dir",
            str(tmp_path / "out"),
            "--disks",
            "balance",
        ]
    )
    assert code == 3
    assert "--disks balance: the snapshot lists no log dirs" in capsys.readouterr().err


def test_an_inter_broker_plan_names_the_dir_of_each_new_replica(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = _plan(capsys, _jbod(tmp_path), tmp_path / "out")
    assert code == 0, err
    moves = json.loads((tmp_path / "out" / "reassignment.json").read_text())["partitions"]
    assert moves and all(m["log_dirs"][m["replicas"].index(3)] == "/b" for m in moves if 3 in m["replicas"])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert {r["path"] for r in report["log_dirs"] if r["broker"] == 3} == {"/a", "/b"}


def test_a_dir_plans_summary_gives_sizes_in_units(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    snapshot, out = _jbod(tmp_path), tmp_path / "out"
    code = main(
        [
            "plan",
            "--engine",
            "local",
            "--snapshot",
            str(snapshot),
            "--output-dir",
            str(out),
            "--disks",
            "balance",
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    text = printed.out + printed.err
    assert "3 replica move(s) between log dirs, 27.9 GiB to copy, 2 dir(s) changed" in text
    assert "broker 1 /a: 55.9 GiB -> 27.9 GiB (6.0% -> 3.0% of its size)" in text
