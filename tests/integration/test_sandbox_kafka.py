"""``ferry sandbox`` against the session cluster: status, kill and restart of a broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_helpers import create_topics, wait_until

from ferry.cli.main import main
from ferry.kafka.client import KafkaPythonAdmin
from ferry.sandbox import Sandbox, SandboxState


def test_status_lists_every_node_running(
    kafka_sandbox: tuple[Sandbox, SandboxState], capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox, state = kafka_sandbox
    assert main(["sandbox", "status", "--dir", str(sandbox.directory)]) == 0
    out = capsys.readouterr().out
    assert state.bootstrap in out
    assert out.count("running") == 5


def test_kill_and_restart_a_broker(
    kafka_sandbox: tuple[Sandbox, SandboxState], bootstrap: str, admin: KafkaPythonAdmin
) -> None:
    sandbox, _ = kafka_sandbox
    directory = ["--dir", str(sandbox.directory)]
    create_topics(bootstrap, {"kill-topic": {"assignments": {0: [4, 1]}}})
    try:
        assert main(["sandbox", "kill", "4", *directory]) == 0
        assert 4 not in {b.id for b in admin.describe_brokers()}
        wait_until(
            lambda: admin.describe_partitions(["kill-topic"])[0].isr == (1,),
            30,
            "broker 4 to leave the ISR",
        )
    finally:
        assert main(["sandbox", "restart", "4", *directory]) == 0
    assert 4 in {b.id for b in admin.describe_brokers()}
    # The old JVM's log is set aside whole, so the new one's log starts at its own start (how far
    # the new JVM has written by now varies: only the old lines' absence is certain).
    home = sandbox.state().node(4).log_file.parent
    previous = (home / "server.log.previous").read_text()
    assert "Kafka version" in previous
    assert "shutting down" in previous.lower() or "shut down" in previous.lower()
    assert previous.splitlines()[0] not in (home / "server.log").read_text()
    wait_until(
        lambda: set(admin.describe_partitions(["kill-topic"])[0].isr or ()) == {1, 4},
        60,
        "broker 4 to rejoin the ISR",
    )


def test_unknown_node_is_a_usage_error(kafka_sandbox: tuple[Sandbox, SandboxState]) -> None:
    sandbox, _ = kafka_sandbox
    assert main(["sandbox", "kill", "99", "--dir", str(sandbox.directory)]) == 2


def test_second_up_in_same_dir_is_refused(
    kafka_sandbox: tuple[Sandbox, SandboxState], tmp_path: Path
) -> None:
    sandbox, _ = kafka_sandbox
    assert main(["sandbox", "up", "--dir", str(sandbox.directory)]) == 4
