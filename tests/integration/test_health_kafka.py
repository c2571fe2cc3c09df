"""Reading the ISRs on the real cluster: page by page, and never held by brokers that hang."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from kafka_helpers import create_topics

from ferry.kafka.client import KafkaPythonAdmin, health
from ferry.model import TopicPartition
from ferry.sandbox import Sandbox, SandboxState

STOPPED_S = 4.0
"""How long two brokers stay stopped: well under Kafka's 9-second broker session timeout, so the
controller does not fence them and the cluster is as it was for the tests after this one."""


def test_the_isrs_are_read_page_by_page(
    bootstrap: str, admin: KafkaPythonAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_topics(bootstrap, {"health-pages": {"assignments": {0: [1, 2], 1: [2, 3], 2: [3, 4]}}})
    monkeypatch.setattr(health, "PAGE", 1)  # one partition per answer: three pages
    found = admin.describe_health(["health-pages"])
    assert [(h.tp, h.replicas) for h in found] == [
        (TopicPartition("health-pages", 0), (1, 2)),
        (TopicPartition("health-pages", 1), (2, 3)),
        (TopicPartition("health-pages", 2), (3, 4)),
    ]
    assert all(sorted(h.isr) == sorted(h.replicas) for h in found)


def test_two_stopped_brokers_do_not_hold_the_isr_reading(
    kafka_sandbox: tuple[Sandbox, SandboxState], admin: KafkaPythonAdmin
) -> None:
    """kafka-python asks one broker at random; a stopped one keeps its connection open and would
    hold the reading until it is back. Asked of three brokers at once, one of them answers."""
    sandbox, _ = kafka_sandbox
    admin.describe_health()  # connected to the brokers before any stops
    pids = [pid for b in (1, 2) if (pid := sandbox.state().node(b).pid) is not None]
    assert len(pids) == 2

    def resume() -> None:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)

    timer = threading.Timer(STOPPED_S, resume)
    took: list[float] = []
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    timer.start()
    try:
        for _ in range(4):
            started = time.monotonic()
            assert admin.describe_health()
            took.append(time.monotonic() - started)
    finally:
        timer.cancel()
        resume()
    assert max(took) < 1.5, took  # a reading held by a stopped broker takes until it is back
