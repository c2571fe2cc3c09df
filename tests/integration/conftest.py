"""A real 1 + 4 broker KRaft cluster (two racks) for the whole test session.

Its brokers also listen on SASL_PLAINTEXT (PLAIN, one static user): authentication tests use the
same cluster instead of starting a second one.

The jars come through the same code path as ``ferry sandbox up`` (Maven, cached in
``$FERRY_KAFKA_HOME`` or ~/.cache/kafka-ferry). The cluster lives in a pytest tmp dir and is always
stopped, whether the tests pass, fail or the start-up itself fails.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.sandbox import ClusterSpec, Sandbox, SandboxState, ensure_jars

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test in this folder ``integration`` and ``kafka``."""
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.kafka)


@pytest.fixture(scope="session")
def kafka_sandbox(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Sandbox, SandboxState]]:
    """The running sandbox and its state; stopped and wiped at the end of the session."""
    lib = ensure_jars()
    sandbox = Sandbox(tmp_path_factory.mktemp("kafka-sandbox"))
    try:
        started = time.monotonic()
        state = sandbox.up(ClusterSpec(brokers=4, racks=2, sasl=True), lib, ready_brokers, timeout_s=120)
        print(f"\nkafka sandbox up in {time.monotonic() - started:.1f} s: {state.bootstrap}")
        yield sandbox, state
    finally:
        sandbox.down()


@pytest.fixture(scope="session")
def bootstrap(kafka_sandbox: tuple[Sandbox, SandboxState]) -> str:
    """Bootstrap address of the session's cluster."""
    return kafka_sandbox[1].bootstrap


@pytest.fixture
def admin(bootstrap: str) -> Iterator[KafkaPythonAdmin]:
    """A ferry ClusterAdmin on the session's cluster."""
    with KafkaPythonAdmin(bootstrap, timeout_s=15) as client:
        yield client
