"""``ferry snapshot`` end to end: exit codes and one-line errors."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from kafka_helpers import create_topics

from ferry.cli.main import main
from ferry.sandbox import Sandbox, SandboxState
from ferry.sandbox.layout import SASL_PASSWORD, SASL_USER


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("ferry: error:")]


def test_snapshot_writes_valid_v1_file(
    bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topics(bootstrap, {"cli-topic": {"num_partitions": 3, "replication_factor": 2}})
    out = tmp_path / "snap.json"
    # A follower creates its log a moment after the topic exists; until then DescribeLogDirs has no
    # size for it. Wait (bounded) for the topic to exist on every replica before asserting. The
    # broker answering the metadata request may not know the new topic yet either (KRaft brokers
    # apply metadata a few ms apart): exit 4, "does not exist", is retried too.
    deadline = time.monotonic() + 30
    while True:
        code = main(["snapshot", "--bootstrap-server", bootstrap, "--topics", "cli-topic", "-o", str(out)])
        err = capsys.readouterr().err
        if code == 4 and "does not exist" in err and time.monotonic() < deadline:
            time.sleep(0.5)
            continue
        assert code == 0, err
        doc = json.loads(out.read_text())
        complete = all(len(p.get("replica_sizes", {})) == len(p["replicas"]) for p in doc["partitions"])
        if complete or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert doc["version"] == 1
    assert [b["id"] for b in doc["brokers"]] == [1, 2, 3, 4]
    assert [(p["topic"], p["partition"]) for p in doc["partitions"]] == [
        ("cli-topic", 0),
        ("cli-topic", 1),
        ("cli-topic", 2),
    ]
    for p in doc["partitions"]:
        assert len(p["replicas"]) == 2
        assert p["leader"] in p["replicas"]
        assert sorted(p["isr"]) == sorted(p["replicas"])
        assert set(p["replica_sizes"]) == {str(r) for r in p["replicas"]}
        assert "adding_replicas" not in p
    assert doc["min_insync_replicas"] == {"cli-topic": 1}


@pytest.mark.parametrize("command", ["snapshot", "plan"])
def test_unreachable_bootstrap_exits_5_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    out = tmp_path / "out"
    target = ["-o", str(out)] if command == "snapshot" else ["--output-dir", str(out)]
    args = [command, "--bootstrap-server", "127.0.0.1:1", "--timeout", "2", *target]
    assert main(args) == 5
    err = capsys.readouterr().err
    assert _error_lines(err) == ["ferry: error: cannot reach bootstrap server 127.0.0.1:1 within 2 s"]
    assert "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ("security.protocol=BOGUS\n", "security.protocol: 'BOGUS' is not one of"),
        ("ssl.truststore.location=/x.jks\n", "ssl.truststore.type JKS is not supported"),
        ("sasl.mechanism=PLAIN\nsecurity.protocol=SASL_PLAINTEXT\n", "needs username and password"),
        ("a=b\\", "continued line"),
    ],
)
def test_bad_command_config_exits_3_before_connecting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str, fragment: str
) -> None:
    cfg = tmp_path / "client.properties"
    cfg.write_text(config)
    # The bootstrap is unreachable on purpose: a bad file must fail before any connection.
    args = ["snapshot", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(cfg)]
    assert main([*args, "-o", str(tmp_path / "s.json")]) == 3
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1
    assert fragment in lines[0]
    assert str(cfg) in lines[0]


@pytest.mark.parametrize("command", ["snapshot", "plan"])
def test_missing_command_config_exits_3_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    missing = tmp_path / "nowhere.properties"
    out = tmp_path / "out"
    target = ["-o", str(out)] if command == "snapshot" else ["--output-dir", str(out)]
    args = [command, "--bootstrap-server", "127.0.0.1:1", "--command-config", str(missing), *target]
    assert main(args) == 3
    err = capsys.readouterr().err
    assert _error_lines(err) == [
        f"ferry: error: {missing}: cannot read command config (No such file or directory)"
    ]
    assert "Traceback" not in err
    assert not out.exists()


def _sasl_config(path: Path, password: str) -> Path:
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{SASL_USER}" password="{password}";\n'
    )
    return path


def test_wrong_sasl_password_exits_5_with_one_line_and_writes_nothing(
    kafka_sandbox: tuple[Sandbox, SandboxState], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sasl = kafka_sandbox[1].sasl_bootstrap
    assert sasl is not None
    cfg = _sasl_config(tmp_path / "wrong.properties", "not-the-password")
    out = tmp_path / "s.json"
    args = ["snapshot", "--bootstrap-server", sasl, "--command-config", str(cfg), "--timeout", "10"]
    assert main([*args, "-o", str(out)]) == 5
    err = capsys.readouterr().err
    lines = _error_lines(err)
    assert len(lines) == 1, err
    assert "authentication failed" in lines[0]
    assert "Traceback" not in err
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [cfg]


def test_right_sasl_password_takes_the_snapshot(
    kafka_sandbox: tuple[Sandbox, SandboxState], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox, state = kafka_sandbox
    assert state.sasl_bootstrap is not None
    out = tmp_path / "s.json"
    # The file the sandbox writes for people trying ferry, and one written by hand, both work.
    for cfg in (sandbox.sasl_config_file, _sasl_config(tmp_path / "right.properties", SASL_PASSWORD)):
        args = ["snapshot", "--bootstrap-server", state.sasl_bootstrap, "--command-config", str(cfg)]
        assert main([*args, "-o", str(out)]) == 0, capsys.readouterr().err
        assert [b["id"] for b in json.loads(out.read_text())["brokers"]] == [1, 2, 3, 4]


def test_unknown_key_warns_and_still_works(
    bootstrap: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = tmp_path / "client.properties"
    cfg.write_text("security.protocol=PLAINTEXT\nlinger.ms=5\n")
    out = tmp_path / "snap.json"
    args = ["snapshot", "--bootstrap-server", bootstrap, "--command-config", str(cfg)]
    assert main([*args, "-o", str(out)]) == 0
    assert "ignoring unknown client property 'linger.ms'" in caplog.text
    assert json.loads(out.read_text())["version"] == 1


def test_sasl_against_plaintext_listener_is_a_kafka_error(
    bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "client.properties"
    cfg.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="u" password="p";\n'
    )
    args = ["snapshot", "--bootstrap-server", bootstrap, "--command-config", str(cfg)]
    assert main([*args, "--timeout", "3", "-o", str(tmp_path / "s.json")]) == 5
    assert len(_error_lines(capsys.readouterr().err)) == 1
