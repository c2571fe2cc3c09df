"""Which log line or wait status explains a sandbox JVM that exited (the message CI shows for a
failed start), and that a JVM just launched is not taken for one that exited."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ferry.sandbox import process
from ferry.sandbox.node_logs import exit_reason
from ferry.sandbox.state import NodeState

pytestmark = pytest.mark.unit

_SHUTDOWN_NOISE = [
    "[2026-11-22 07:00:03,100] INFO [BrokerServer id=4] shutting down (kafka.server.BrokerServer)",
    "[2026-11-22 07:00:03,200] WARN [ReplicaFetcher replicaId=4] Error in response (kafka.server.X)",
    "java.io.IOException: Client was shutdown before response was read",
]


def _node(home: Path, server: list[str], console: list[str] | None = None) -> NodeState:
    (home / "server.log").write_text("\n".join(server) + "\n")
    if console is not None:
        (home / "console.log").write_text("\n".join(console) + "\n")
    return NodeState(4, "broker", 9092, "r1", None, str(home))


def test_the_fatal_line_and_its_exception_beat_the_shutdown_noise(tmp_path: Path) -> None:
    node = _node(
        tmp_path,
        [
            "[2026-11-22 07:00:01,000] INFO [BrokerServer id=4] Starting broker (kafka.server.BrokerServer)",
            "[2026-11-22 07:00:02,000] FATAL [BrokerServer id=4] Fatal error during broker startup. "
            "Prepare to shutdown (kafka.server.BrokerServer)",
            "org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:9092",
            *_SHUTDOWN_NOISE,
        ],
    )
    reason = exit_reason(node)
    assert reason.startswith(": [2026-11-22 07:00:02,000] FATAL")
    assert "failed to bind to 127.0.0.1:9092" in reason


def test_a_jvm_that_never_logged_is_explained_by_its_console(tmp_path: Path) -> None:
    console = ["Error occurred during initialization of VM", "Error: Could not reserve enough space"]
    assert exit_reason(_node(tmp_path, [], console)) == ": Error: Could not reserve enough space"


def test_without_fatal_the_last_error_line_is_given(tmp_path: Path) -> None:
    assert exit_reason(_node(tmp_path, _SHUTDOWN_NOISE, [])) == (
        ": java.io.IOException: Client was shutdown before response was read"
    )


def test_the_jvms_own_out_of_memory_exit_is_given(tmp_path: Path) -> None:
    console = ["Terminating due to java.lang.OutOfMemoryError: Java heap space"]
    assert exit_reason(_node(tmp_path, ["[..] INFO started"], console)) == f": {console[0]}"


def _ended(home: Path, script: str) -> NodeState:
    """A real child that ends as ``script`` makes it, started and waited for as the sandbox does."""
    pid = process.launch(["/bin/sh", "-c", script, str(home)], home / "console.log")
    node = NodeState(4, "broker", 9092, None, pid, str(home))
    assert process.wait_exit([pid], marker_of={pid: str(home)}, timeout_s=10)
    return node


def test_a_node_killed_by_a_signal_says_so_though_its_logs_are_clean(tmp_path: Path) -> None:
    assert exit_reason(_ended(tmp_path, "kill -9 $$")) == ": killed by SIGKILL"


def test_the_exit_code_comes_with_the_logged_cause(tmp_path: Path) -> None:
    node = _ended(tmp_path, "echo 'Error: Could not find or load main class kafka.Kafka'; exit 1")
    assert exit_reason(node) == ": exit code 1; Error: Could not find or load main class kafka.Kafka"


def test_a_node_reads_as_running_the_moment_it_is_launched(tmp_path: Path) -> None:
    # posix_spawn can return before the child's exec: its command line is empty for a few ms.
    for _ in range(20):
        pid = process.launch(["/bin/sh", "-c", "sleep 0.02", str(tmp_path)], tmp_path / "console.log")
        assert process.is_running(pid, str(tmp_path))
        os.waitpid(pid, 0)


def test_clean_logs_give_no_reason(tmp_path: Path) -> None:
    assert exit_reason(_node(tmp_path, ["[..] INFO started"])) == ""
    assert exit_reason(NodeState(4, "broker", 9092, None, None, str(tmp_path / "gone"))) == ""
