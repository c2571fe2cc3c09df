"""`ferry plan` end to end in-process: exit codes, one-line errors, and the three files, or none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.builders import broker, partition, snapshot

from ferry.cli.main import main
from ferry.cli.render import human_bytes, plan_summary
from ferry.formats import load_reassignment, load_snapshot, parse_snapshot
from ferry.formats.snapshot_json import dump_snapshot
from ferry.model import Broker, TopicPartition

DATA = Path(__file__).resolve().parents[2] / "data"
SMALL = DATA / "snapshot_small.json"
OUTPUTS = {"reassignment.json", "report.json", "rollback.json"}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["plan", "--engine", "local", *args])
    out, err = capsys.readouterr()
    return code, out, err


def first_error(err: str) -> str:
    lines = err.splitlines()
    assert lines, "nothing on stderr"
    assert lines[0].startswith("ferry: error: ")
    return lines[0].removeprefix("ferry: error: ")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--brokers", "1,x"], "argument --brokers: 'x' in '1,x' is not a broker id"),
        (["--brokers", "1,,2"], "argument --brokers: an empty item in '1,,2' is not a broker id"),
        (["--remove-brokers", "-1"], "argument --remove-brokers: '-1' in '-1' is not a broker id"),
        (["--replace", "3"], "argument --replace: expected OLD=NEW broker ids (e.g. 3=9), got '3'"),
        (["--replace", "3=3"], "argument --replace: cannot replace broker 3 with itself"),
        (["--replication-factor", "t=0"], "argument --replication-factor: replication factor must be"),
        (["--replication-factor", "=2"], "argument --replication-factor: expected TOPIC=N"),
        (["--topics", "a,,b"], "argument --topics: empty topic name in 'a,,b'"),
        (["--rack-mode", "loose"], "argument --rack-mode: invalid choice: 'loose'"),
        (["--brokers", "1", "--remove-brokers", "2"], "not allowed with argument --brokers"),
        (["--topics", "a", "--exclude-topics", "b"], "not allowed with argument --topics"),
        (["--example"], "not allowed with argument --snapshot"),
        (["--bootstrap-server", "127.0.0.1:1"], "not allowed with argument --snapshot"),
        (["--command-config", "c.properties"], "--command-config only goes with --bootstrap-server"),
        (["--timeout", "5"], "--timeout only goes with --bootstrap-server"),
        # Offline there are no live checks to override.
        (["--force", "checked by hand"], "--force only goes with --bootstrap-server"),
        (["--force", " "], "--force needs a reason"),
        (["--replace", "1=3", "--brokers", "1,2,3"], "--replace cannot be combined with --brokers"),
        (["--replace", "1=3", "--remove-brokers", "2"], "--replace cannot be combined with --brokers"),
        (["--replace", "1=3", "--replication-factor", "orders=2"], "--replace cannot be combined"),
        (["--replace", "1=3", "--replace", "1=4"], "--replace: broker 1 is replaced twice"),
        (
            ["--replication-factor", "orders=2", "--replication-factor", "orders=3"],
            "--replication-factor: orders is given both 2 and 3",
        ),
        (["--brokesr", "1"], "unrecognized arguments: --brokesr 1"),
        (["--bro", "1"], "unrecognized arguments: --bro 1"),  # no abbreviations: scripts stay stable
    ],
)
def test_bad_usage_exits_2_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], expected: str
) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "--snapshot", str(SMALL), *args, "--output-dir", str(out_dir))
    assert code == 2
    assert expected in first_error(err)
    assert out == ""
    assert not out_dir.exists()


def test_snapshot_or_example_is_required(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "--output-dir", str(tmp_path / "out"))
    assert code == 2
    assert "one of the arguments --snapshot --fleet --example --bootstrap-server is required" in first_error(
        err
    )


def test_output_dir_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--snapshot", str(SMALL))
    assert code == 2
    assert "the following arguments are required: --output-dir" in first_error(err)


def test_output_dir_that_is_a_file_is_bad_usage(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    blocker = tmp_path / "out"
    blocker.write_text("x")
    code, _, err = run(capsys, "--snapshot", str(SMALL), "--output-dir", str(blocker))
    assert code == 2
    assert first_error(err) == f"--output-dir {blocker}: exists and is not a directory"
    assert blocker.read_text() == "x"


def test_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["plan", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for flag in (
        "--snapshot",
        "--example",
        "--brokers",
        "--remove-brokers",
        "--replace",
        "--replication-factor",
        "--topics",
        "--exclude-topics",
        "--rack-mode",
        "--output-dir",
        "--force",
    ):
        assert flag in out
    assert "offline plans are not checked" in out
    assert "ferry plan --snapshot snapshot.json --remove-brokers 4,5 --output-dir out" in out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--brokers", "1,2,9"], "--brokers: broker 9 is not in {snap}"),
        (["--remove-brokers", "7"], "--remove-brokers: broker 7 is not in {snap}"),
        (["--remove-brokers", "1,2,3,4"], "--remove-brokers: would remove every broker of {snap}"),
        (
            ["--replace", "1=9"],
            "--replace 1=9: broker 9 is not in {snap} (list new brokers in its 'brokers')",
        ),
        (["--topics", "nope"], "--topics: topic 'nope' is not in {snap}"),
        (["--exclude-topics", "nope"], "--exclude-topics: topic 'nope' is not in {snap}"),
        (["--replication-factor", "orders=5"], "--replication-factor orders=5: only 4 target brokers"),
        (["--exclude-topics", "orders,payments"], "nothing to plan: no topic of {snap} is in scope"),
    ],
)
def test_goal_that_does_not_fit_exits_3_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], expected: str
) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "--snapshot", str(SMALL), *args, "--output-dir", str(out_dir))
    assert code == 3
    assert first_error(err) == expected.format(snap=SMALL)
    assert out == ""
    assert not out_dir.exists()


def test_all_goal_problems_are_listed_one_per_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(
        capsys,
        "--snapshot",
        str(SMALL),
        "--remove-brokers",
        "7",
        "--topics",
        "x,y",
        "--output-dir",
        str(tmp_path / "out"),
    )
    assert code == 3
    assert err.splitlines() == [
        f"ferry: error: --remove-brokers: broker 7 is not in {SMALL}",
        f"ferry: error: --topics: topic 'x' is not in {SMALL}",
        f"ferry: error: --topics: topic 'y' is not in {SMALL}",
    ]


def test_bad_snapshot_exits_3_and_writes_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    code, _, err = run(capsys, "--snapshot", str(DATA / "snapshot_bad.json"), "--output-dir", str(out_dir))
    assert code == 3
    lines = err.splitlines()
    assert len(lines) == 13
    assert (
        f"ferry: error: {DATA / 'snapshot_bad.json'}: partitions[0].replicas: broker 9 is not in brokers"
        in lines
    )
    assert not out_dir.exists()


def test_missing_snapshot_exits_3(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    code, _, err = run(capsys, "--snapshot", str(missing), "--output-dir", str(tmp_path / "out"))
    assert code == 3
    assert first_error(err) == f"{missing}: cannot read: No such file or directory"


def test_bundled_example_is_a_valid_snapshot_of_six_brokers_plus_two_new() -> None:
    from importlib import resources

    data = (resources.files("ferry") / "examples" / "six_brokers_add_two.json").read_bytes()
    snap = parse_snapshot(data, "example")
    used = {b for p in snap.partitions for b in p.replicas}
    assert len(snap.brokers) == 8
    assert len(set(snap.broker_ids) - used) == 2
    assert len({b.rack for b in snap.brokers}) in (2, 3)
    assert len(snap.topics) == 6
    assert 50 <= len(snap.partitions) <= 70
    assert {p.replication_factor for p in snap.partitions} == {2, 3}
    assert all(p.size_bytes and p.leader is not None and p.isr for p in snap.partitions)


# Everything below runs the planner (ferry.plan.planner).


def test_plan_writes_three_files_that_kafka_and_ferry_can_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_dir = tmp_path / "nested" / "out"
    code, out, err = run(capsys, "--snapshot", str(SMALL), "--output-dir", str(out_dir))
    assert (code, err) == (0, "")
    assert {p.name for p in out_dir.iterdir()} == OUTPUTS  # created, and no temp left behind

    snap = load_snapshot(SMALL)
    plan = load_reassignment(out_dir / "reassignment.json")
    rollback = load_reassignment(out_dir / "rollback.json")
    assert plan.entries, "brokers 3 and 4 are empty: replicas must move there"
    assert [e.tp for e in rollback.entries] == [e.tp for e in plan.entries]
    for entry in rollback.entries:
        assert entry.replicas == snap.partition(entry.tp).replicas
    for tp, target in plan.targets.items():
        assert target != snap.partition(tp).replicas, "only changing partitions are listed"
        assert len(target) == snap.partition(tp).replication_factor
    moves = plan.to_moves(snap, "reassignment.json")
    assert sum(len(m.adding) for m in moves) > 0

    raw = json.loads((out_dir / "reassignment.json").read_text())
    assert set(raw) == {"version", "partitions"}
    assert all(set(p) <= {"topic", "partition", "replicas", "log_dirs"} for p in raw["partitions"])

    report = json.loads((out_dir / "report.json").read_text())
    assert report["snapshot"] == str(SMALL)
    assert report["goal"]["brokers"] is None
    assert report["partitions_changed"] == len(plan.entries)
    for key in ("partitions", "replica_moves", "lower_bound", "bytes_moved", "leader_changes", "balance"):
        assert key in report

    assert "partitions changed" in out
    assert str(out_dir / "reassignment.json") in out


def test_remove_brokers_empties_them(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, _ = run(capsys, "--snapshot", str(SMALL), "--remove-brokers", "2", "--output-dir", str(tmp_path))
    assert code == 0
    snap = load_snapshot(SMALL)
    plan = load_reassignment(tmp_path / "reassignment.json")
    on_two = {p.tp for p in snap.partitions if 2 in p.replicas}
    assert set(plan.targets) >= on_two
    assert all(2 not in target for target in plan.targets.values())
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["goal"]["brokers"] == [1, 3, 4]


def test_replace_moves_exactly_the_old_brokers_replicas(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    snap = snapshot(
        [broker(1, "a"), broker(2, "b"), broker(3, "a"), broker(4, "b")],
        [partition("t", 0, [1, 2]), partition("t", 1, [2, 3]), partition("t", 2, [3, 1])],
    )
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(dump_snapshot(snap)))
    code, _, _ = run(capsys, "--snapshot", str(path), "--replace", "2=4", "--output-dir", str(tmp_path / "o"))
    assert code == 0
    plan = load_reassignment(tmp_path / "o" / "reassignment.json")
    assert dict(plan.targets) == {
        partition("t", 0, [1]).tp: (1, 4),
        partition("t", 1, [1]).tp: (4, 3),
    }


def test_rerun_replaces_the_previous_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "reassignment.json").write_text("stale")
    code, _, _ = run(capsys, "--snapshot", str(SMALL), "--output-dir", str(tmp_path))
    assert code == 0
    load_reassignment(tmp_path / "reassignment.json")
    assert {p.name for p in tmp_path.iterdir()} == OUTPUTS


def test_unwritable_output_dir_exits_2_after_planning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("x")
    out_dir = tmp_path / "file" / "out"
    code, out, err = run(capsys, "--snapshot", str(SMALL), "--output-dir", str(out_dir))
    assert code == 2
    assert first_error(err).startswith(f"--output-dir {out_dir}: cannot write: ")
    assert out == ""


def test_example_plans_the_bundled_snapshot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "--example", "--output-dir", str(tmp_path))
    assert code == 0
    assert out.startswith("Plan for example:six_brokers_add_two.json:")
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["snapshot"] == "example:six_brokers_add_two.json"
    assert report["partitions"] == 60
    assert report["balance"]["after"]["replica_spread"] <= 1


# The renderer is pure; no planner needed.


def test_summary_lists_the_figures_and_the_files() -> None:
    report = {
        "partitions": 60,
        "partitions_changed": 30,
        "replica_moves": 38,
        "lower_bound": 38,
        "bytes_moved": 3 * 1024**3 // 2,
        "leader_changes": 20,
        "balance": {
            "before": {
                "replica_spread": 26,
                "topic_replica_spread_max": 6,
                "leader_spread": 11,
                "rack_violations": 2,
            },
            "after": {
                "replica_spread": 1,
                "topic_replica_spread_max": 1,
                "leader_spread": 1,
                "rack_violations": 0,
            },
        },
    }
    files = [Path("out/reassignment.json"), Path("out/rollback.json"), Path("out/report.json")]
    text = plan_summary(report, snapshot="snap.json", files=files)
    assert text.splitlines()[0] == "Plan for snap.json:"
    for expected in (
        "partitions in scope   60",
        "partitions changed    30",
        "replica moves         38 (lower bound 38)",
        "data to move          1.5 GiB",
        "leader changes        20",
        "replica spread        26 -> 1",
        "topic replica spread  6 -> 1",
        "leader spread         11 -> 1",
        "rack violations       2 -> 0",
        "Wrote out/reassignment.json, out/rollback.json, out/report.json.",
    ):
        assert expected in text
    assert "rollback.json puts the current replicas back." in text


def test_summary_of_a_plan_with_nothing_to_move_and_missing_figures() -> None:
    text = plan_summary({"partitions_changed": 0}, snapshot="s", files=[Path("r.json")])
    assert "Nothing to move" in text
    assert "leader spread         n/a -> n/a" in text


@pytest.mark.parametrize(
    ("size", "expected"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536 * 1024**2, "1.5 GiB"), (2**70, "1024.0 EiB")],
)
def test_human_bytes(size: int, expected: str) -> None:
    assert human_bytes(size) == expected


def test_bad_timeout_is_a_usage_error_before_connecting(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = ["--bootstrap-server", "127.0.0.1:1", "--timeout", "0", "--output-dir", str(out)]
    code, _, err = run(capsys, *args)
    assert (code, first_error(err)) == (2, "--timeout must be positive")
    assert not out.exists()


def _with_dead_broker(tmp_path: Path) -> Path:
    snap = snapshot(
        [broker(1, "a"), broker(2, "b"), broker(3, "a"), Broker(4, "b", alive=False)],
        [partition("t", p, reps, leader=reps[0]) for p, reps in enumerate([[1, 4], [4, 3], [2, 3], [3, 2]])],
    )
    path = tmp_path / "dead.json"
    path.write_text(json.dumps(dump_snapshot(snap)))
    return path


@pytest.mark.parametrize(
    "goal",
    [[], ["--brokers", "1,2,4"], ["--replace", "1=4"]],
)
def test_a_down_broker_cannot_be_a_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, goal: list[str]
) -> None:
    path = _with_dead_broker(tmp_path)
    code, _, err = run(capsys, "--snapshot", str(path), *goal, "--output-dir", str(tmp_path / "out"))
    assert code == 4
    assert first_error(err) == f"broker 4 is down in {path} (alive: false) and cannot receive replicas"
    assert "--remove-brokers 4" in err
    assert not (tmp_path / "out").exists()


def test_removing_a_down_broker_plans_its_replicas_away(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _with_dead_broker(tmp_path)
    code, _, err = run(
        capsys, "--snapshot", str(path), "--remove-brokers", "4", "--output-dir", str(tmp_path)
    )
    assert code == 0, err
    targets = load_reassignment(tmp_path / "reassignment.json").targets
    assert set(targets) == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert all(4 not in replicas and len(replicas) == 2 for replicas in targets.values())
