"""Log dirs on a real JBOD cluster (3 brokers, 2 dirs each): a reassignment JSON's ``log_dirs``
land every replica in its dir, new replicas are created there (never copied twice), a copy between
dirs is throttled and its throttle removed, cancel leaves a replica in its dir, and the snapshot
and ``ferry verify`` see the dirs."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from ferry_process import executing, succeeds
from kafka_helpers import create_topics, produce, wait_until

from ferry.cli.main import main
from ferry.execute.throttles import DIR_RATE, FOLLOWER_RATE, LEADER_RATE
from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.sandbox import ClusterSpec, Sandbox, ensure_jars

MB = 1_000_000
BROKERS = (1, 2, 3)


@pytest.fixture(scope="module")
def jbod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    home = tmp_path_factory.mktemp("jbod")
    sandbox = Sandbox(home)
    try:
        spec = ClusterSpec(brokers=3, racks=0, heap_mb=256, log_dirs=2)
        state = sandbox.up(spec, ensure_jars(), ready_brokers, timeout_s=120)
        yield home, state.bootstrap
    finally:
        sandbox.down()


@pytest.fixture
def bootstrap(jbod: tuple[Path, str]) -> str:
    return jbod[1]


@pytest.fixture
def admin(bootstrap: str) -> Iterator[KafkaPythonAdmin]:
    with KafkaPythonAdmin(bootstrap, timeout_s=15) as client:
        yield client


def _dir(home: Path, broker: int, second: bool) -> str:
    return str(home / f"broker-{broker}" / ("data2" if second else "data"))


def _where(admin: KafkaPythonAdmin, topic: str) -> dict[tuple[int, int], tuple[str, str | None]]:
    """(partition, broker) -> (dir, future dir) of every replica of ``topic``."""
    return {
        (tp.partition, broker): (r.path, r.future_path)
        for broker, held in admin.describe_log_dirs([topic]).items()
        for tp, r in held.replicas.items()
    }


def _plan(path: Path, topic: str, entries: Mapping[int, tuple[Sequence[int], Sequence[str]]]) -> Path:
    partitions = [
        {"topic": topic, "partition": p, "replicas": list(r), "log_dirs": list(d)}
        for p, (r, d) in entries.items()
    ]
    path.write_text(json.dumps({"version": 1, "partitions": partitions}), encoding="utf-8")
    return path


def _no_throttles(admin: KafkaPythonAdmin) -> bool:
    """Whether no broker shows a throttle. Each broker answers for its own dynamic configs and
    applies a removal from the metadata log a moment after the controller took it, so callers wait
    a bounded time, as the other execute tests do."""
    keys = [
        ConfigKey(ResourceType.BROKER, str(b), k)
        for b in BROKERS
        for k in (LEADER_RATE, FOLLOWER_RATE, DIR_RATE)
    ]
    return admin.describe_throttle_configs(keys) == {}


def test_a_plan_with_log_dirs_lands_every_replica_in_its_dir(
    jbod: tuple[Path, str], admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, bootstrap = jbod
    topic = "jbod-land"
    create_topics(bootstrap, {topic: {"assignments": {0: [1, 2], 1: [2, 3]}}})
    produce(bootstrap, topic, 6 * MB)
    before = _where(admin, topic)
    # Partition 0: broker 3 replaces 2, in broker 3's second dir, and broker 1's replica changes
    # dir; partition 1 stays on its brokers, both replicas into the dir they are not in.
    flip = {key: path.endswith("data") for key, (path, _) in before.items()}
    entries = {
        0: ((1, 3), (_dir(home, 1, flip[(0, 1)]), _dir(home, 3, True))),
        1: ((2, 3), (_dir(home, 2, flip[(1, 2)]), _dir(home, 3, flip[(1, 3)]))),
    }
    plan = _plan(tmp_path / "plan.json", topic, entries)
    journal = str(tmp_path / "j.sqlite")
    common = ["--bootstrap-server", bootstrap, "--journal", journal]
    code = main(
        [
            "execute",
            "--plan",
            str(plan),
            *common,
            "--throttle",
            "20000000",
            "--dir-throttle",
            "5MB/s",
            "--poll-interval",
            "0.5",
            "--wait",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    after = _where(admin, topic)
    wanted = {
        (p, b): d for p, (replicas, dirs) in entries.items() for b, d in zip(replicas, dirs, strict=True)
    }
    assert {key: after.get(key) for key in wanted} == {key: (d, None) for key, d in wanted.items()}
    assert (0, 2) not in after
    wait_until(lambda: _no_throttles(admin), 15, "no throttle left")
    assert main(["verify", "--plan", str(plan), *common]) == 0
    snapshot = tmp_path / "snap.json"
    assert main(["snapshot", "--bootstrap-server", bootstrap, "--topics", topic, "-o", str(snapshot)]) == 0
    doc = json.loads(snapshot.read_text())
    assert [len(b["log_dirs"]) for b in doc["brokers"]] == [2, 2, 2]
    assert doc["partitions"][0]["replica_dirs"] == {"1": wanted[(0, 1)], "3": wanted[(0, 3)]}


def test_cancelling_a_copy_between_dirs_leaves_the_replica_in_its_dir(
    jbod: tuple[Path, str], admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, bootstrap = jbod
    topic = "jbod-cancel"
    create_topics(bootstrap, {topic: {"assignments": {0: [1]}}})
    produce(bootstrap, topic, 8 * MB)
    ((_, (path, _)),) = _where(admin, topic).items()
    other = _dir(home, 1, path.endswith("data"))
    plan = _plan(tmp_path / "plan.json", topic, {0: ((1,), (other,))})
    journal = tmp_path / "j.sqlite"
    # 500 kB/s: the 8 MB copy takes 16 s, long enough to cancel half way.
    with executing(plan, bootstrap, journal, "--dir-throttle", "500kB/s") as run:
        wait_until(lambda: _where(admin, topic)[(0, 1)][1] == other, 30, "a future log in the other dir")
        cancel = ["cancel", "--request", "1", "--bootstrap-server", bootstrap, "--journal", str(journal)]
        assert main(cancel) == 0, capsys.readouterr().err
        succeeds(run)
    wait_until(
        lambda: _where(admin, topic)[(0, 1)] == (path, None),
        15,
        f"no future log, replica where it was ({path})",
        shown=lambda: (_where(admin, topic), capsys.readouterr().err[-2000:]),
    )
    wait_until(lambda: _no_throttles(admin), 15, "no throttle left")
    assert admin.describe_partitions([topic])[0].replicas == (1,)


def test_a_dir_evacuated_then_balanced_back_through_plan_and_execute(
    jbod: tuple[Path, str], admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, bootstrap = jbod
    topic = "jbod-evacuate"
    create_topics(bootstrap, {topic: {"assignments": {p: [2] for p in range(4)}}})
    produce(bootstrap, topic, 8 * MB)
    full = _dir(home, 2, False)
    common = ["--bootstrap-server", bootstrap]
    journal = ["--journal", str(tmp_path / "j.sqlite")]
    evacuate = tmp_path / "evacuate"
    assert main(["plan", *common, "--evacuate-dir", f"2:{full}", "--output-dir", str(evacuate)]) == 0
    report = json.loads((evacuate / "report.json").read_text())
    assert {r["path"]: r["bytes_after"] for r in report["log_dirs"] if r["broker"] == 2}[full] == 0
    plan = ["--plan", str(evacuate / "reassignment.json")]
    assert (
        main(["execute", *plan, *common, *journal, "--dir-throttle", "5MB/s", "--poll-interval", "0.5"]) == 0
    )
    held = admin.describe_log_dirs(None)[2].replicas
    assert held and all(r.path != full and r.future_path is None for r in held.values())
    wait_until(lambda: _no_throttles(admin), 15, "no throttle left")
    balance = tmp_path / "balance"
    assert main(["plan", *common, "--disks", "balance", "--output-dir", str(balance)]) == 0
    plan = ["--plan", str(balance / "reassignment.json")]
    assert (
        main(["execute", *plan, *common, *journal, "--dir-throttle", "5MB/s", "--poll-interval", "0.5"]) == 0
    )
    capsys.readouterr()
    again = tmp_path / "again"
    assert main(["plan", *common, "--disks", "balance", "--output-dir", str(again)]) == 0
    assert json.loads((again / "reassignment.json").read_text())["partitions"] == []
    wait_until(lambda: _no_throttles(admin), 15, "no throttle left")
