"""Interrupting reassignments on a real cluster: cancel, rollback, re-target, safety checks.

These tests run on their own 5-broker cluster (no racks): the KIP examples need five brokers, and
the rollback test stops brokers, which must not disturb the session's shared cluster. Every
assertion reads the cluster: replicas, adding/removing sets, ISR, leaders and throttle configs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from ferry_process import executing, succeeds, write_plan
from kafka_helpers import create_topics, produce, wait_until

from ferry.cli.commands import plan as plan_command
from ferry.cli.main import main
from ferry.execute.journal import Journal
from ferry.execute.records import RequestKind
from ferry.execute.states import RequestState, TaskState
from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition
from ferry.sandbox import ClusterSpec, Sandbox, ensure_jars

MB = 1024 * 1024
BROKERS = (1, 2, 3, 4, 5)
SLOW = "100000"  # bytes/s: an 8 MB copy takes over a minute
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
LISTS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, str]]:
    sandbox = Sandbox(tmp_path_factory.mktemp("five"))
    try:
        state = sandbox.up(ClusterSpec(brokers=5, racks=0, heap_mb=256), ensure_jars(), ready_brokers)
        yield sandbox, state.bootstrap
    finally:
        sandbox.down()


@pytest.fixture
def bootstrap(five: tuple[Sandbox, str]) -> str:
    return five[1]


@pytest.fixture
def admin(bootstrap: str) -> Iterator[KafkaPythonAdmin]:
    with KafkaPythonAdmin(bootstrap, timeout_s=15) as client:
        yield client


def _keys(topic: str) -> list[ConfigKey]:
    brokers = [ConfigKey(ResourceType.BROKER, str(b), k) for b in BROKERS for k in RATES]
    return brokers + [ConfigKey(ResourceType.TOPIC, topic, k) for k in LISTS]


def _topic_with_data(
    bootstrap: str,
    topic: str,
    assignments: dict[int, list[int]],
    size: int,
    configs: Mapping[str, str] | None = None,
) -> None:
    create_topics(bootstrap, {topic: {"assignments": assignments, "configs": dict(configs or {})}})
    produce(bootstrap, topic, size)


def _no_throttle(admin: KafkaPythonAdmin, topic: str) -> bool:
    return admin.describe_throttle_configs(_keys(topic)) == {}


def _state(admin: KafkaPythonAdmin, tp: TopicPartition) -> tuple[tuple[int, ...], tuple[int, ...]]:
    (p,) = [p for p in admin.describe_partitions([tp.topic]) if p.tp == tp]
    return p.replicas, p.isr or ()


def _ferry(*args: str) -> int:
    return main(list(args))


def test_cancel_after_one_new_replica_joined_stops_the_move_in_two_seconds(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """KIP-455's example, [1,2,3] -> [3,4,5] cancelled after 4 joined, as KRaft does it.

    KRaft's cancel drops every adding replica, the joined 4 included (see ferry.execute.cancel):
    the partition is back on {1, 2, 3} and nothing copies any more.
    """
    topic, tp = "cancel-kip", TopicPartition("cancel-kip", 0)
    _topic_with_data(bootstrap, topic, {0: [1, 2, 3]}, 8 * MB)
    plan, journal = write_plan(tmp_path / "plan.json", topic, {0: [3, 4, 5]}), tmp_path / "j.sqlite"
    with executing(plan, bootstrap, journal, "--throttle", SLOW) as run:
        wait_until(lambda: bool(admin.list_reassignments([topic])), 30, "the move to start")
        # Let 4 copy at full speed while 5 stays throttled, so 4 joins the ISR first.
        # (The leader side throttles every follower of the listed leaders, so it goes too.)
        admin.alter_configs(
            {
                ConfigKey(ResourceType.TOPIC, topic, LISTS[0]): None,
                ConfigKey(ResourceType.TOPIC, topic, LISTS[1]): "0:5",
            }
        )
        wait_until(lambda: 4 in _state(admin, tp)[1], 60, "broker 4 to join the ISR")
        (moving,) = admin.list_reassignments([topic])
        assert 5 in moving.adding_replicas
        started = time.monotonic()
        assert (
            _ferry("cancel", "--request", "1", "--bootstrap-server", bootstrap, "--journal", str(journal))
            == 0
        )
        took = time.monotonic() - started
        out = capsys.readouterr().out
        succeeds(run)
    assert took <= 2.0, f"cancel took {took:.1f} s"
    assert "cancelled 1 move(s) in flight" in out
    assert admin.list_reassignments([topic]) == ()
    assert sorted(_state(admin, tp)[0]) == [1, 2, 3]
    with Journal.open(journal) as j:
        assert [t.state for t in j.tasks(1)] == [TaskState.CANCELLED]
        assert j.request(1).state is RequestState.CANCELLED
    wait_until(lambda: _no_throttle(admin, topic), 15, "no throttle left")


def test_cancel_is_not_a_rollback_replicas_of_an_earlier_target_stay(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """[1,2] -> [1,3], re-targeted to [1,4], cancelled: 3 stays (RF 3 > 2), and the output says so."""
    topic, tp = "cancel-grow", TopicPartition("cancel-grow", 0)
    _topic_with_data(bootstrap, topic, {0: [1, 2]}, 8 * MB)
    journal = tmp_path / "j.sqlite"
    first = write_plan(tmp_path / "first.json", topic, {0: [1, 3]})
    second = write_plan(tmp_path / "second.json", topic, {0: [1, 4]})
    with executing(first, bootstrap, journal, "--throttle", SLOW) as one:
        wait_until(lambda: bool(admin.list_reassignments([topic])), 30, "the first move")
        with executing(second, bootstrap, journal, "--throttle", SLOW) as two:
            wait_until(lambda: 4 in _state(admin, tp)[0], 30, "the re-target")
            capsys.readouterr()
            assert (
                _ferry("cancel", "--topic", topic, "--bootstrap-server", bootstrap, "--journal", str(journal))
                == 0
            )
            out = capsys.readouterr().out
            succeeds(two)
        succeeds(one)
    assert sorted(_state(admin, tp)[0]) == [1, 2, 3]
    assert "1 partition(s) now have more replicas than before" in out and "cancel-grow-0" in out
    wait_until(lambda: _no_throttle(admin, topic), 15, "no throttle left")


def test_rollback_after_completion_restores_originals_and_leaders(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path
) -> None:
    topic = "rollback-done"
    original = {0: [1, 2, 3], 1: [2, 3, 4], 2: [3, 4, 5]}
    create_topics(bootstrap, {topic: {"assignments": original}})
    produce(bootstrap, topic, 3 * MB)
    plan = write_plan(tmp_path / "plan.json", topic, {0: [4, 5, 1], 1: [5, 1, 2], 2: [1, 2, 3]})
    journal = str(tmp_path / "j.sqlite")
    common = ("--bootstrap-server", bootstrap, "--journal", journal, "--poll-interval", "0.5")
    assert _ferry("execute", "--plan", str(plan), *common) == 0
    assert {p.tp.partition: list(p.replicas) for p in admin.describe_partitions([topic])} != original
    assert _ferry("rollback", "1", "--throttle", "50000000", *common) == 0
    # The rollback saw the originals on the broker that answered it; another broker's metadata may
    # show the reassignment's end a moment later (a read right after once showed both replica sets).
    back = {p: tuple(replicas) for p, replicas in original.items()}
    wait_until(lambda: _replicas(admin, topic) == back, 15, "the originals on every broker read")
    after = admin.describe_partitions([topic])
    assert {p.tp.partition: list(p.replicas) for p in after} == original
    assert all(p.leader == p.replicas[0] for p in after), "preferred leaders elected"
    with Journal.open(Path(journal)) as j:
        rollback = j.request(2)
        assert (rollback.kind, rollback.origin_request, rollback.state) == (
            RequestKind.ROLLBACK,
            1,
            RequestState.DONE,
        )
    wait_until(lambda: _no_throttle(admin, topic), 30, "no throttle left")


def test_a_second_request_re_targets_a_moving_partition(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """[1,2] -> [2,3] (slow), then -> [2,4]: 3 is dropped without waiting for it to catch up."""
    topic, tp = "retarget", TopicPartition("retarget", 0)
    _topic_with_data(bootstrap, topic, {0: [1, 2]}, 8 * MB)
    journal = tmp_path / "j.sqlite"
    first = write_plan(tmp_path / "first.json", topic, {0: [2, 3]})
    second = write_plan(tmp_path / "second.json", topic, {0: [2, 4]})
    with executing(first, bootstrap, journal, "--throttle", SLOW) as run:
        wait_until(lambda: bool(admin.list_reassignments([topic])), 30, "the first move to start")
        started = time.monotonic()
        assert (
            _ferry(
                "execute",
                "--plan",
                str(second),
                "--bootstrap-server",
                bootstrap,
                "--journal",
                str(journal),
                "--poll-interval",
                "0.5",
            )
            == 0
        )
        took = time.monotonic() - started
        succeeds(run)
    assert _state(admin, tp)[0] == (2, 4)
    assert took < 45, f"the re-target waited for broker 3's copy ({took:.0f} s)"
    with Journal.open(journal) as j:
        (old,), (new,) = j.tasks(1), j.tasks(2)
        assert (old.state, old.superseded_by, new.state) == (TaskState.CANCELLED, new.id, TaskState.DONE)
        assert new.original == (1, 2)  # the layout before both moves, for a rollback
    capsys.readouterr()
    assert _ferry("requests", "--journal", str(journal), "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["state"]) for r in listed] == [(1, "done"), (2, "done")]
    wait_until(lambda: _no_throttle(admin, topic), 15, "no throttle left")


def test_unsafe_plans_are_refused_with_nothing_submitted(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = "unsafe"
    create_topics(
        bootstrap,
        {topic: {"assignments": {0: [1, 2, 3], 1: [2, 3, 4]}, "configs": {"min.insync.replicas": "2"}}},
    )
    journal = str(tmp_path / "j.sqlite")
    common = ("--bootstrap-server", bootstrap, "--journal", journal)
    shrink = write_plan(tmp_path / "shrink.json", topic, {0: [1]})
    capsys.readouterr()
    assert _ferry("execute", "--plan", str(shrink), *common) == 4
    err = capsys.readouterr().err
    assert "below min.insync.replicas=2" in err and "nothing was submitted" in err
    # A plan made when partition 1 was on [1, 2, 3]: it has moved since, so the plan is stale.
    stale_dir = tmp_path / "stale"
    stale_dir.mkdir()
    stale = write_plan(stale_dir / "reassignment.json", topic, {1: [3, 4, 5]})
    write_plan(stale_dir / "rollback.json", topic, {1: [1, 2, 3]})
    assert _ferry("execute", "--plan", str(stale), *common) == 4
    assert "stale plan" in capsys.readouterr().err
    assert admin.list_reassignments([topic]) == ()
    assert {p.tp.partition: p.replicas for p in admin.describe_partitions([topic])} == {
        0: (1, 2, 3),
        1: (2, 3, 4),
    }
    with Journal.open(Path(journal)) as j:
        assert j.requests() == ()
    assert _ferry("execute", "--plan", str(stale), "--force", "operator checked it", *common) == 0
    with Journal.open(Path(journal)) as j:
        assert j.request(1).options.force == "operator checked it"
    assert {p.tp.partition: p.replicas for p in admin.describe_partitions([topic])}[1] == (3, 4, 5)


def test_rollback_skips_a_partition_whose_originals_are_offline(
    five: tuple[Sandbox, str], admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox, bootstrap = five
    topic = "rollback-offline"
    _topic_with_data(bootstrap, topic, {0: [1, 2], 1: [3, 4]}, 1 * MB)
    plan = write_plan(tmp_path / "plan.json", topic, {0: [4, 5], 1: [3, 5]})
    journal = str(tmp_path / "j.sqlite")
    common = ("--bootstrap-server", bootstrap, "--journal", journal, "--poll-interval", "0.5")
    assert _ferry("execute", "--plan", str(plan), *common) == 0
    for broker in (1, 2):
        sandbox.kill(broker)
    try:
        wait_until(
            lambda: {b.id for b in admin.describe_brokers()} == {3, 4, 5}, 60, "brokers 1 and 2 to be fenced"
        )
        capsys.readouterr()
        assert _ferry("rollback", "1", *common) == 0
        err = capsys.readouterr().err
        assert "skipped rollback-offline-0" in err and "offline" in err
        replicas = {p.tp.partition: p.replicas for p in admin.describe_partitions([topic])}
        assert replicas == {0: (4, 5), 1: (3, 4)}
    finally:
        for broker in (1, 2):
            sandbox.restart(broker, ready_brokers)
    wait_until(lambda: _no_throttle(admin, topic), 30, "no throttle left")


def test_freeze_with_cancel_stops_ferrys_moves_in_flight(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topic, tp = "freeze-cancel", TopicPartition("freeze-cancel", 0)
    _topic_with_data(bootstrap, topic, {0: [1, 2]}, 8 * MB)
    plan, journal = write_plan(tmp_path / "plan.json", topic, {0: [3, 4]}), tmp_path / "j.sqlite"
    connect = ("--bootstrap-server", bootstrap)
    with executing(plan, bootstrap, journal, "--throttle", SLOW) as run:
        wait_until(lambda: bool(admin.list_reassignments([topic])), 30, "the move to start")
        try:
            assert (
                _ferry("freeze", "--reason", "incident", "--cancel", *connect, "--journal", str(journal)) == 0
            )
            assert "cancelled 1 move(s) in flight" in capsys.readouterr().out
            succeeds(run)
        finally:
            assert _ferry("unfreeze", *connect) == 0
    assert admin.list_reassignments([topic]) == ()
    assert sorted(_state(admin, tp)[0]) == [1, 2]
    wait_until(lambda: _no_throttle(admin, topic), 15, "no throttle left")


def _replicas(admin: KafkaPythonAdmin, topic: str) -> dict[int, tuple[int, ...]]:
    return {p.tp.partition: p.replicas for p in admin.describe_partitions([topic])}


def test_a_live_plan_below_min_insync_replicas_is_refused_and_nothing_written(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = "plan-shrink"
    _topic_with_data(bootstrap, topic, {0: [1, 2, 3]}, 1 * MB, {"min.insync.replicas": "2"})
    out = tmp_path / "plan"
    args = ("plan", "--bootstrap-server", bootstrap, "--topics", topic, "--engine", "local")
    shrink = (*args, "--replication-factor", f"{topic}=1", "--output-dir", str(out))
    capsys.readouterr()
    assert _ferry(*shrink) == 4
    refusal = f"{topic}-0: 1 replica(s) after the move, below min.insync.replicas=2"
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"ferry: error: refusing to write the plan: {refusal}; nothing was written"
    assert not out.exists()  # not even snapshot.json
    assert _replicas(admin, topic) == {0: (1, 2, 3)} and admin.list_reassignments([topic]) == ()

    assert _ferry(*shrink, "--force", "scratch topic, acks=1 producers only") == 0
    assert {f.name for f in out.iterdir()} == {
        "reassignment.json",
        "rollback.json",
        "report.json",
        "snapshot.json",
    }
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert report["forced"] == {"reason": "scratch topic, acks=1 producers only", "overridden": [refusal]}
    assert len(json.loads((out / "reassignment.json").read_text())["partitions"][0]["replicas"]) == 1
    assert _replicas(admin, topic) == {0: (1, 2, 3)}  # plan never changes the cluster


def test_a_live_plan_onto_a_broker_that_died_while_planning_is_refused(
    five: tuple[Sandbox, str],
    admin: KafkaPythonAdmin,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sandbox, bootstrap = five
    topic = "plan-dead"
    _topic_with_data(bootstrap, topic, {0: [1, 2], 1: [2, 3]}, 1 * MB)
    planner = plan_command.plan_clusters

    def broker_5_dies_meanwhile(*args: Any, **kwargs: Any) -> Any:
        # After the snapshot (5 alive, so the goal passes), before the plan is written.
        sandbox.kill(5)
        wait_until(lambda: 5 not in {b.id for b in admin.describe_brokers()}, 60, "broker 5 to be fenced")
        return planner(*args, **kwargs)

    monkeypatch.setattr(plan_command, "plan_clusters", broker_5_dies_meanwhile)
    out = tmp_path / "plan"
    capsys.readouterr()
    try:
        code = _ferry(
            "plan",
            *("--bootstrap-server", bootstrap, "--topics", topic, "--replace", "2=5"),
            *("--engine", "local", "--output-dir", str(out)),
        )
        err = capsys.readouterr().err.splitlines()
        assert code == 4, err
        assert err[0] == (
            f"ferry: error: refusing to write the plan: {topic}-0: target broker(s) 5 not alive: the move "
            "could never finish (and 1 more); nothing was written"
        )
        assert not out.exists()
        assert _replicas(admin, topic) == {0: (1, 2), 1: (2, 3)} and admin.list_reassignments([topic]) == ()
    finally:
        sandbox.restart(5, ready_brokers)
