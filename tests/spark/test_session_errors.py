"""`ferry plan` on Spark: only ferry's own lines in its output; when Spark cannot run, a one-line
error, exit 7 (2 for a bad URL), and no files.

Each run is a subprocess: in this process a session may already run, and ferry would use it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest


def plan(out: Path, *args: str, debug: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ferry", *(["--debug"] if debug else [])]
    command += ["plan", "--example", "--output-dir", str(out), *args]
    environment = {**os.environ, "FERRY_LOG_DIR": str(out.parent / "logs"), **env}
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=120, check=False)


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("ferry: error: ")]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_master_fails_at_once_without_java_traces(tmp_path: Path) -> None:
    port = closed_port()
    done = plan(tmp_path / "out", "--spark-master", f"spark://127.0.0.1:{port}")
    assert done.returncode == 7, done.stderr
    assert errors(done.stderr) == [
        f"ferry: error: cannot reach the Spark master spark://127.0.0.1:{port}: "
        f"127.0.0.1:{port} Connection refused"
    ]
    assert "\tat " not in done.stderr and "Exception" not in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "env"), [(("--spark-master", "bogus"), {}), ((), {"SPARK_MASTER": "local[x]"})]
)
def test_a_master_that_is_no_url_is_a_usage_error(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    done = plan(tmp_path / "out", *args, **env)
    assert done.returncode == 2, done.stderr
    assert len(errors(done.stderr)) == 1 and "is not a Spark master URL" in done.stderr
    assert not (tmp_path / "out").exists()


def test_no_java_is_named(tmp_path: Path) -> None:
    done = plan(tmp_path / "out", JAVA_HOME=str(tmp_path / "no-jdk"))
    assert done.returncode == 7, done.stderr
    assert errors(done.stderr) == [
        f"ferry: error: Spark needs Java and finds none: JAVA_HOME={tmp_path}/no-jdk has no bin/java"
    ]
    assert not (tmp_path / "out").exists()


def test_a_jvm_that_does_not_start_is_a_spark_error(tmp_path: Path) -> None:
    done = plan(tmp_path / "out", SPARK_DRIVER_MEMORY="4x")
    assert done.returncode == 7, done.stderr
    assert errors(done.stderr) == [
        "ferry: error: Spark did not start (master local[2]): [JAVA_GATEWAY_EXITED] Java gateway process "
        "exited before sending its port number."
    ]
    [log] = (tmp_path / "logs").iterdir()
    assert done.stderr.splitlines()[-1] == (
        f"ferry: hint: the JVM said: Invalid maximum heap size: -Xmx4x; its whole output is in {log} "
        "(--debug shows it here)"
    )
    assert "internal error" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_only_ferrys_own_lines_reach_its_output_unless_debug(tmp_path: Path) -> None:
    done = plan(tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("Plan for example:")
    assert all(
        not line.startswith(("WARN", "Using Spark", "SLF4J", "log4j")) for line in done.stdout.splitlines()
    )
    [log] = (tmp_path / "logs").iterdir()
    jvm_said = [line for line in log.read_text().splitlines() if line.strip()]
    assert jvm_said, "the JVM printed nothing: nothing here shows that its output is kept away"
    loud = plan(tmp_path / "loud", debug=True)
    assert loud.returncode == 0, loud.stderr
    assert jvm_said[0] in loud.stderr.splitlines()
