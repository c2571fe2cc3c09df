"""ferry on a cluster with SCRAM users and ACLs (the sandbox's ``--sasl``): who may do what, and
that a refusal leaves nothing behind: no move in flight, no throttle, no request left running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka_helpers import create_topics, wait_until

from ferry.cli.main import main
from ferry.execute.journal import Journal
from ferry.execute.states import RequestState
from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition
from ferry.sandbox import Sandbox, SandboxState

RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def _as(kafka_sandbox: tuple[Sandbox, SandboxState], user: str) -> list[str]:
    sandbox, state = kafka_sandbox
    assert state.sasl_bootstrap is not None
    return [
        "--bootstrap-server",
        state.sasl_bootstrap,
        "--command-config",
        str(sandbox.scram_config_file(user)),
    ]


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("ferry: error: ")]


def _plan(path: Path, topic: str) -> Path:
    path.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 4]}]})
    )
    return path


def _untouched(admin: KafkaPythonAdmin, topic: str, journal: Path) -> None:
    """No move in flight, the replicas as created, no throttle config, the request not running."""
    assert admin.list_reassignments([topic]) == ()
    (state,) = admin.describe_partitions([topic])
    assert state.replicas == (1, 2)
    keys = [ConfigKey(ResourceType.BROKER, str(b), k) for b in (1, 2, 3, 4) for k in RATES]
    keys += [ConfigKey(ResourceType.TOPIC, topic, k) for k in REPLICAS]
    assert admin.describe_throttle_configs(keys) == {}
    with Journal.open(journal) as j:
        assert all(r.state is not RequestState.RUNNING for r in j.requests())


def test_a_wrong_scram_password_exits_5_with_one_line(
    kafka_sandbox: tuple[Sandbox, SandboxState], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _as(kafka_sandbox, "reader")
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(Path(args[-1]).read_text().replace("reader-secret", "not-the-password"))
    args[-1] = str(wrong)
    assert main(["snapshot", *args, "--timeout", "10", "-o", str(tmp_path / "s.json")]) == 5
    lines = _errors(capsys.readouterr().err)
    assert len(lines) == 1 and "authentication failed" in lines[0]
    assert not (tmp_path / "s.json").exists()


def test_a_reader_may_look_but_its_execute_is_refused_naming_the_acl(
    kafka_sandbox: tuple[Sandbox, SandboxState],
    admin: KafkaPythonAdmin,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    create_topics(kafka_sandbox[1].bootstrap, {"sec-read": {"assignments": {0: [1, 2]}}})
    args = _as(kafka_sandbox, "reader")
    assert main(["snapshot", *args, "-o", str(tmp_path / "s.json")]) == 0, capsys.readouterr().err
    journal = tmp_path / "journal.sqlite"
    plan = _plan(tmp_path / "plan.json", "sec-read")
    assert main(["execute", "--plan", str(plan), *args, "--journal", str(journal)]) == 5
    (line,) = _errors(capsys.readouterr().err)
    # Refused at its first write or at reading the freeze flag (when the control topic exists,
    # which it may not have READ on), always before any move, naming the ACL it lacks.
    assert line.startswith("ferry: error: not authorized: ")
    assert "needs ALTER on CLUSTER" in line or "needs READ on TOPIC kafka-ferry-control" in line
    _untouched(admin, "sec-read", journal)


def test_an_operator_without_config_rights_moves_nothing_it_cannot_throttle(
    kafka_sandbox: tuple[Sandbox, SandboxState],
    admin: KafkaPythonAdmin,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    create_topics(kafka_sandbox[1].bootstrap, {"sec-op": {"assignments": {0: [1, 2]}}})
    args = _as(kafka_sandbox, "operator")
    journal = tmp_path / "journal.sqlite"
    plan = _plan(tmp_path / "plan.json", "sec-op")
    code = main(["execute", "--plan", str(plan), *args, "--journal", str(journal), "--throttle", "1000000"])
    assert code == 5
    (line,) = _errors(capsys.readouterr().err)
    assert line.startswith("ferry: error: not authorized: altering configs of ")
    assert "needs ALTER_CONFIGS on CLUSTER" in line
    _untouched(admin, "sec-op", journal)
    # Unthrottled, the operator may reassign: that is what its ACLs are for. (A new journal: in the
    # first one this plan's request is interrupted, and the same plan would resume it, throttled.)
    fresh = tmp_path / "fresh.sqlite"
    assert main(["execute", "--plan", str(plan), *args, "--journal", str(fresh)]) == 0, (
        capsys.readouterr().err
    )
    wait_until(lambda: admin.describe_partitions(["sec-op"])[0].replicas == (1, 4), 30, "the move to end")
    assert admin.describe_partitions(["sec-op"])[0].tp == TopicPartition("sec-op", 0)


def test_freeze_without_rights_on_the_control_topic_is_one_clear_line(
    kafka_sandbox: tuple[Sandbox, SandboxState], capsys: pytest.CaptureFixture[str]
) -> None:
    args = _as(kafka_sandbox, "reader")
    assert main(["freeze", "--reason", "maintenance", *args]) == 5
    err = capsys.readouterr().err
    (line,) = _errors(err)
    assert "not authorized" in line and "kafka-ferry-control" in line
    assert "Traceback" not in err


def test_a_user_without_describe_configs_is_refused_rather_than_read_as_unset(
    kafka_sandbox: tuple[Sandbox, SandboxState],
    admin: KafkaPythonAdmin,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Kafka answers a refused config read per resource; read as "no configs", min.insync.replicas
    would be 1 (the check that refuses a move below it passed) and a throttle set before a run
    unset (deleted at its end, not restored)."""
    create_topics(kafka_sandbox[1].bootstrap, {"sec-view": {"assignments": {0: [1, 2]}}})
    args = _as(kafka_sandbox, "viewer")
    assert main(["snapshot", *args, "--timeout", "10", "-o", str(tmp_path / "s.json")]) == 5
    (line,) = _errors(capsys.readouterr().err)
    assert line.startswith("ferry: error: not authorized: describing ") and "DESCRIBE_CONFIGS" in line, line
    assert not (tmp_path / "s.json").exists()
    journal = tmp_path / "journal.sqlite"
    plan = _plan(tmp_path / "plan.json", "sec-view")
    code = main(["execute", "--plan", str(plan), *args, "--journal", str(journal), "--throttle", "1000000"])
    assert code == 5
    (line,) = _errors(capsys.readouterr().err)
    assert "not authorized" in line and "DESCRIBE_CONFIGS" in line, line
    _untouched(admin, "sec-view", journal)
