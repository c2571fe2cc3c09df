"""ferry over TLS: the sandbox's SSL listener (``ferry sandbox up --ssl``), PEM trust from
``--command-config``, and the refusals when the trust or the protocol is wrong."""

from __future__ import annotations

import gc
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferry.cli.main import main
from ferry.kafka.client import ready_brokers
from ferry.sandbox import ClusterSpec, Sandbox, SandboxState, ensure_jars
from ferry.sandbox.security import ca_command


@pytest.fixture(scope="module")
def ssl_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, SandboxState]]:
    """A 2-broker sandbox with an SSL listener; stopped and wiped when the module ends."""
    sandbox = Sandbox(tmp_path_factory.mktemp("ssl-sandbox"))
    try:
        yield (
            sandbox,
            sandbox.up(
                ClusterSpec(brokers=2, racks=2, ssl=True), ensure_jars(), ready_brokers, timeout_s=120
            ),
        )
    finally:
        sandbox.down()


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("ferry: error: ")]


def test_a_snapshot_over_tls_trusting_the_sandbox_ca(
    ssl_sandbox: tuple[Sandbox, SandboxState], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox, state = ssl_sandbox
    assert state.ssl_bootstrap is not None
    out = tmp_path / "s.json"
    args = [
        "snapshot",
        "--bootstrap-server",
        state.ssl_bootstrap,
        "--command-config",
        str(sandbox.ssl_config_file),
    ]
    assert main([*args, "-o", str(out)]) == 0, capsys.readouterr().err
    assert [b["id"] for b in json.loads(out.read_text())["brokers"]] == [1, 2]


# kafka-python leaves the sockets of a failed TLS handshake to the garbage collector; ferry never
# sees them, so their ResourceWarning says nothing about ferry.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_another_ca_or_no_tls_is_exit_5_with_one_line(
    ssl_sandbox: tuple[Sandbox, SandboxState], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox, state = ssl_sandbox
    assert state.ssl_bootstrap is not None
    other = tmp_path / "other-ca.pem"
    subprocess.run(
        ca_command(tmp_path / "other.key", other, "/CN=someone else", 1),
        check=True,
        capture_output=True,
        timeout=60,
    )
    wrong = tmp_path / "wrong-ca.properties"
    wrong.write_text(
        sandbox.ssl_config_file.read_text().replace(str(sandbox.directory / "ca.pem"), str(other))
    )
    plain = tmp_path / "plain.properties"
    plain.write_text("security.protocol=PLAINTEXT\n")
    for config in (wrong, plain):
        out = tmp_path / "s.json"
        args = ["snapshot", "--bootstrap-server", state.ssl_bootstrap, "--command-config", str(config)]
        assert main([*args, "--timeout", "8", "-o", str(out)]) == 5
        err = capsys.readouterr().err
        assert len(_errors(err)) == 1, err
        assert "Traceback" not in err
        assert not out.exists()
    # Collect kafka-python's leftover sockets here, where their warnings are ignored, rather than
    # in whichever test runs next.
    gc.collect()
